"""The Audio8 gate's rung builders (conversion/audio8_tts/gate_rungs.py) through run_ladder.

Reduced config, seeded random LM and codec, one bundle holding graphs "ar" and "codec" (as the
gate's). Every rung must pass and its note must say what it measured: counts, cosines, and for
a miss its Gumbel margin.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.audio8_tts import gate_rungs as GR
from conversion.audio8_tts import reference as R
from conversion.audio8_tts.ar import graphs as G
from conversion.audio8_tts.codec.graphs import codec_graph_spec
from conversion.audio8_tts.codec.model import REDUCED as CODEC_CFG
from conversion.audio8_tts.codec.model import load_codec, write_random_codec
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.weights import random_model
from conversion.core.bundle import BundleWriter
from conversion.core.runtime import Session
from gates.ladder import Measured, run_ladder

torch.set_num_threads(1)

C = REDUCED
P = 40  # prompt columns (two prefill windows)
FRAMES = 12
SEED = 3  # the reference takes the RAS draw in this run


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
def codec(tmp_path_factory):
    path = write_random_codec(tmp_path_factory.mktemp("a8c") / "codec.pth", CODEC_CFG, seed=0)
    return load_codec(path, CODEC_CFG)


@pytest.fixture(scope="module")
def session(lm, codec, tmp_path_factory):
    dest = tmp_path_factory.mktemp("a8gate") / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts", precision="fp32") as bw:
        bw.add_graph(G.ar_graph_spec(lm))
        bw.add_graph(codec_graph_spec(codec))
    with Session(dest) as s:
        yield s


@pytest.fixture(scope="module")
def ref(lm, prompt):
    return GR.reference_run(lm, prompt, FRAMES, SEED)


def _passes(rungs):
    report = run_ladder("audio8_tts", rungs, progress=False)
    for r in report.rungs:
        assert r.passed, f"{r.name}: {r.value} vs {r.threshold}: {r.detail}"
    return {r.name: r for r in report.rungs}


def test_sampler_rungs_through_runtime():
    got = _passes(GR.sampler_rungs(seed=0, isolate=False))
    small, big = got["sampler.graph_vs_numpy[20]"], got["sampler.graph_vs_numpy[1000]"]
    assert (small.value, big.value) == (20, 1000)
    assert "1000/1000 draws equal" in big.detail and "kept candidates per row" in big.detail


@pytest.mark.slow
def test_teacher_forced_and_free_run(lm, session, prompt, ref):
    assert any(f.used_high for f in ref.frames)  # RAS is exercised
    rungs = [
        GR.teacher_forced_rung(lm, session, prompt, C, FRAMES, SEED, ref=ref),
        GR.free_run_rung(lm, session, prompt, C, FRAMES, SEED, ref=ref),
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
    same, total, misses, margins = GR.compare_draws(ref, semantics, codes, sp, C)
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
    assert GR.gumbel_margin(scores, u) == pytest.approx(want, abs=1e-6)
    assert GR.gumbel_margin(np.array([1.0, -np.inf]), np.array([0.5, 0.5])) == float("inf")


def test_codec_rungs(session, codec):
    got = _passes(
        [
            GR.codec_rung(session, codec, CODEC_CFG, SEED),
            GR.stream_vs_whole_rung(session, codec, CODEC_CFG, SEED),
        ]
    )
    assert "32 frames" in got["codec.window"].detail
    note = got["codec.stream_vs_whole"].detail
    assert "first window cos" in note and "after it cos" in note and "context 8" in note


def test_int8_fake_quantization_is_coreai_opts_rule():
    w = torch.tensor([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [2.0, 1.0, -0.003]])
    q = GR.fake_quantize_int8(w)
    for row, qrow in zip(w, q, strict=True):
        scale = (2 * row.abs().max() + 1e-6) / 254
        assert torch.allclose(qrow, torch.round(row / scale).clamp(-127, 127) * scale)
    assert torch.equal(q[1], torch.zeros(3))
    assert (q - w).abs().max() <= (2 * 2.0 + 1e-6) / 254 / 2 + 1e-7


def test_precision_table_and_rungs(lm, prompt, ref):
    table = GR.precision_table(lm, prompt, C, FRAMES, SEED, ref=ref)
    assert [(r["ar"], r["precision"]) for r in table] == [
        (a, p) for a in GR.ARS for p in GR.PRECISIONS
    ]
    by = {(r["ar"], r["precision"]): r for r in table}
    assert by[("slow", "fp32")]["draws"] == FRAMES
    assert by[("fast", "fp32")]["draws"] == FRAMES * (C.num_codebooks - 1)
    for ar in GR.ARS:
        assert (
            by[(ar, "fp32")]["agreement"] == 1.0 and by[(ar, "fp32")]["logits_cos_min"] > 0.999999
        )
        assert by[(ar, "fp16")]["logits_cos_min"] > 0.9999
        assert 0.999 < by[(ar, "int8")]["logits_cos_min"] < 1.0  # int8 did change the weights
    print("\n" + GR.format_table(table))
    got = _passes(GR.precision_rungs(lm, prompt, C, FRAMES, SEED, ref=ref, table=table))
    assert set(got) == {f"precision[{a} {p}].draws" for a, p in GR.PRECISION_MIN}
    slow = got["precision[slow int8].draws"]
    assert "eager simulation" in slow.detail and "not gated: slow AR fp16" in slow.detail
    assert slow.threshold == pytest.approx(min(0.95, 1 - 1 / FRAMES))
    assert "not gated: fast AR int8" in got["precision[fast fp16].draws"].detail


def test_precision_rung_lists_misses_with_margins(lm, prompt, ref):
    """A fast int8 row with misses (seed 0 at this config): each carries its margin."""
    table = GR.precision_table(lm, prompt, C, FRAMES, 0)
    row = next(r for r in table if (r["ar"], r["precision"]) == ("fast", "int8"))
    assert row["agree"] < row["draws"]
    note = GR._row_note(row)
    assert "misses: frame" in note and " code " in note and "margin" in note
    assert isinstance(
        GR.precision_rungs(lm, prompt, C, FRAMES, 0, table=table)[0].compute(), Measured
    )
