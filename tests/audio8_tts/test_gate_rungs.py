"""The Audio8 gate's rung builders (conversion/audio8_tts/gate/*_rungs.py) through run_ladder.

Reduced config, seeded random LM and codec, one bundle holding graphs "ar", "codec" and
"encoder" (as the gate's). Every rung must pass and its note must say what it measured:
counts, cosines, and for a miss its Gumbel margin; a candidate that differs must fail it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.audio8_tts import reference as R
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.codec.config import REDUCED as CODEC_CFG
from conversion.audio8_tts.codec.graphs import codec_graph_spec, encoder_graph_spec
from conversion.audio8_tts.codec.weights import load_codec, write_random_codec
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.gate.ar_rungs import (
    compare_draws,
    free_run_rung,
    gumbel_margin,
    reference_columns,
    reference_run,
    teacher_forced_rung,
)
from conversion.audio8_tts.gate.codec_rungs import (
    ENCODER_CODES_MIN,
    codec_rung,
    encoder_rungs,
    stream_vs_whole_rungs,
)
from conversion.audio8_tts.gate.precision_rungs import ARS, PRECISION_MIN, precision_rungs
from conversion.audio8_tts.gate.sampler_rungs import sampler_rungs
from conversion.audio8_tts.weights import random_model
from conversion.core.bundle import BundleWriter
from conversion.core.runtime.session import Session
from gates.ladder import run_ladder
from gates.metrics import cosine as _cos

torch.set_num_threads(1)

C = REDUCED
P = 40  # prompt columns (two prefill windows)
FRAMES = 12
SEED = 3  # the reference takes the RAS draw in this run


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
def codec(tmp_path_factory):
    path = write_random_codec(tmp_path_factory.mktemp("a8c") / "codec.pth", CODEC_CFG, seed=0)
    return load_codec(path, CODEC_CFG)


@pytest.fixture(scope="module")
def session(lm, codec, tmp_path_factory):
    dest = tmp_path_factory.mktemp("a8gate") / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts", precision="fp32") as bw:
        bw.add_graph(G.ar_graph_spec(lm))
        bw.add_graph(codec_graph_spec(codec))
        bw.add_graph(encoder_graph_spec(codec))
    with Session(dest) as s:
        yield s


@pytest.fixture(scope="module")
def ref(lm, prompt):
    return reference_run(lm, prompt, FRAMES, SEED)


def _passes(rungs):
    report = run_ladder("audio8_tts", rungs, progress=False)
    for r in report.rungs:
        assert r.passed, f"{r.name}: {r.value} vs {r.threshold}: {r.detail}"
    return {r.name: r for r in report.rungs}


def test_sampler_rungs_through_runtime():
    got = _passes(sampler_rungs(seed=0, isolate=False, config=C))
    small, big = got["sampler.graph_vs_numpy[20]"], got["sampler.graph_vs_numpy[1000]"]
    assert (small.value, big.value) == (20, 1000)
    assert "1000/1000 draws equal" in big.detail and "kept candidates per row" in big.detail
    slow = got["sampler.semantic_vs_reference"]
    assert slow.value == slow.threshold == 24
    # eos is the best candidate in a third of the rows, and drawn (alone in the kept set) in
    # at least half of them; RAS takes the high draw in some
    assert "eos the best candidate in 8 rows" in slow.detail
    drawn = int(slow.detail.split("drawn in ")[1].split(" ")[0])
    assert drawn >= 4 and "RAS took the high draw in 0 rows" not in slow.detail


def _wrong_eos(self, logits, noise_slow, window):
    sem, normal, high = _SEMANTIC(self, logits, noise_slow, window)
    eos = self.config.eos_token_id
    return tuple(torch.where(x == eos, x + 1, x) for x in (sem, normal, high))


def _ras_never_taken(self, logits, noise_slow, window):
    _, normal, high = _SEMANTIC(self, logits, noise_slow, window)
    return torch.where(normal == high, high, normal), normal, high


_SEMANTIC = G.Audio8ARGraph._semantic


@pytest.mark.parametrize(
    ("fault", "kind"), [(_wrong_eos, "(eos)"), (_ras_never_taken, "(ras)")], ids=["eos", "ras"]
)
def test_the_slow_draw_rung_sees_the_frame_graphs_eos_and_ras(monkeypatch, fault, kind):
    """A frame graph that returns eos as eos + 1, or never takes the RAS draw, fails the slow
    draw's row at seed 0 (the utterance at seed 0 draws no eos, and the bare sampler rows never
    reach `_semantic`); the draw rows stay equal."""
    monkeypatch.setattr(G.Audio8ARGraph, "_semantic", fault)
    report = run_ladder("audio8_tts", sampler_rungs(seed=0, isolate=False, config=C))
    by = {r.name: r for r in report.rungs}
    assert by["sampler.graph_vs_numpy[20]"].passed and by["sampler.graph_vs_numpy[1000]"].passed
    slow = by["sampler.semantic_vs_reference"]
    assert not slow.passed and slow.value < 24, slow.detail
    assert f"{kind}: graph" in slow.detail


@pytest.mark.slow
def test_teacher_forced_and_free_run(lm, session, prompt, ref):
    assert any(f.used_high for f in ref.frames)  # RAS is exercised
    rungs = [
        teacher_forced_rung(lm, session, prompt, C, FRAMES, SEED, ref=ref),
        free_run_rung(lm, session, prompt, C, FRAMES, SEED, ref=ref),
    ]
    got = _passes(rungs)
    tf = got["ar[fp32].teacher_forced_draws"]
    assert tf.value == 1.0
    assert f"{FRAMES * C.num_codebooks}/{FRAMES * C.num_codebooks} draws equal" in tf.detail
    assert "logits cos min slow" in tf.detail
    fr = got["ar[fp32].free_run"]
    assert fr.value == 1.0 and f"{FRAMES * C.num_codebooks}/" in fr.detail


def test_miss_notes_carry_gumbel_margins(ref):
    """A candidate that differs from the reference: each miss is listed with its margin."""
    sp = R.SamplingParams.from_config(C)
    semantics = [f.semantic for f in ref.frames]
    codes = [f.codes.copy() for f in ref.frames]
    semantics[2] = C.eos_token_id  # never the drawn token at random weights
    codes[5][3] = (int(codes[5][3]) + 1) % C.codebook_size
    same, total, misses, margins = compare_draws(ref, semantics, codes, sp, C)
    assert (same, total) == (FRAMES * C.num_codebooks - 2, FRAMES * C.num_codebooks)
    assert misses[0].startswith("frame 2 semantic") and "margin" in misses[0]
    assert misses[1].startswith("frame 5 code 3") and "margin" in misses[1]
    assert all(m > 0 for m in margins)


def test_gumbel_margin_is_the_gap_of_the_race():
    scores = np.array([0.0, -np.inf, np.log(0.5), -1.0], np.float32)
    u = np.array([np.exp(-1.0), 0.5, np.exp(-1.0), 0.9], np.float32)
    # values s - log(-log u): 0, -inf (removed), log 0.5, -1 - log(-log 0.9)
    values = sorted([0.0, np.log(0.5), -1.0 - np.log(-np.log(0.9))])  # best: the last (1.25)
    want = values[-1] - values[-2]
    assert gumbel_margin(scores, u) == pytest.approx(want, abs=1e-6)
    assert gumbel_margin(np.array([1.0, -np.inf]), np.array([0.5, 0.5])) == float("inf")


def test_codec_rungs_gate_every_streamed_window(session, codec):
    got = _passes(
        [
            codec_rung(session, codec, CODEC_CFG, SEED),
            *stream_vs_whole_rungs(session, codec, CODEC_CFG, SEED),
        ]
    )
    assert "32 frames" in got["codec.window"].detail
    # 80 frames in windows of 32 with 8 of context: emits 0..31, 32..55, 56..79
    windows = [n for n in got if n.startswith("codec.stream_vs_whole[w") and "max_abs" not in n]
    assert windows == [f"codec.stream_vs_whole[w{k}]" for k in range(3)]
    assert "frames 32..55 (decoded from frame 24" in got["codec.stream_vs_whole[w1]"].detail
    assert got["codec.stream_vs_whole[w0].max_abs"].value < 1e-4  # the exact window
    # the later windows really are approximate (the rung compares two different decodes)
    assert got["codec.stream_vs_whole[w1]"].value < 0.9999
    assert got["codec.stream_vs_whole[w2]"].value < 0.9999


class _Perturbed:
    """A session whose `noise` input (or `codes` output of the encoder) is altered: what a
    candidate that does not reproduce the reference looks like to a rung."""

    def __init__(self, session, noise: str | None = None, encoder_books: int = 0):
        self.session, self.noise, self.books = session, noise, encoder_books
        self.manifest = session.manifest

    def reset_state(self, *a, **k):
        return self.session.reset_state(*a, **k)

    def run(self, graph, function, inputs, state="default"):
        if self.noise and self.noise in inputs:
            inputs = {**inputs, self.noise: 1.0 - np.asarray(inputs[self.noise])}
        out = self.session.run(graph, function, inputs, state)
        if self.books and graph == "encoder":
            codes = out["codes"].copy()
            codes[:, -self.books :] = (codes[:, -self.books :] + 1) % 1024
            out = {**out, "codes": codes}
        return out


@pytest.mark.parametrize(("noise", "failing"), [("noise_slow", "slow"), ("noise_fast", "fast")])
def test_precision_rungs_fail_on_the_ar_whose_draws_differ(session, prompt, ref, noise, failing):
    """Reversed uniforms on one AR (1 - u): that AR's draw row fails, each miss listed with its
    margin; the other AR's draws and both logits rows (the noise never reaches the logits)
    still pass: each row measures its own AR."""
    from contextlib import nullcontext

    candidate = _Perturbed(session, noise=noise)
    rungs = precision_rungs(lambda _d: nullcontext(candidate), prompt, C, ref, ("int8",))
    report = run_ladder("audio8_tts", rungs, progress=False)
    by = {r.name: r for r in report.rungs}
    assert set(by) == {f"precision[int8].{a}_{k}" for a in ARS for k in ("draws", "logits_cos")}
    other = "fast" if failing == "slow" else "slow"
    bad = by[f"precision[int8].{failing}_draws"]
    assert not bad.passed and bad.value < 0.8, bad.detail
    assert "misses: frame" in bad.detail and "margin" in bad.detail
    assert by[f"precision[int8].{other}_draws"].value == 1.0
    for ar in ARS:
        assert by[f"precision[int8].{ar}_logits_cos"].passed


def test_encoder_rungs_pass_and_catch_changed_codes(session, codec):
    got = _passes(encoder_rungs(session, codec, CODEC_CFG, SEED))
    assert got["encoder.codes"].value >= ENCODER_CODES_MIN
    assert (
        f"/{CODEC_CFG.num_books * CODEC_CFG.encoder_frames} codes equal"
        in got["encoder.codes"].detail
    )
    # the last two books' codes moved by one entry: 2 of 10 books differ, and the audio with them
    broken = encoder_rungs(_Perturbed(session, encoder_books=2), codec, CODEC_CFG, SEED)
    report = run_ladder("audio8_tts", broken, progress=False)
    codes, audio = report.rungs
    assert not codes.passed and codes.value == pytest.approx(0.8)
    assert audio.value < 0.9999 and "16 codes differ" in audio.detail


def test_mixed_graph_halves_only_the_fast_ar(lm, prompt, ref):
    """The mixed graph: its own fast-AR parameters and RoPE table float16, the slow AR's
    float32 and equal to the checkpoint's (the int8 pass then selects float32 constants: the
    slow AR's); the caller's LM untouched. Eagerly, one teacher-forced frame: the slow logits
    and the sampler stay float32 (the fast logits are the fast AR's float16), and the draws are
    the fp32 reference's."""
    from conversion.audio8_tts import mixed

    sd = {k: v.clone() for k, v in lm.state_dict().items()}
    g = mixed.mixed_graph(lm)
    fast = {f"{n}." for n in mixed.FAST_MODULES}
    params = dict(g.named_parameters())
    assert {n for n, p in params.items() if p.dtype == torch.float16} == {
        n for n in params if any(n.startswith(f) for f in fast)
    }
    for n, p in params.items():
        if p.dtype == torch.float32 and n != G.HEAD:
            assert torch.equal(p, sd[n]), n
    assert g.fast_rope.cos.dtype == torch.float16 and g.rope.cos.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in lm.parameters())  # the caller's LM untouched
    assert all(torch.equal(v, sd[k]) for k, v in lm.state_dict().items())
    f, width = ref.frames[0], P - 1
    with torch.no_grad():
        g(*(torch.from_numpy(v) for v in _prefill_window(prompt[:, :width], width).values()))
        out = g(
            torch.from_numpy(prompt[:, width, None][None].astype(np.int32)),
            torch.tensor([width], dtype=torch.int32),
            torch.from_numpy(f.u_slow),
            torch.from_numpy(f.window.astype(np.int32)),
            torch.from_numpy(f.u_fast),
            torch.from_numpy(reference_forced(ref, 0)),
            torch.ones(1, dtype=torch.int32),
        )
    logits, semantic, _, _, codes, fast_logits = out
    assert logits.dtype == torch.float32 and fast_logits.dtype == torch.float16
    assert int(semantic[0]) == f.semantic
    # the card's mixed fast rows: draws >= 0.90 (of nine: all), logits cos >= 0.9998
    # (measured here: ten of ten codes, cos 0.9999996)
    assert np.array_equal(codes.numpy(), f.codes)
    assert (
        _cos(fast_logits.float().numpy(), f.fast_logits)
        >= PRECISION_MIN[("mixed", "fast", "logits_cos")]
    )


def _prefill_window(rows: np.ndarray, width: int) -> dict[str, np.ndarray]:
    """One prefill call's inputs holding `rows` [11, n <= width] at KV row 0."""
    codes = np.zeros((1, C.num_codebooks + 1, width), np.int32)
    codes[0, :, : rows.shape[1]] = rows
    return {"codes": codes, "pos": np.zeros(1, np.int32)}


def reference_forced(ref, k: int) -> np.ndarray:
    """Frame k's forced input [11]: the column the reference fed after it."""
    return reference_columns(ref)[k].astype(np.int32)


def test_slow_only_int8_restores_coreai_opts_selector():
    from coreai_opt.coreai_utils.passes import weight_quantization as wq

    from conversion.audio8_tts.mixed import slow_only_int8

    before = wq._should_compress_op
    with slow_only_int8():
        assert wq._should_compress_op is not before
    assert wq._should_compress_op is before
