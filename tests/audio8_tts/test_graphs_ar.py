"""The fused Audio8 AR graph (ar/graphs.py) against the reference, eager and through Core AI.

Reduced config, seeded random weights. The graph's sampler vs the host NumPy sampler on random
logits (20/20 through the runtime); prefill windows vs the reference's slow pass; frames
teacher-forced on the reference's own columns with the reference's uniforms: every draw
(normal, RAS, semantic, nine codebooks) identical; then a free run with the same uniforms and
the host's RAS window: the same codes as `reference.generate`.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from torch import nn

from conversion.audio8_tts import reference as R
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.audio8_tts.weights import random_model
from conversion.core.bundle import BundleWriter
from conversion.core.runtime import Session
from conversion.core.sampling import SamplingConfig, sample
from conversion.core.testing import run_through_coreai

torch.set_num_threads(1)

C = REDUCED
P = 40  # prompt columns: rows 0..38 prefilled in two windows, row 39 fed to the first frame
FRAMES = 12
SEED = 3  # uniforms seed; frame 3 of this run takes the RAS draw


@pytest.fixture(scope="module")
def lm():
    return random_model(C, seed=0)


@pytest.fixture(scope="module")
def prompt():
    rng = np.random.default_rng(1)
    p = np.zeros((C.num_codebooks + 1, P), np.int64)
    p[0] = rng.integers(0, 256, P)
    p[0, 5:30] = C.semantic_begin_id + rng.integers(0, C.codebook_size, 25)
    p[1:, 5:30] = rng.integers(0, 1024, (C.num_codebooks, 25))
    return p


@pytest.fixture(scope="module")
def ref(lm, prompt):
    return R.generate(lm, prompt, FRAMES, R.seeded_uniforms(SEED, C))


@pytest.fixture(scope="module")
def bundle(lm, tmp_path_factory):
    dest = tmp_path_factory.mktemp("a8") / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts", precision="fp32") as bw:
        bw.add_graph(G.ar_graph_spec(lm))
    return dest


def _columns(gen: R.Generation) -> np.ndarray:
    """[frames, 11] the columns the reference fed after each frame."""
    sem = np.array([f.semantic for f in gen.frames])[None]
    return np.concatenate([sem, gen.codes], axis=0).T


def _prefill(call, prompt: np.ndarray, rows: int, window: int = G.PREFILL_WINDOW):
    out = None
    for start in range(0, rows, window):
        n = min(window, rows - start)
        G.check_window_fits(start, window, C.max_seq_len)
        codes = np.zeros((1, C.num_codebooks + 1, window), np.int32)
        codes[0, 0, :] = -1
        codes[0, :, :n] = prompt[:, start : start + n]
        out = call({"codes": codes, "pos": np.array([start], np.int32)})
    return out


def _frame_inputs(column, pos, u_slow, window, u_fast, forced=None):
    return {
        "codes": np.asarray(column, np.int32)[None, :, None],
        "pos": np.array([pos], np.int32),
        "noise_slow": np.asarray(u_slow, np.float32),
        "window": np.asarray(window, np.int32),
        "noise_fast": np.asarray(u_fast, np.float32),
        "forced": np.zeros(C.num_codebooks + 1, np.int32)
        if forced is None
        else np.asarray(forced, np.int32),
        "use_forced": np.array([0 if forced is None else 1], np.int32),
    }


def _eager(graph: G.Audio8ARGraph, fn: str):
    def call(inputs):
        with torch.no_grad():
            args = [torch.from_numpy(np.ascontiguousarray(v)) for v in inputs.values()]
            out = graph(*args)
        names = G.PREFILL_OUTPUTS if fn == G.PREFILL else G.FRAME_OUTPUTS
        return {k: v.numpy() for k, v in zip(names, out, strict=True)}

    return call


def _check_teacher_forced(prefill, frame, lm, prompt, ref):
    out = _prefill(prefill, prompt, P - 1)
    hidden, _ = lm.slow(torch.from_numpy(prompt[:, : P - 1])[None])
    assert np.abs(out["logits"] - lm.semantic_logits(hidden).numpy()).max() < 1e-4
    assert np.abs(out["hidden"] - hidden.numpy()).max() < 1e-4
    cols = _columns(ref)
    column = prompt[:, P - 1]
    times = []
    for k, f in enumerate(ref.frames):
        t = time.perf_counter()
        o = frame(_frame_inputs(column, P - 1 + k, f.u_slow, f.window, f.u_fast, cols[k]))
        times.append(time.perf_counter() - t)
        assert (o["semantic"][0], o["normal"][0], o["high"][0]) == (f.semantic, f.normal, f.high)
        assert np.array_equal(o["codes"], f.codes), k
        assert np.abs(o["logits"][0] - f.logits).max() < 1e-4
        assert np.abs(o["fast_logits"] - f.fast_logits).max() < 1e-4
        column = cols[k]
    return float(np.median(times))


def _free_run(frame, prompt, ref):
    """The host loop without forcing: the RAS window kept the publisher's way."""
    column, window, codes = prompt[:, P - 1], None, []
    for k, f in enumerate(ref.frames):
        w = np.full(10, -1) if window is None else window
        o = frame(_frame_inputs(column, P - 1 + k, f.u_slow, w, f.u_fast))
        column = np.concatenate([o["semantic"], o["codes"]])
        codes.append(o["codes"])
        window = R.next_window(
            None if window is None else torch.from_numpy(window)[None],
            torch.from_numpy(o["semantic"]).long(),
            10,
        )[0].numpy()
    return np.stack(codes, axis=1)


