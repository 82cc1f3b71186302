"""Tests for the oracles package: fixture format, recorder, draw capture and replay."""

from __future__ import annotations

import importlib.metadata
import json
import re

import numpy as np
import pytest
import torch
from torch import nn

from oracles import (
    Fixture,
    FixtureError,
    Recorder,
    ReplayError,
    capture_random_draws,
    compare_to_fixture,
    load_fixture,
    replay_random_draws,
    save_fixture,
)

# ---------------------------------------------------------------- fixture format


def _sample_fixture() -> tuple[Fixture, dict[str, np.ndarray]]:
    """A fixture with every array kind, and the arrays we expect back (built separately)."""
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((2, 3)).astype(np.float32)
    i64 = np.arange(7, dtype=np.int64)
    mask = np.array([[True, False], [False, True]])
    f16 = rng.standard_normal(5).astype(np.float16)
    bf16_values = [1.5, -2.25, 2.0**-20 * 3, 65280.0]  # all exactly representable in bfloat16
    bf16 = torch.tensor(bf16_values, dtype=torch.bfloat16)
    fx = Fixture(
        model="toy",
        seeds={"torch": 7},
        inputs={"ids": torch.from_numpy(i64.copy()), "speed": 1.25, "voice": "af_x"},
        intermediates={"decoder.conv_post": f32.copy(), "mask": mask.copy()},
        draws={"randn/0": torch.from_numpy(f16.copy()), "noise/0": np.float32(0.5)},
        outputs={"audio": bf16, "empty": np.zeros((0, 4), np.float32)},
        meta={"note": "hello"},
    )
    expected = {
        "inputs/ids": i64,
        "intermediates/decoder.conv_post": f32,
        "intermediates/mask": mask,
        "draws/randn/0": f16,
        "outputs/audio": np.array(bf16_values, dtype=np.float32),
        "outputs/empty": np.zeros((0, 4), np.float32),
    }
    return fx, expected


def test_roundtrip_keeps_every_array_kind(tmp_path):
    fx, expected = _sample_fixture()
    manifest_path = save_fixture(fx, tmp_path / "toy", extra_packages=["no-such-package-xyz"])
    assert manifest_path == tmp_path / "toy.json"
    assert (tmp_path / "toy.npz").is_file()

    back = load_fixture(tmp_path / "toy")
    got = back.arrays()
    assert sorted(got) == sorted(expected)
    for key, want in expected.items():
        assert got[key].dtype == want.dtype, key
        assert got[key].shape == want.shape, key
        np.testing.assert_array_equal(got[key], want, err_msg=key)

    # scalars travel through the manifest and come back into their group
    assert back.inputs["speed"] == 1.25 and back.inputs["voice"] == "af_x"
    assert back.draws["noise/0"] == 0.5
    assert back.meta["note"] == "hello" and back.seeds == {"torch": 7}
    assert "bfloat16" in back.meta["dtype_notes"]["outputs/audio"]
    assert back.packages["torch"] == importlib.metadata.version("torch")
    assert back.packages["no-such-package-xyz"] is None
    assert "coreai-core" in back.packages

    manifest = json.loads(manifest_path.read_text())
    assert manifest["format"] == "voxport-fixture/1"
    assert manifest["inputs"] == ["inputs/ids"]
    assert manifest["draws"] == ["draws/randn/0"]
    assert manifest["arrays"]["outputs/audio"]["dtype"] == "float32"


def test_load_accepts_either_file_and_a_directory(tmp_path):
    fx, expected = _sample_fixture()
    save_fixture(fx, tmp_path / "a.v1.json")  # dotted stem survives
    assert (tmp_path / "a.v1.npz").is_file()
    for path in (tmp_path / "a.v1", tmp_path / "a.v1.npz"):
        np.testing.assert_array_equal(
            load_fixture(path).intermediates["mask"], expected["intermediates/mask"]
        )
    save_fixture(fx, tmp_path)
    assert (tmp_path / "fixture.json").is_file()
    assert load_fixture(tmp_path).model == "toy"


