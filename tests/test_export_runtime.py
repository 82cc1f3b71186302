"""Small graphs through the real converter and runtime, against eager torch."""

import numpy as np
import pytest
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.errors import InputSpecError, UserError
from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.runtime.session import Session
from conversion.selftest import graphs as sg
from gates.metrics import psnr
from tests.roundtrip import run_through_coreai

PROMPT = [3, 14, 15, 9, 2, 6, 5, 35]


def _eager(module, inputs):
    return module.eval()(*inputs.values()).numpy()


def test_conv_elu_fp32_parity():
    spec, inputs = sg.conv_graph(seed=1)
    module = spec.functions[0].module
    got = run_through_coreai(module, inputs, ["y"])["y"]
    assert np.abs(got - _eager(module, inputs)).max() <= 1e-5


def test_lstm_and_norms_fp32_parity():
    class Mixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, batch_first=True, bidirectional=True)
            self.norm = torch.nn.InstanceNorm1d(32, affine=True)
            self.pad = torch.nn.ReflectionPad1d(2)

        def forward(self, x):
            h, _ = self.lstm(x)
            return self.pad(self.norm(h.transpose(1, 2)))

    torch.manual_seed(0)
    module = Mixed().eval()
    inputs = {"x": torch.randn(1, 12, 8)}
    got = run_through_coreai(module, inputs, ["y"])["y"]
    assert np.abs(got - _eager(module, inputs)).max() <= 1e-5


@pytest.mark.parametrize(("precision", "min_psnr"), [("fp16", 50.0), ("int8", 40.0)])
def test_reduced_precision_psnr(precision, min_psnr):
    spec, inputs = sg.mlp_graph(seed=2)
    module = spec.functions[0].module
    ref = _eager(module, inputs)
    got = run_through_coreai(module, inputs, ["y"], precision)["y"].astype(np.float32)
    value = psnr(ref, got)
    assert value >= min_psnr
    # The reduced precision must really be in effect: not bit-identical to fp32.
    assert value < 120


@pytest.fixture(scope="module")
def decoder_bundles(tmp_path_factory):
    spec, module = sg.decoder_graph(seed=3, prompt=len(PROMPT))
    out = {}
    for precision in ("fp32", "int8"):
        dest = tmp_path_factory.mktemp("dec") / precision
        with BundleWriter(dest, "test", precision=precision) as bw:
            bw.add_graph(spec)
        out[precision] = dest
    return module, out


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_kv_decoder_prefill_decode_gives_eager_tokens(decoder_bundles, precision):
    module, bundles = decoder_bundles
    ref_tokens, ref_logits = sg.greedy_eager(module, PROMPT, 12)
    assert len(set(ref_tokens)) > 2, "degenerate reference: the test would prove nothing"
    with Session(bundles[precision]) as s:
        assert s.functions("decoder") == ["prefill", "decode"]
        tokens, logits = sg.greedy_runtime(s, PROMPT, 12)
    assert tokens == ref_tokens
    tol = 1e-4 if precision == "fp32" else 0.2
    assert max(np.abs(a - b).max() for a, b in zip(ref_logits, logits, strict=True)) < tol


def test_state_is_shared_between_functions_and_reset(decoder_bundles):
    _, bundles = decoder_bundles
    with Session(bundles["fp32"]) as s:
        zero = np.zeros(1, np.int32)
        s.run("decoder", "prefill", {"tokens": np.array([PROMPT]), "start": zero})
        cache = s.read_state("decoder")["layers_0_k_cache"]
        assert np.abs(cache[:, :, : len(PROMPT)]).sum() > 0
        assert np.abs(cache[:, :, len(PROMPT) :]).sum() == 0
        s.run("decoder", "decode", {"tokens": np.array([[1]]), "start": np.array([8])})
        cache2 = s.read_state("decoder")["layers_0_k_cache"]
        assert np.abs(cache2[:, :, 8]).sum() > 0  # decode wrote into prefill's cache
        np.testing.assert_array_equal(cache2[:, :, :8], cache[:, :, :8])
        s.reset_state("decoder")
        assert s.read_state("decoder") == {}
        # A second state key is an independent cache (CFG's cond / uncond pair).
        s.run("decoder", "decode", {"tokens": np.array([[1]]), "start": zero}, state="uncond")
        assert "layers_0_k_cache" in s.read_state("decoder", "uncond")


def test_session_converts_int64_and_checks_inputs(tmp_path):
    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.e = torch.nn.Embedding(32, 4)

        def forward(self, ids):
            return self.e(ids.long())

    module = Embed().eval()
    ids = torch.arange(6, dtype=torch.int32).view(1, 6)
    dest = tmp_path / "b"
    with BundleWriter(dest, "test") as bw:
        bw.add_graph(GraphSpec("g", [FunctionSpec("main", module, {"ids": ids}, ["y"])]))
    with Session(dest) as s:
        got = s.run("g", "main", {"ids": np.arange(6, dtype=np.int64).reshape(1, 6)})["y"]
        np.testing.assert_allclose(got, module(ids).numpy(), atol=1e-6)
        with pytest.raises(InputSpecError, match=r"shape \[1, 7\].*\[1, 6\]"):
            s.run("g", "main", {"ids": np.zeros((1, 7), np.int32)})
        with pytest.raises(InputSpecError, match="missing"):
            s.run("g", "main", {})
        with pytest.raises(InputSpecError, match="int32"):
            s.run("g", "main", {"ids": np.full((1, 6), 2**40)})
        with pytest.raises(UserError, match="no function 'nope'"):
            s.run("g", "nope", {"ids": ids.numpy()})


def test_output_names_must_cover_outputs(tmp_path):
    spec, inputs = sg.conv_graph()
    bad = GraphSpec("g", [FunctionSpec("main", spec.functions[0].module, inputs, ["a", "b"])])
    with pytest.raises(UserError, match="1 output"), BundleWriter(tmp_path / "b", "t") as bw:
        bw.add_graph(bad)
    assert not (tmp_path / "b").exists()
