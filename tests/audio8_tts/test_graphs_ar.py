"""The fused Audio8 AR graph (ar/graphs.py) against the reference, eager and through Core AI.

Reduced config, seeded random weights. The graph's sampler vs the host NumPy sampler on random
logits (20/20 through the runtime); prefill windows vs the reference's slow pass; frames
teacher-forced on the reference's own columns with the reference's uniforms: every draw
(normal, RAS, semantic, nine codebooks) identical; then a free run with the same uniforms and
the host's RAS window: the same codes as `reference.generate`.

The graph and the reference share the checkpoint's weights and nothing else: the graph holds
no reference module, imports nothing of reference/, and runs with every reference computation
disabled. So a bug in the reference is no longer copied into the graph: a deliberately wrong
reference (RMSNorm eps, GQA head mapping, the fast AR's input, the fast AR's causal mask) fails
the eager graph-vs-reference comparison at the gate's own thresholds, while the unmodified pair
passes it.
"""

from __future__ import annotations

import ast
import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from conversion.audio8_tts import reference as R
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.ar import layers as L
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.gate.ar_rungs import FREE_RUN_MIN, TEACHER_FORCED_MIN
from conversion.audio8_tts.reference import generation as R_generation
from conversion.audio8_tts.reference import layers as R_layers
from conversion.audio8_tts.reference import model as R_model
from conversion.audio8_tts.reference import sampler as R_sampler
from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.audio8_tts.weights import random_model
from conversion.core.bundle import BundleWriter
from conversion.core.host.sampling import SamplingConfig, sample
from conversion.core.runtime.session import Session, StandInSession
from tests.roundtrip import run_through_coreai

torch.set_num_threads(1)

C = REDUCED
P = 40  # prompt columns: rows 0..38 prefilled in two windows, row 39 fed to the first frame
FRAMES = 12
SEED = 3  # uniforms seed; frame 3 of this run takes the RAS draw


@pytest.fixture(scope="module")
def lm():
    # the plain draws: these crafted prompts end on audio columns, where the calibrated eos
    # comes at once; the calibrated weights are gated end to end (test_cli, test_mutants)
    return random_model(C, seed=0, calibrated=False)


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


def _emitted(gen: R.Generation) -> list:
    """The frames that fed a column: all but an eos frame (the calibrated weights draw eos)."""
    return gen.frames[: gen.codes.shape[1]]


def _columns(gen: R.Generation) -> np.ndarray:
    """[frames, 11] the columns the reference fed after each frame (an eos frame feeds none)."""
    sem = np.array([f.semantic for f in _emitted(gen)])[None]
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
    for k, f in enumerate(_emitted(ref)):
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
    graph = G.Audio8ARGraph(C, lm.state_dict()).eval()
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


# -- the graph and the reference share the weights only ------------------------------------------

GRAPH_SOURCES = [
    Path(G.__file__),
    Path(L.__file__),
    Path(G.__file__).parents[1] / "mixed.py",
]


def test_graph_holds_the_checkpoint_weights_and_no_reference_module(lm):
    sd = lm.state_dict()
    graph = G.Audio8ARGraph(C, sd).eval()
    ref_modules = {id(m) for m in lm.modules()}
    ref_params = {id(p) for p in lm.parameters()}
    for name, module in graph.named_modules():
        assert id(module) not in ref_modules, name
        assert not type(module).__module__.startswith(R.__name__), name
    assert not any(id(p) in ref_params for p in graph.parameters())
    params = dict(graph.named_parameters())
    assert set(params) == set(sd) | {G.HEAD}  # the checkpoint's keys, plus the head's rows
    for key, want in sd.items():
        assert params[key].dtype == torch.float32 and torch.equal(params[key], want), key
    rows = list(range(C.semantic_begin_id, C.semantic_end_id + 1)) + [C.eos_token_id]
    assert torch.equal(params[G.HEAD], sd["embeddings.weight"][rows])
    assert set(graph.state_dict()) == set(params)  # RoPE tables, caches: non-persistent
    with pytest.raises(ValueError, match="missing \\['norm.weight'\\]"):
        G.Audio8ARGraph(C, {k: v for k, v in sd.items() if k != "norm.weight"})
    with pytest.raises(ValueError, match="unexpected \\['extra'\\]"):
        G.Audio8ARGraph(C, {**sd, "extra": torch.zeros(1)})


def test_graph_sources_import_nothing_from_the_reference():
    for path in GRAPH_SOURCES:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert "reference" not in (node.module or ""), (path.name, node.module)
                assert "Audio8LM" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Import):
                assert not any("reference" in a.name for a in node.names), path.name


# every module of the reference package (a patched function must be patched where it is called)
REFERENCE_MODULES = (R, R_layers, R_model, R_sampler, R_generation)