# -- eager ---------------------------------------------------------------------------------------


def test_reference_run_exercises_ras(ref):
    assert any(f.used_high for f in ref.frames)


def test_eager_graph_teacher_forced_and_free(lm, prompt, ref):
    graph = G.Audio8ARGraph(lm).eval()
    _check_teacher_forced(_eager(graph, G.PREFILL), _eager(graph, G.FRAME), lm, prompt, ref)
    graph.reset()
    _prefill(_eager(graph, G.PREFILL), prompt, P - 1)
    assert np.array_equal(_free_run(_eager(graph, G.FRAME), prompt, ref), ref.codes)


def test_eager_graph_sampler_matches_numpy_1000():
    rng = np.random.default_rng(4)
    for width, scale in ((4097, 3.0), (4096, 1.0)):
        logits = (rng.standard_normal((1000, width)) * scale).astype(np.float32)
        u = rng.random((1000, width), dtype=np.float32) + np.float32(1e-7)
        got = G.draw_tokens(torch.from_numpy(logits), torch.from_numpy(u), 50, 0.9, 0.7).numpy()
        cfg = SamplingConfig(temperature=0.7, top_k=50, top_p=0.9, order=AUDIO8_ORDER)
        want = np.array([sample(logits[i], u[i], cfg) for i in range(1000)])
        assert int((got == want).sum()) == 1000


# -- through the Core AI runtime -----------------------------------------------------------------


class _SamplerProbe(nn.Module):
    def __init__(self, top_p: float, temperature: float) -> None:
        super().__init__()
        self.top_p, self.temperature = top_p, temperature

    def forward(self, logits, uniforms):
        return G.draw_tokens(logits, uniforms, 50, self.top_p, self.temperature).to(torch.int32)


@pytest.mark.parametrize(
    "width,top_p,temperature", [(4097, 0.9, 0.7), (4097, 0.9, 1.0), (4096, 0.9, 0.7)]
)
def test_graph_sampler_matches_numpy_20_through_runtime(width, top_p, temperature):
    rng = np.random.default_rng(width + int(10 * temperature))
    logits = (rng.standard_normal((20, width)) * 3).astype(np.float32)
    u = rng.random((20, width), dtype=np.float32) + np.float32(1e-7)
    out = run_through_coreai(
        _SamplerProbe(top_p, temperature),
        {"logits": torch.from_numpy(logits), "uniforms": torch.from_numpy(u)},
        ["tokens"],
    )["tokens"]
    cfg = SamplingConfig(temperature=temperature, top_k=50, top_p=top_p, order=AUDIO8_ORDER)
    want = np.array([sample(logits[i], u[i], cfg) for i in range(20)])
    assert int((out == want).sum()) == 20


def test_runtime_frames_teacher_forced_and_free(bundle, lm, prompt, ref):
    with Session(bundle) as s:

        def call(fn):
            return lambda inputs: s.run(G.GRAPH, fn, inputs)

        ms = 1000 * _check_teacher_forced(call(G.PREFILL), call(G.FRAME), lm, prompt, ref)
        print(f"\nreduced frame through the runtime: {ms:.1f} ms (median of {FRAMES})")
        s.reset_state(G.GRAPH)
        _prefill(call(G.PREFILL), prompt, P - 1)
        assert np.array_equal(_free_run(call(G.FRAME), prompt, ref), ref.codes)


def test_host_frame_loop_equals_reference_generate(bundle, lm, prompt, ref):
    """host_frames.generate (the pipeline's loop) over the runtime == reference.generate."""
    from conversion.audio8_tts.ar import host as host_frames

    with Session(bundle) as s:
        got = host_frames.generate(s, prompt, FRAMES, R.seeded_uniforms(SEED, C), C)
        forced = host_frames.generate(
            s, prompt, FRAMES, R.seeded_uniforms(SEED, C), C, forced=_columns(ref)
        )
    assert got.prefill_calls == 2  # 39 prompt rows in windows of 32
    assert np.array_equal(got.codes, ref.codes)
    assert [f.semantic for f in got.frames] == [f.semantic for f in ref.frames]
    assert [f.window.tolist() for f in got.frames] == [f.window.tolist() for f in ref.frames]
    assert np.array_equal(forced.codes, ref.codes)


def test_frame_budget_is_checked_before_any_call():
    from conversion.audio8_tts.ar import host as host_frames
    from conversion.core.errors import UserError

    class NoSession:
        def reset_state(self, *a):
            raise AssertionError("touched the session")

    prompt = np.zeros((C.num_codebooks + 1, C.max_seq_len - 10), np.int64)
    with pytest.raises(UserError, match="KV rows"):
        host_frames.generate(NoSession(), prompt, 20, R.seeded_uniforms(0, C), C)
