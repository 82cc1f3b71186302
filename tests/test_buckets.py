"""Bucket select / pad / mask / trim, and a bucketed graph whose real region matches eager."""

import numpy as np
import pytest
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.errors import BucketOverflowError
from conversion.core.export.program import GraphSpec, bucketed_functions
from conversion.core.host.buckets import (
    Bucket,
    BucketTable,
    length_mask,
    pad_to,
    padding_waste,
    trim,
)
from conversion.core.runtime.session import Session


def test_select_smallest_that_fits():
    table = BucketTable.one_dim("T", [128, 32, 64])
    assert [b["T"] for b in table] == [32, 64, 128]
    assert table.select(T=1)["T"] == 32
    assert table.select(T=32)["T"] == 32
    assert table.select(T=33)["T"] == 64
    assert table.select(T=128)["T"] == 128


def test_two_dim_buckets_pick_smallest_volume():
    table = BucketTable([{"T": 32, "L": 128}, {"T": 128, "L": 512}, {"T": 64, "L": 256}])
    assert table.select(T=20, L=200) == Bucket(T=64, L=256)
    assert table.select(T=100, L=10) == Bucket(T=128, L=512)
    assert Bucket(T=64, L=256).label == "L256_T64"


def test_overflow_names_the_limit():
    table = BucketTable([{"T": 32, "L": 128}, {"T": 128, "L": 512}])
    with pytest.raises(BucketOverflowError, match=r"T = 200 > 128.*split"):
        table.select(T=200, L=10)
    with pytest.raises(BucketOverflowError, match=r"L = 600 > 512"):
        table.select(T=1, L=600)


def test_pad_mask_trim_roundtrip():
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    p = pad_to(x, 8, axis=1, value=-1)
    assert p.shape == (2, 8) and (p[:, 5:] == -1).all()
    np.testing.assert_array_equal(trim(p, 5, axis=1), x)
    np.testing.assert_array_equal(length_mask(3, 5), [1, 1, 1, 0, 0])
    with pytest.raises(BucketOverflowError):
        pad_to(x, 4, axis=1)


def test_padding_waste():
    table = BucketTable.one_dim("T", [4, 8])
    assert padding_waste([{"T": 4}, {"T": 8}], table) == 0.0
    assert padding_waste([{"T": 2}], table) == 0.5


class MaskedMeanProj(torch.nn.Module):
    """Mean over the real frames only, then a projection: the frame-masked-norm pattern."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 3)

    def forward(self, x, mask):
        m = mask.unsqueeze(-1)
        mean = (x * m).sum(1) / m.sum(1)
        return self.proj(x - mean.unsqueeze(1)) * m


def test_bucketed_graph_real_region_matches_unpadded_eager(tmp_path):
    torch.manual_seed(0)
    module = MaskedMeanProj().eval()
    table = BucketTable.one_dim("T", [8, 16])
    fns = bucketed_functions(
        "main",
        module,
        table,
        lambda b: {"x": torch.zeros(1, b["T"], 6), "mask": torch.zeros(1, b["T"])},
        ["y"],
    )
    with BundleWriter(tmp_path / "b", "test") as bw:
        bw.add_graph(GraphSpec("g", fns, meta={"buckets": table.to_json()}))
    with Session(tmp_path / "b") as s:
        for real in (3, 8, 11):
            x = np.random.default_rng(real).standard_normal((1, real, 6)).astype(np.float32)
            b = table.select(T=real)
            y = s.run(
                "g",
                f"main_{b.label}",
                {
                    "x": pad_to(x, b["T"], axis=1),
                    "mask": length_mask(real, b["T"])[None],
                },
            )["y"]
            ref = module(torch.from_numpy(x), torch.ones(1, real)).numpy()
            np.testing.assert_allclose(trim(y, real, axis=1), ref, atol=1e-5)
            assert (y[:, real:] == 0).all()
        assert s.manifest.function("g", "main_T16")["bucket"] == {"T": 16}