def test_graph_runs_with_every_reference_computation_disabled(lm, prompt, ref, monkeypatch):
    """Each computing function and forward of the reference package raises (a function
    patched in every reference module that calls it); the graph's prefill and frame still give
    the reference's (recorded) logits and draws."""
    graph = G.Audio8ARGraph(C, lm.state_dict()).eval()

    def boom(*_a, **_k):
        raise AssertionError("the graph called the reference")

    for cls in (R.RMSNorm, R.Attention, R.FeedForward, R.Block, R.Audio8LM):
        monkeypatch.setattr(cls, "forward", boom, raising=False)
    for name in ("embed", "backbone", "slow", "slow_step", "fast_step", "fast_frame"):
        monkeypatch.setattr(R.Audio8LM, name, boom)
    monkeypatch.setattr(R.StaticKV, "write", boom)
    for name in (
        "apply_rope",
        "rope_table",
        "expand_kv",
        "process",
        "top_k_top_p_mask",
        "gumbel_draw",
        "semantic_mask",
        "compact_logits",
        "is_semantic",
    ):
        bound = [m for m in REFERENCE_MODULES if hasattr(m, name)]
        assert bound, name
        for module in bound:
            monkeypatch.setattr(module, name, boom)
    _prefill(_eager(graph, G.PREFILL), prompt, P - 1)
    cols, f = _columns(ref), ref.frames[0]
    o = _eager(graph, G.FRAME)(
        _frame_inputs(prompt[:, P - 1], P - 1, f.u_slow, f.window, f.u_fast, cols[0])
    )
    assert np.abs(o["logits"][0] - f.logits).max() < 1e-4
    assert int(o["semantic"][0]) == f.semantic and np.array_equal(o["codes"], f.codes)


def _graph_vs_reference(model, graph, prompt) -> dict:
    """The gate's fp32 comparison, eagerly: the graph teacher-forced on `model`'s own columns
    with its uniforms (draw agreement over semantic + nine codes per frame, max |Δ| of the slow
    and fast logits), then the graph's free run with the same uniforms (code agreement)."""
    ref = R.generate(model, prompt, FRAMES, R.seeded_uniforms(SEED, model.config))
    prefill, frame = _eager(graph, G.PREFILL), _eager(graph, G.FRAME)
    graph.reset()
    _prefill(prefill, prompt, P - 1)
    cols, column = _columns(ref), prompt[:, P - 1]
    same = slow = fast = 0.0
    for k, f in enumerate(_emitted(ref)):
        o = frame(_frame_inputs(column, P - 1 + k, f.u_slow, f.window, f.u_fast, cols[k]))
        same += int(o["semantic"][0] == f.semantic) + int((o["codes"][1:] == f.codes[1:]).sum())
        slow = max(slow, float(np.abs(o["logits"][0] - f.logits).max()))
        fast = max(fast, float(np.abs(o["fast_logits"] - f.fast_logits).max()))
        column = cols[k]
    graph.reset()
    _prefill(prefill, prompt, P - 1)
    free = _free_run(frame, prompt, ref)
    return {
        "teacher_forced": same / (len(_emitted(ref)) * C.num_codebooks),
        "slow_max_abs": slow,
        "fast_max_abs": fast,
        "free_run": float((free == ref.codes).mean()),
    }


def _passes(m: dict) -> bool:
    """The gate's fp32 rungs (card: teacher-forced draws >= 0.99, free run == 1) and this
    file's logits tolerance (1e-4)."""
    return (
        m["teacher_forced"] >= TEACHER_FORCED_MIN
        and m["free_run"] >= FREE_RUN_MIN
        and max(m["slow_max_abs"], m["fast_max_abs"]) < 1e-4
    )


def _eps_1e5(model, monkeypatch):
    """RMSNorm eps 1e-5 instead of the config's 1e-6."""
    for m in model.modules():
        if isinstance(m, R.RMSNorm):
            monkeypatch.setattr(m, "eps", 1e-5)


def _gqa_tiled(model, monkeypatch):
    """Query head h reading KV head h % kv_heads (tile) instead of h // (heads / kv_heads)."""
    monkeypatch.setattr(R_layers, "expand_kv", lambda x, r: x.repeat(1, r, 1, 1))


def _fast_input_ignored(model, monkeypatch):
    """The fast AR fed the post-norm hidden although the config says pre-norm
    (`norm_fastlayer_input` False): the reference ignores the flag, the graph honours it."""
    monkeypatch.setattr(model, "config", dataclasses.replace(C, norm_fastlayer_input=False))

    def slow_step(self, codes, caches):
        last = self.backbone(codes, caches)
        normed = self.norm(last)
        return self.full_logits(normed), normed

    monkeypatch.setattr(R.Audio8LM, "slow_step", slow_step)