def test_tampered_array_is_refused_by_name(tmp_path):
    fx, _ = _sample_fixture()
    save_fixture(fx, tmp_path / "toy")
    npz_path = tmp_path / "toy.npz"
    with np.load(npz_path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["intermediates/decoder.conv_post"][1, 2] += 1e-3  # same shape and dtype
    np.savez(npz_path, **arrays)
    with pytest.raises(FixtureError, match=re.escape("intermediates/decoder.conv_post")):
        load_fixture(tmp_path / "toy")


def test_missing_files_and_bad_format_are_clear(tmp_path):
    with pytest.raises(FixtureError, match="manifest missing"):
        load_fixture(tmp_path / "nothing")
    fx, _ = _sample_fixture()
    save_fixture(fx, tmp_path / "toy")
    manifest = json.loads((tmp_path / "toy.json").read_text())
    manifest["format"] = "other/9"
    (tmp_path / "toy.json").write_text(json.dumps(manifest))
    with pytest.raises(FixtureError, match="other/9"):
        load_fixture(tmp_path / "toy")
    (tmp_path / "toy.npz").unlink()
    with pytest.raises(FixtureError, match="toy.npz"):
        load_fixture(tmp_path / "toy")


def test_dropped_array_is_refused_by_name(tmp_path):
    fx, _ = _sample_fixture()
    save_fixture(fx, tmp_path / "toy")
    with np.load(tmp_path / "toy.npz") as npz:
        arrays = {k: npz[k] for k in npz.files if k != "inputs/ids"}
    np.savez(tmp_path / "toy.npz", **arrays)
    with pytest.raises(FixtureError, match=re.escape("'inputs/ids'")):
        load_fixture(tmp_path / "toy")


def test_crash_mid_save_leaves_nothing_behind(tmp_path, monkeypatch):
    fx, _ = _sample_fixture()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(OSError, match="disk full"):
        save_fixture(fx, tmp_path / "toy")
    assert list(tmp_path.iterdir()) == []


def test_crash_mid_resave_keeps_previous_fixture(tmp_path, monkeypatch):
    fx, expected = _sample_fixture()
    save_fixture(fx, tmp_path / "toy")
    before = sorted(p.name for p in tmp_path.iterdir())
    fx.intermediates["mask"] = ~fx.intermediates["mask"]
    monkeypatch.setattr(np, "savez", lambda *a, **k: (_ for _ in ()).throw(OSError("died")))
    with pytest.raises(OSError):
        save_fixture(fx, tmp_path / "toy")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    monkeypatch.undo()
    back = load_fixture(tmp_path / "toy")
    np.testing.assert_array_equal(back.intermediates["mask"], expected["intermediates/mask"])


def test_meta_that_is_not_json_is_refused_before_writing(tmp_path):
    fx, _ = _sample_fixture()
    fx.meta["bad"] = object()
    with pytest.raises(FixtureError, match="JSON"):
        save_fixture(fx, tmp_path / "toy")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- recorder


class _Block(nn.Module):
    """Uses `act` twice, so the recorder must tell the two calls apart."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(x)) + self.act(x)


def _toy_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), _Block(), nn.Linear(4, 2))


def test_recorder_nested_and_repeated_modules():
    model = _toy_model()
    x = torch.randn(5, 3)
    with torch.no_grad(), Recorder(model, paths=["0", "1.lin"], patterns=["1.a*", "2"]) as rec:
        y = model(x)

    # the same values computed by hand from the weights
    w0, b0 = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    wl, bl = model[1].lin.weight.detach().numpy(), model[1].lin.bias.detach().numpy()
    xn = x.numpy().astype(np.float64)
    h0 = xn @ w0.T + b0
    lin = h0 @ wl.T + bl
    got = rec.intermediates
    assert sorted(got) == ["0", "1.act@0", "1.act@1", "1.lin", "2"]
    np.testing.assert_allclose(got["0"], h0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["1.lin"], lin, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["1.act@0"], np.tanh(lin), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["1.act@1"], np.tanh(h0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["2"], y.numpy())
    assert rec.call_counts() == {"0": 1, "1.lin": 1, "1.act": 2, "2": 1}


def test_recorder_copies_and_flattens_structured_outputs():
    torch.manual_seed(1)
    lstm = nn.LSTM(3, 4, batch_first=True)
    model = nn.Sequential()
    model.add_module("lstm", lstm)
    x = torch.randn(2, 5, 3)
    with torch.no_grad():
        want_out, (want_h, want_c) = lstm(x)  # run directly, no hooks
        with Recorder(model, paths=["lstm"]) as rec:
            out, (h, c) = lstm(x)
            out.add_(100.0)  # a later in-place edit must not reach the record
    got = rec.intermediates
    assert sorted(got) == ["lstm.0", "lstm.1.0", "lstm.1.1"]
    np.testing.assert_array_equal(got["lstm.0"], want_out.numpy())
    np.testing.assert_array_equal(got["lstm.1.0"], want_h.numpy())
    np.testing.assert_array_equal(got["lstm.1.1"], want_c.numpy())


def test_recorder_dict_output_and_bf16_note():
    class DictOut(nn.Module):
        def forward(self, x: torch.Tensor) -> dict:
            return {"double": x * 2, "half": (x / 2).to(torch.bfloat16), "skip": None}

    model = nn.Sequential(DictOut())
    x = torch.tensor([1.0, 3.0])
    with Recorder(model, paths=["0"]) as rec:
        model(x)
    got = rec.intermediates
    np.testing.assert_array_equal(got["0.double"], [2.0, 6.0])
    np.testing.assert_array_equal(got["0.half"], np.array([0.5, 1.5], np.float32))
    assert got["0.half"].dtype == np.float32
    assert "bfloat16" in rec.dtype_notes["intermediates/0.half"]


def test_recorder_removes_hooks_even_on_error():
    model = _toy_model()

    def hook_count() -> int:
        return sum(len(m._forward_hooks) for m in model.modules())

    with pytest.raises(RuntimeError, match="inside"):
        with Recorder(model, patterns=["*"]) as rec:
            assert hook_count() == 5  # 0, 1, 1.lin, 1.act, 2 (root excluded)
            model(torch.randn(1, 3))
            raise RuntimeError("inside")
    assert hook_count() == 0
    assert "1.act@1" in rec.intermediates


def test_unknown_path_lists_close_matches():
    model = _toy_model()
    with pytest.raises(ValueError, match=re.escape("1.lin")) as err:
        Recorder(model, paths=["1.lni"])
    assert "1.lni" in str(err.value)
    with pytest.raises(ValueError, match="matches no module"):
        Recorder(model, patterns=["decoder.*"])


def test_record_draw_counts_per_name():
    rec = Recorder(_toy_model())
    a, b, c = torch.zeros(2), torch.ones(3), torch.full((1,), 2.0)
    assert [rec.record_draw("noise", a), rec.record_draw("u", b), rec.record_draw("noise", c)] == [
        "noise/0",
        "u/0",
        "noise/1",
    ]
    a.add_(5)  # the record is a copy
    np.testing.assert_array_equal(rec.draws["noise/0"], [0.0, 0.0])
    np.testing.assert_array_equal(rec.draws["noise/1"], [2.0])


# ---------------------------------------------------------------- capture and replay


class _Noisy(nn.Module):
    """Draws the way vocoders do: noise shaped like its input, plus a uniform phase."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = torch.randn_like(x)
        phase = torch.rand(x.shape[0], 1)
        return self.lin(x + 0.3 * noise) * torch.sin(6.28 * phase)


def _noisy_setup() -> tuple[_Noisy, torch.Tensor]:
    torch.manual_seed(0)
    return _Noisy(), torch.randn(3, 4)


def test_capture_records_the_values_torch_would_draw():
    model, x = _noisy_setup()
    originals = (torch.randn_like, torch.rand, torch.randn)
    torch.manual_seed(11)
    with torch.no_grad(), capture_random_draws() as draws:
        model(x)
    assert (torch.randn_like, torch.rand, torch.randn) == originals
    assert list(draws) == ["randn_like/0", "rand/0"]
    torch.manual_seed(11)  # the same draws, taken directly
    np.testing.assert_array_equal(draws["randn_like/0"], torch.randn_like(x).numpy())
    np.testing.assert_array_equal(draws["rand/0"], torch.rand(3, 1).numpy())


def test_capture_restores_torch_on_error():
    original = torch.randn
    with pytest.raises(KeyError):
        with capture_random_draws():
            assert torch.randn is not original
            raise KeyError("x")
    assert torch.randn is original


def test_replay_is_bit_identical_and_fresh_run_differs(tmp_path):
    model, x = _noisy_setup()
    torch.manual_seed(11)
    with torch.no_grad(), capture_random_draws() as draws:
        first = model(x)

    # through a fixture on disk, as an oracle and a gate would use it
    save_fixture(Fixture(model="noisy", draws=draws, outputs={"y": first}), tmp_path / "n")
    fx = load_fixture(tmp_path / "n")

    torch.manual_seed(999)
    with torch.no_grad(), replay_random_draws(fx.draws) as used:
        replayed = model(x)
    assert torch.equal(replayed, first)
    assert used["randn_like"] == 1 and used["rand"] == 1

    torch.manual_seed(999)
    with torch.no_grad():
        fresh = model(x)
    assert not torch.allclose(fresh, first)

    assert compare_to_fixture(fx, {"outputs/y": replayed}) == {"outputs/y": 0.0}


def test_replay_accepts_namespaced_keys_and_returns_requested_dtype():
    draws = {"draws/randn/0": np.array([[1.0, 2.0]], np.float32), "draws/randint/0": np.array([4])}
    with replay_random_draws(draws):
        a = torch.randn(1, 2, dtype=torch.float64)
        b = torch.randint(0, 10, (1,))
    assert a.dtype == torch.float64 and a.tolist() == [[1.0, 2.0]]
    assert b.dtype == torch.int64 and b.tolist() == [4]


def test_replay_shape_mismatch_names_draw_and_shapes():
    model, x = _noisy_setup()
    with torch.no_grad(), capture_random_draws() as draws:
        model(x)
    wider = torch.randn(3, 5)
    original = torch.randn_like
    model.lin = nn.Linear(5, 4)
    with pytest.raises(ReplayError, match=re.escape("randn_like/0")) as err:
        with torch.no_grad(), replay_random_draws(draws):
            model(wider)
    assert "(3, 4)" in str(err.value) and "(3, 5)" in str(err.value)
    assert torch.randn_like is original  # restored after the error


def test_replay_strict_about_leftover_and_missing_draws():
    draws = {"rand/0": np.zeros(2, np.float32), "rand/1": np.ones(2, np.float32)}
    with pytest.raises(ReplayError, match="rand: 1 of 2 used"):
        with replay_random_draws(draws):
            torch.rand(2)
    with replay_random_draws(draws, strict=False):
        torch.rand(2)
    with pytest.raises(ReplayError, match="no recorded draw left"):
        with replay_random_draws({}):
            torch.randn(2)


def test_compare_to_fixture_max_abs_per_common_key():
    a = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    fx = Fixture(model="m", intermediates={"dec.out": a}, outputs={"audio": a, "n": np.arange(3)})
    b = a.copy()
    b[1, 1] -= 0.25
    got = compare_to_fixture(
        fx,
        {
            "dec.out": torch.from_numpy(b),  # bare path -> intermediates
            "outputs/audio": a,
            "outputs/n": np.arange(4),  # shape mismatch
            "outputs/unknown": a,  # not in the fixture: skipped
        },
    )
    assert set(got) == {"intermediates/dec.out", "outputs/audio", "outputs/n"}
    assert got["intermediates/dec.out"] == pytest.approx(0.25)
    assert got["outputs/audio"] == 0.0
    assert got["outputs/n"] == float("inf")