def _fast_mask_strict(model, monkeypatch):
    """The fast AR's causal mask over its 10 static slots hiding the slot just written."""

    def fast_step(self, x, position, caches):
        slots = torch.tensor([position])
        table = self.fast_freqs_cis[position : position + 1]
        mask = torch.arange(C.num_codebooks)[None, :] < slots[:, None]
        mask[:, 0] = True  # position 0 sees itself (a row with no key is NaN)
        for layer, cache in zip(self.fast_layers, caches, strict=True):
            x = layer(x, table, mask, cache, slots)
        return self.fast_output(self.fast_norm(x))[:, -1]

    monkeypatch.setattr(R.Audio8LM, "fast_step", fast_step)


def test_unmodified_reference_and_graph_agree(lm, prompt):
    m = _graph_vs_reference(lm, G.Audio8ARGraph(C, lm.state_dict()).eval(), prompt)
    assert _passes(m), m
    assert m["teacher_forced"] == 1.0 and m["free_run"] == 1.0


@pytest.mark.parametrize(
    "bug", [_eps_1e5, _gqa_tiled, _fast_input_ignored, _fast_mask_strict], ids=lambda f: f.__name__
)
def test_a_wrong_reference_fails_the_graph_comparison(bug, prompt, monkeypatch):
    """The graph is built from the weights alone, so a bug put into the reference is not in
    the graph: the comparison fails the gate's teacher-forced rung (draw agreement < 0.99) and
    its free-run rung (codes differ)."""
    model = random_model(C, seed=0, calibrated=False)
    bug(model, monkeypatch)
    graph = G.Audio8ARGraph.from_model(model).eval()  # reads the config and the weights only
    m = _graph_vs_reference(model, graph, prompt)
    assert not _passes(m), m
    assert m["teacher_forced"] < TEACHER_FORCED_MIN, m
    assert m["free_run"] < FREE_RUN_MIN, m


def test_norm_fastlayer_input_false_is_honoured_by_both(lm, prompt):
    """With the flag off both feed the fast AR the slow AR's pre-norm last hidden: they agree
    with each other, and their fast logits differ from the flag-on pair's."""
    c = dataclasses.replace(C, norm_fastlayer_input=False)
    model = R.Audio8LM(c).eval()
    model.load_state_dict(lm.state_dict())
    graph = G.Audio8ARGraph(c, lm.state_dict()).eval()
    m = _graph_vs_reference(model, graph, prompt)
    assert _passes(m), m
    on = R.generate(lm, prompt, 1, R.seeded_uniforms(SEED, C)).frames[0]
    off = R.generate(model, prompt, 1, R.seeded_uniforms(SEED, c)).frames[0]
    assert np.array_equal(on.logits, off.logits)  # the slow AR is the same
    assert np.abs(on.fast_logits - off.fast_logits).max() > 1e-2


def test_rope_rotation_graph_vs_reference(lm):
    """RoPE bugs are nearly invisible end to end at random weights (attention is close to
    uniform: exact fp32 angles instead of the bf16 table move the logits by ~2e-5, no draw), so
    the rotation is compared part to part: the graph's own table and turn equal the
    reference's exactly, and a reference with exact angles differs from the graph's."""
    graph = G.Audio8ARGraph(C, lm.state_dict()).eval()
    x = torch.randn(
        1, C.max_seq_len, C.n_head, C.head_dim, generator=torch.Generator().manual_seed(0)
    )
    positions = torch.arange(C.max_seq_len)
    got = L.rotate_pairs(x, *graph.rope.rows(positions))
    assert torch.equal(got, R.apply_rope(x, lm.freqs_cis))
    fast_x = x[:, : C.num_codebooks]
    fast_got = L.rotate_pairs(fast_x, graph.fast_rope.cos, graph.fast_rope.sin)
    assert torch.equal(fast_got, R.apply_rope(fast_x, lm.fast_freqs_cis))
    inv = 1.0 / (C.rope_base ** (torch.arange(0, C.head_dim, 2).float() / C.head_dim))
    angles = positions.float()[:, None] * inv[None, :]
    exact = torch.stack((torch.cos(angles), torch.sin(angles)), dim=-1)
    assert (got - R.apply_rope(x, exact)).abs().max() > 1e-3


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

    class NoSession(StandInSession):
        def reset_state(self, *a):
            raise AssertionError("touched the session")

    prompt = np.zeros((C.num_codebooks + 1, C.max_seq_len - 10), np.int64)
    with pytest.raises(UserError, match="KV rows"):
        host_frames.generate(NoSession(), prompt, 20, R.seeded_uniforms(0, C), C)
