"""Rung builders for the Audio8 gate ladder (the ladder itself and its fixtures: gate.py).

Each builder returns `Rung`s whose compute runs lazily inside `gates.ladder.run_ladder`:

1. `sampler_rungs`: the graph's sampler (`ar.graphs.draw_tokens`) exported alone into a
   temp bundle (functions `draw_20` / `draw_1000`, cached per process) vs the NumPy sampler
   (`conversion.core.host.sampling.sample`, `AUDIO8_ORDER`, top-k 50, top-p 0.9, T 0.7) on random
   [N, 4097] logits with the same uniforms: 20/20, then 1,000/1,000;
2. `teacher_forced_rung`: `reference.generate` free (seeded uniforms) gives the reference's
   columns and draws; the bundle's `ar` graph is teacher-forced on those columns with the same
   uniforms (`host_frames.generate(..., forced=...)`): agreement over every draw (the semantic
   after RAS + the nine fast codes per frame), each miss listed with its Gumbel margin;
3. `free_run_rung`: the graph's free run with the same uniforms == the reference's codes;
4. `codec_rung`: one codec window through the runtime vs the eager re-author, and
   `stream_vs_whole_rungs`: every window of the streamed decode vs the eager one-shot decode
   of the whole sequence (window 0 exact; later windows approximate, each its own threshold);
5. `encoder_rungs`: the bundle's `encoder` graph (voice registration) vs `codec.encode`:
   code agreement, and the audio decoded from the graph's codes vs from the reference's;
6. `precision_rungs`: exported fp16, int8 and mixed `ar` bundles (fp16 / int8: the whole graph
   at that precision, as `--dtype` exports it; mixed: slow AR int8 + fast AR fp16, `mixed.py`)
   teacher-forced on the fp32 reference's columns with its uniforms:
   per AR (slow: the semantic draw; fast: the nine codebook draws) draw agreement and logits
   cos min. The fp32 graph's own agreement is rung 2: no fp32 precision row (it would compare
   the reference with itself).

The fp16 graph takes its uniforms in float16 too (`precision.prepare_inputs` halves every float
input), so its draws see u rounded to 11 bits: part of what the fp16 rows measure.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import torch
from torch import nn

from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.core.host.sampling import U_MAX, U_MIN, SamplingConfig, sample
from gates.ladder import Measured, Rung
from gates.metrics import cosine as _cos

from . import reference as R
from .ar import host as host_frames
from .ar.graphs import draw_tokens
from .codec import host as host_codec
from .codec import reference as CR
from .codec.config import CodecConfig
from .codec.graphs import CODEC_GRAPH, ENCODER_GRAPH, FUNCTION
from .codec.model import Codec
from .config import Audio8Config

# -- thresholds ---------------------------------------------------------------------------------
SAMPLER_SIZES = (20, 1000)  # sampler rungs: all N draws equal
SAMPLER_WIDTH = 4097  # the slow draw's compact row (semantic ids then eos)
# random logits' std: 4 puts ~0.91 of the mass in the top 50 (iid Gaussian over 4,096; std 3:
# 0.74), so top-p 0.9 cuts inside top-k in most rows and a sampler without it draws otherwise
SAMPLER_SCALE = 4.0
TEACHER_FORCED_MIN = 0.99  # share of draws (semantic + 9 codes per frame) equal, fp32 graph
# fp32 graph vs reference logits, teacher-forced: measured max|d| 6.7e-6 slow, 8.6e-6 fast
# (reduced, calibrated weights seed 0, draw seed 0, logits std 3); the bar is ~12x that
TEACHER_FORCED_LOGITS_MAX_ABS = 1e-4
FREE_RUN_MIN = 1.0  # fp32: identical code sequences
CODEC_COS_MIN = 0.9999  # one codec window, runtime vs eager re-author
STREAM_CONTEXT = 32  # frames of context a streamed window keeps (published window 160)
# Streamed vs one-shot decode, per window (reduced: 80 frames, windows of 32, context 8).
# Window 0 is exact math (fp32 runtime vs eager: measured max|d| 9.5e-6..1.2e-5 over seeds 1..6
# on audio of rms 0.61). Windows 1, 2: every sample approximate (the first sample already
# differs by > 1e-4); measured cos 0.99695..0.99763 (window 1) and 0.99607..0.99739 (window 2),
# max|d| up to 0.62, rms err 0.043..0.054 (random codes, random weights). The gate's seed
# sweep (weights seeds 0..4 x draw seeds 0..4, 9 runs) went lower: window 1 0.99524, window 2
# 0.99318 (weights seed 3), so the approximate windows' bar is 0.99 (~1.5x the worst 1 - cos).
STREAM_EXACT_MAX_ABS = 1e-4
STREAM_WINDOW_COS_MIN = (0.9999, 0.99, 0.99)  # per window index; later windows: the last
# Voice registration: the encoder graph vs the reference encoder, one clip filling the bucket.
ENCODER_CODES_MIN = 0.98  # measured 80/80 (seeds 0..4); an RVQ flip cascades to later books
ENCODER_DECODED_COS_MIN = 0.999  # measured cos 1.000000, max|d| ~1e-5 (seeds 0..4)
# Exported precision per AR, teacher-forced vs the fp32 reference (reduced, 12 frames).
# "mixed": slow AR int8 + fast AR fp16 in one graph (`mixed.py`, the port notes' choice)
PRECISION_DTYPES = ("fp16", "int8", "mixed")
ARS = ("slow", "fast")
# Measured (reduced, random weights, "Hello from voxport.", 84 prompt columns, 12 frames,
# seeds 0..4, `voxport gate --seed N`): int8 slow 11,11,12,12,12 / 12, fast 102,102,107,107,107
# / 108, logits cos min slow 0.999889, fast 0.999767..0.999831; fp16 slow 11,11,12,12,12 / 12,
# fast 107,102,106,107,107 / 108, cos min slow 0.999996, fast 0.999991. A sampled draw may flip
# on a close race or a top-k / top-p boundary move (each miss is listed with its margin), so the
# draw thresholds allow about twice the worst measured misses; the cosine thresholds sit at
# about twice the worst measured 1 - cos.
PRECISION_MIN = {
    ("fp16", "slow", "draws"): 0.83,  # worst 11/12 = 0.917 (10/12 passes, 9/12 fails)
    ("fp16", "fast", "draws"): 0.90,  # worst 102/108 = 0.944
    ("fp16", "slow", "logits_cos"): 0.99998,  # worst 0.999996
    ("fp16", "fast", "logits_cos"): 0.99998,  # worst 0.999991
    ("int8", "slow", "draws"): 0.83,  # worst 11/12 = 0.917
    ("int8", "fast", "draws"): 0.90,  # worst 102/108 = 0.944
    ("int8", "slow", "logits_cos"): 0.9998,  # worst 0.999889
    ("int8", "fast", "logits_cos"): 0.9995,  # worst 0.999767
    # mixed, seeds 0..4: slow 11,11,12,12,12 / 12, cos 0.999889 (= int8's: the same slow
    # AR constants quantized); fast 107,106,104,108,108 / 108, cos min 0.999940..0.999948
    ("mixed", "slow", "draws"): 0.83,
    ("mixed", "fast", "draws"): 0.90,  # worst 104/108 = 0.963
    ("mixed", "slow", "logits_cos"): 0.9998,
    ("mixed", "fast", "logits_cos"): 0.9998,
}

# -- small helpers ------------------------------------------------------------------------------


def _sampling(config: Audio8Config) -> R.SamplingParams:
    return R.SamplingParams.from_config(config)


def gumbel_margin(scores: np.ndarray, u: np.ndarray) -> float:
    """Gap between the best and second-best log p - log(-log u) among the kept candidates.

    `scores` are processed (filtered, tempered; -inf where removed), so log p differs from them
    by one constant per row, which the gap cancels. One kept candidate -> inf (no race).
    """
    s = np.asarray(scores, np.float64).reshape(-1)
    u = np.clip(np.asarray(u, np.float64).reshape(-1), U_MIN, U_MAX)
    kept = np.isfinite(s)
    v = s[kept] - np.log(-np.log(u[kept]))
    if v.size < 2:
        return math.inf
    top2 = np.sort(v)[-2:]
    return float(top2[1] - top2[0])


def kept_indices(scores: np.ndarray) -> set[int]:
    return {int(i) for i in np.flatnonzero(np.isfinite(np.asarray(scores).reshape(-1)))}


def _processed(logits, top_p: float, temperature: float, top_k: int) -> np.ndarray:
    t = torch.as_tensor(np.asarray(logits, np.float32))[None]
    return R.process(t, top_k, top_p, temperature)[0].numpy()


def _semantic_kept(logits, rec_used_high: bool, sp: R.SamplingParams) -> set[int]:
    kept = kept_indices(_processed(logits, sp.top_p, sp.temperature, sp.top_k))
    if rec_used_high:
        kept |= kept_indices(_processed(logits, sp.ras_top_p, sp.ras_temperature, sp.top_k))
    return kept


def _compact(token: int, config: Audio8Config) -> int:
    if token == config.eos_token_id:
        return config.semantic_count
    return token - config.semantic_begin_id


def _semantic_miss(
    rec: R.FrameRecord,
    got: int,
    sp: R.SamplingParams,
    config: Audio8Config,
    cand_logits: np.ndarray | None = None,
) -> tuple[float, bool]:
    """(margin, moved) of a missed semantic draw, on the reference's logits and uniforms.

    margin: of the draw(s) that decided the frame: the normal draw, and the RAS draw too when
    it was taken (the normal draw still decided that RAS ran). moved: the kept set moved under
    the draw - the candidate's token is outside the reference's kept set, or (given the
    candidate's logits) the reference's token is outside the candidate's: the top-k / top-p
    boundary shifted, a change the margin among the reference's candidates cannot describe.
    """
    m = gumbel_margin(_processed(rec.logits, sp.top_p, sp.temperature, sp.top_k), rec.u_slow[0])
    if rec.used_high:
        high = _processed(rec.logits, sp.ras_top_p, sp.ras_temperature, sp.top_k)
        m = min(m, gumbel_margin(high, rec.u_slow[1]))
    moved = _compact(got, config) not in _semantic_kept(rec.logits, rec.used_high, sp)
    if cand_logits is not None:
        cand_kept = _semantic_kept(cand_logits, rec.used_high, sp)
        moved = moved or _compact(rec.semantic, config) not in cand_kept
    return m, moved


def _fast_miss(
    rec: R.FrameRecord,
    j: int,
    got: int,
    sp: R.SamplingParams,
    cand_logits: np.ndarray | None = None,
) -> tuple[float, bool]:
    """(margin, moved) of codebook j+1's missed draw (j = 0..8); see `_semantic_miss`."""
    s = _processed(rec.fast_logits[j], sp.top_p, sp.temperature, sp.top_k)
    moved = int(got) not in kept_indices(s)
    if cand_logits is not None:
        cand = _processed(cand_logits, sp.top_p, sp.temperature, sp.top_k)
        moved = moved or int(rec.codes[j + 1]) not in kept_indices(cand)
    return gumbel_margin(s, rec.u_fast[j]), moved


def _miss_text(margin: float, moved: bool) -> str:
    return f"margin {_fmt_margin(margin)}" + (", kept set moved" if moved else "")


def reference_columns(gen: R.Generation) -> np.ndarray:
    """[emitted frames, 11]: the columns the reference fed back (semantic id, code_0..9)."""
    n = gen.codes.shape[1]
    sem = np.array([f.semantic for f in gen.frames[:n]], np.int64)[None]
    return np.concatenate([sem, gen.codes], axis=0).T


def _misses_note(misses: list[str], limit: int = 12) -> str:
    if not misses:
        return ""
    more = f" (+{len(misses) - limit} more)" if len(misses) > limit else ""
    return "; misses: " + ", ".join(misses[:limit]) + more


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.asarray(x, np.float64) ** 2)))


def _fmt_margin(m: float) -> str:
    return "inf" if math.isinf(m) else f"{m:.3g}"


# -- 0. the prompt: the port's builder vs the publisher's template ------------------------------

PROMPT_REFERENCE_FRAMES = 6  # the reference template's check: seeded codes, this many frames
PROMPT_REFERENCE_TEXT = "  A reference\n transcript,  read aloud. "  # cleaning has work to do


def prompt_rungs(
    build: Callable[[str, np.ndarray | None, str | None], np.ndarray],
    tokenizer,
    config: Audio8Config,
    text: str,
    seed: int,
) -> list[Rung]:
    """The port's packed prompt (`build(text, reference_codes, reference_text)`, the bundle's
    builder) vs the layout the publisher states (`publisher_prompt.py`, written apart from
    `prompt.py`), for the plain template on `text` and the reference template on seeded codes
    and a transcript: the share of the publisher's columns (all 11 rows) the port reproduces at
    the same place; 1.0 required."""
    from .publisher_prompt import publisher_prompt

    rng = np.random.default_rng([seed, PROMPT_REFERENCE_FRAMES])
    codes = rng.integers(0, 1024, (config.num_codebooks, PROMPT_REFERENCE_FRAMES))
    codes[0] = rng.integers(0, config.codebook_size, PROMPT_REFERENCE_FRAMES)
    cases = {"plain": (None, None), "reference": (codes, PROMPT_REFERENCE_TEXT)}

    def compute(case: str) -> Measured:
        ref_codes, ref_text = cases[case]
        want = publisher_prompt(
            tokenizer, config.num_codebooks, config.semantic_begin_id, text, ref_codes, ref_text
        )
        got = np.asarray(build(text, ref_codes, ref_text), np.int64)
        if got.ndim != 2 or got.shape[0] != want.shape[0]:
            return Measured(
                0.0, f"port prompt shape {list(got.shape)}, publisher's {list(want.shape)}"
            )
        n = min(got.shape[1], want.shape[1])
        same = (got[:, :n] == want[:, :n]).all(axis=0)
        note = f"{int(same.sum())}/{want.shape[1]} columns equal (port {got.shape[1]} columns)"
        bad = np.flatnonzero(~same)
        if bad.size or got.shape[1] != want.shape[1]:
            k = int(bad[0]) if bad.size else n
            port, pub = (a[:, k].tolist() if k < a.shape[1] else "none" for a in (got, want))
            note += f"; first difference at column {k}: port {port} vs publisher {pub}"
        return Measured(float(same.sum()) / max(got.shape[1], want.shape[1]), note)

    return [
        Rung(f"prompt.template[{c}]", "columns_equal", 1.0, lambda c=c: compute(c), True)
        for c in cases
    ]


# -- 1. the sampler, graph vs NumPy, through the runtime ----------------------------------------


class _SamplerGraph(nn.Module):
    def __init__(self, top_k: int, top_p: float, temperature: float) -> None:
        super().__init__()
        self.top_k, self.top_p, self.temperature = top_k, top_p, temperature

    def forward(self, logits, uniforms):
        out = draw_tokens(logits, uniforms, self.top_k, self.top_p, self.temperature)
        return out.to(torch.int32)


_SAMPLER_BUNDLES: dict[tuple, Path] = {}
_SAMPLER_TMP: list[tempfile.TemporaryDirectory] = []


def sampler_bundle(
    sizes: Sequence[int] = SAMPLER_SIZES,
    width: int = SAMPLER_WIDTH,
    top_k: int = R.TOP_K,
    top_p: float = R.TOP_P,
    temperature: float = R.TEMPERATURE,
) -> Path:
    """A temp bundle holding graph "sampler" with one function `draw_{N}` per size (cached per
    process: the export is done once whatever the number of gate runs)."""
    from conversion.core.bundle import BundleWriter
    from conversion.core.export.program import FunctionSpec, GraphSpec

    key = (tuple(sizes), width, top_k, top_p, temperature)
    if key in _SAMPLER_BUNDLES and _SAMPLER_BUNDLES[key].exists():
        return _SAMPLER_BUNDLES[key]
    tmp = tempfile.TemporaryDirectory(prefix="voxport-a8-sampler-")
    _SAMPLER_TMP.append(tmp)  # lives as long as the process
    module = _SamplerGraph(top_k, top_p, temperature)
    functions = [
        FunctionSpec(
            f"draw_{n}",
            module,
            {"logits": torch.zeros(n, width), "uniforms": torch.full((n, width), 0.5)},
            ["tokens"],
        )
        for n in sizes
    ]
    dest = Path(tmp.name) / "bundle"
    with torch.no_grad(), BundleWriter(dest, model="audio8_tts-sampler") as bw:
        bw.add_graph(GraphSpec("sampler", functions, {"width": width}))
    _SAMPLER_BUNDLES[key] = dest
    return dest


def _sampler_case(n: int, seed: int, width: int = SAMPLER_WIDTH):
    rng = np.random.default_rng([seed, n])
    logits = (rng.standard_normal((n, width)) * SAMPLER_SCALE).astype(np.float32)
    u = np.maximum(rng.random((n, width), dtype=np.float32), np.float32(U_MIN))
    return logits, u


def sampler_rungs(seed: int = 0, isolate: bool = True) -> list[Rung]:
    """The in-graph sampler through the runtime vs the NumPy sampler: 20/20, then 1000/1000."""
    cfg = SamplingConfig(
        temperature=R.TEMPERATURE, top_k=R.TOP_K, top_p=R.TOP_P, order=AUDIO8_ORDER
    )
    memo: dict[int, np.ndarray] = {}
    cases = {n: _sampler_case(n, seed) for n in SAMPLER_SIZES}

    def graph_draws(n: int) -> np.ndarray:
        if n not in memo:  # one child process (or session) for both sizes
            from conversion.core.runtime.session import IsolatedSession, Session

            bundle = sampler_bundle()
            with (IsolatedSession if isolate else Session)(bundle) as s:
                for k, (logits, u) in cases.items():
                    out = s.run("sampler", f"draw_{k}", {"logits": logits, "uniforms": u})
                    memo[k] = np.asarray(out["tokens"]).reshape(-1)
        return memo[n]

    def compute(n: int) -> Measured:
        logits, u = cases[n]
        got = graph_draws(n)
        want = np.array([sample(logits[i], u[i], cfg) for i in range(n)])
        misses = []
        for i in np.flatnonzero(got != want):
            m = gumbel_margin(_processed(logits[i], cfg.top_p, cfg.temperature, cfg.top_k), u[i])
            misses.append(f"row {i}: {int(got[i])} vs {int(want[i])} (margin {_fmt_margin(m)})")
        same = int((got == want).sum())
        kept = np.isfinite(
            [_processed(logits[i], cfg.top_p, cfg.temperature, cfg.top_k) for i in range(n)]
        ).sum(axis=1)
        note = (
            f"{same}/{n} draws equal over [{n}, {SAMPLER_WIDTH}] logits (std {SAMPLER_SCALE}); "
            f"kept candidates per row {int(kept.min())}..{int(kept.max())}"
        )
        return Measured(same, note + _misses_note(misses))

    return [
        Rung(f"sampler.graph_vs_numpy[{n}]", "draws_equal", float(n), lambda n=n: compute(n), True)
        for n in SAMPLER_SIZES
    ]


# -- 2. teacher-forced frames, graph vs reference -----------------------------------------------


def reference_run(lm: R.Audio8LM, prompt: np.ndarray, frames: int, seed: int) -> R.Generation:
    """The reference's free run with `seeded_uniforms(seed)`: the draws every rung compares to."""
    return R.generate(lm, prompt, frames, R.seeded_uniforms(seed, lm.config))


def _recorded_uniforms(gen: R.Generation) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(f.u_slow, f.u_fast) for f in gen.frames]


def compare_draws(
    ref: R.Generation,
    semantics: Sequence[int],
    codes: Sequence[np.ndarray],
    sp: R.SamplingParams,
    config: Audio8Config,
    logits: Sequence[np.ndarray] | None = None,
    fast_logits: Sequence[np.ndarray] | None = None,
) -> tuple[int, int, list[str], list[float]]:
    """(equal draws, total draws, miss descriptions, miss margins) over the frames both have:
    per frame the semantic (after RAS) and codebooks 1..9. The candidate's own `logits` [4097]
    and `fast_logits` [9, 4096] per frame, when given, let a miss say the kept set moved."""
    same = total = 0
    misses, margins = [], []
    for k, (rec, sem, cd) in enumerate(zip(ref.frames, semantics, codes, strict=False)):
        cl = None if logits is None else logits[k]
        cf = None if fast_logits is None else fast_logits[k]
        total += 1
        if int(sem) == rec.semantic:
            same += 1
        else:
            m, moved = _semantic_miss(rec, int(sem), sp, config, cl)
            misses.append(
                f"frame {k} semantic {int(sem)} vs {rec.semantic} ({_miss_text(m, moved)})"
            )
            margins.append(m)
        for j in range(1, len(rec.codes)):
            total += 1
            if int(cd[j]) == int(rec.codes[j]):
                same += 1
            else:
                m, moved = _fast_miss(rec, j - 1, int(cd[j]), sp, None if cf is None else cf[j - 1])
                misses.append(
                    f"frame {k} code {j} {int(cd[j])} vs {int(rec.codes[j])} "
                    f"({_miss_text(m, moved)})"
                )
                margins.append(m)
    return same, total, misses, margins


def teacher_forced_rung(
    lm: R.Audio8LM,
    session,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
    name: str = "ar[fp32].teacher_forced_draws",
    threshold: float = TEACHER_FORCED_MIN,
) -> Rung:
    """The graph teacher-forced on the reference's columns with its uniforms: draw agreement."""

    def compute() -> Measured:
        gen = ref if ref is not None else reference_run(lm, prompt, frames, seed)
        cols = reference_columns(gen)
        if len(cols) == 0:
            raise ValueError("the reference drew eos at frame 0: no column to force")
        out = host_frames.generate(
            session, prompt, len(cols), _recorded_uniforms(gen), config, forced=cols
        )
        got = out.frames
        same, total, misses, _ = compare_draws(
            gen,
            [f.semantic for f in got],
            [f.codes for f in got],
            _sampling(config),
            config,
            [f.logits for f in got],
            [f.fast_logits for f in got],
        )
        slow_cos = min(_cos(f.logits, r.logits) for f, r in zip(got, gen.frames, strict=False))
        fast_cos = min(
            _cos(f.fast_logits[j], r.fast_logits[j])
            for f, r in zip(got, gen.frames, strict=False)
            for j in range(len(r.fast_logits))
        )
        note = (
            f"{same}/{total} draws equal over {len(got)} frames (semantic + "
            f"{config.num_codebooks - 1} codes each); logits cos min slow {slow_cos:.6f}, "
            f"fast {fast_cos:.6f}"
        )
        return Measured(same / max(total, 1), note + _misses_note(misses))

    return Rung(name, "draw_agreement", threshold, compute, True)


def teacher_forced_logits_rung(
    session,
    prompt: np.ndarray,
    config: Audio8Config,
    ref: R.Generation,
    name: str = "ar[fp32].teacher_forced_logits",
    threshold: float = TEACHER_FORCED_LOGITS_MAX_ABS,
) -> Rung:
    """The graph teacher-forced on the reference's columns: the largest |logit difference| over
    every frame's slow row and fast rows. The calibrated weights' logits are peaked (std ~3,
    `calibration.py`), so a small numeric fault (an eps, a position off by one) keeps every draw
    and only the logits show it."""

    def compute() -> Measured:
        got = _teacher_forced(session, prompt, config, ref)
        pairs = list(zip(got, ref.frames, strict=False))
        slow = max(
            float(np.abs(np.asarray(f.logits, np.float64) - r.logits).max()) for f, r in pairs
        )
        fast = max(
            float(np.abs(np.asarray(f.fast_logits, np.float64) - r.fast_logits).max())
            for f, r in pairs
        )
        std = float(np.std([r.logits for _, r in pairs]))
        note = (
            f"{len(pairs)} frames: max|d| slow {slow:.3g}, fast {fast:.3g} "
            f"(reference slow logits std {std:.3g})"
        )
        return Measured(max(slow, fast), note)

    return Rung(name, "max_abs", threshold, compute, False)


def ras_windows_rung(session, prompt: np.ndarray, config: Audio8Config, ref: R.Generation) -> Rung:
    """The host's RAS window per frame (teacher-forced on the reference's columns) equals the
    reference's: the publisher's first-frame quirk (frame 0's semantic never enters it) and the
    roll. A window decides a draw only when the normal draw repeats a token in it, so the
    draws alone can pass a wrong window."""

    def compute() -> Measured:
        got = _teacher_forced(session, prompt, config, ref)
        pairs = list(zip(got, ref.frames, strict=False))
        bad = [
            k
            for k, (f, r) in enumerate(pairs)
            if not np.array_equal(np.asarray(f.window, np.int64), np.asarray(r.window, np.int64))
        ]
        note = f"{len(pairs) - len(bad)}/{len(pairs)} frames' windows equal"
        if bad:
            note += f"; first difference at frame {bad[0]}"
        return Measured((len(pairs) - len(bad)) / max(len(pairs), 1), note)

    return Rung("ar.ras_windows", "token_agreement", 1.0, compute, True)


# -- 3. free run, graph vs reference ------------------------------------------------------------


def free_run_rung(
    lm: R.Audio8LM,
    session,
    prompt: np.ndarray,
    config: Audio8Config,
    frames: int,
    seed: int,
    ref: R.Generation | None = None,
    name: str = "ar[fp32].free_run",
) -> Rung:
    """host_frames.generate with the same seeded uniforms == reference.generate's codes."""

    def compute() -> Measured:
        gen = ref if ref is not None else reference_run(lm, prompt, frames, seed)
        out = host_frames.generate(session, prompt, frames, R.seeded_uniforms(seed, config), config)
        want, got = gen.codes.T.reshape(-1), out.codes.T.reshape(-1)  # frame-major
        n = min(want.size, got.size)
        same = int((want[:n] == got[:n]).sum())
        total = max(want.size, got.size, 1)
        diff = np.flatnonzero(want[:n] != got[:n])
        books = config.num_codebooks
        note = (
            f"{same}/{total} codes equal; frames {out.codes.shape[1]} vs reference "
            f"{gen.codes.shape[1]} (eos: {out.finished} vs {gen.finished})"
        )
        if diff.size:
            note += f", first difference at frame {diff[0] // books} book {diff[0] % books}"
        return Measured(same / total, note)

    return Rung(name, "token_agreement", FREE_RUN_MIN, compute, True)


# -- 4. codec: one window, and streamed vs whole ------------------------------------------------


def random_codes(cfg: CodecConfig, frames: int, seed: int) -> np.ndarray:
    """[books, frames] codes inside every book (semantic book 4,096, residual books 1,024)."""
    rng = np.random.default_rng([seed, frames])
    sizes = host_codec.book_sizes(cfg)
    return (rng.random((cfg.num_books, frames)) * sizes[:, None]).astype(np.int64)


def codec_state(codec: Codec | Mapping[str, torch.Tensor]) -> Mapping[str, torch.Tensor]:
    """The weights the codec reference reads: a state dict under the publisher's key names
    (`codec/reference.read_state` of the snapshot's file), or a loaded `Codec`'s parameters.
    Only the numbers are taken from a `Codec`, never its modules."""
    if isinstance(codec, nn.Module):
        return {k: v.detach().float() for k, v in codec.state_dict().items()}
    return codec


def _ref_decode(state, codec_cfg: CodecConfig, codes: np.ndarray) -> np.ndarray:
    """The architecture-written reference (`codec/reference.py`): codes [books, T] -> wav [N]."""
    with torch.no_grad():
        return CR.decode(state, codec_cfg, torch.from_numpy(codes)[None]).reshape(-1).numpy()


def codec_rung(
    session, codec: Codec | Mapping[str, torch.Tensor], codec_cfg: CodecConfig, seed: int
) -> Rung:
    """One window of the graph's width through the runtime vs the codec reference written from
    the architecture (`codec/reference.decode`, no module shared with the graph) on the same
    codes."""
    state = codec_state(codec)

    def compute() -> Measured:
        width = host_codec.graph_frames(session, CODEC_GRAPH)
        codes = random_codes(codec_cfg, width, seed)
        out = session.run(CODEC_GRAPH, FUNCTION, {"codes": codes[None].astype(np.int32)})
        got = np.asarray(out["wav"]).reshape(-1)
        want = _ref_decode(state, codec_cfg, codes)
        cos = _cos(want, got)
        note = (
            f"{width} frames ({got.size} samples): max|d| {np.abs(want - got).max():.3g}, "
            f"ref rms {np.sqrt(np.mean(want.astype(np.float64) ** 2)):.3g}"
        )
        return Measured(cos, note)

    return Rung("codec.window", "cosine", CODEC_COS_MIN, compute, True)


def stream_vs_whole_rungs(
    session,
    codec: Codec | Mapping[str, torch.Tensor],
    codec_cfg: CodecConfig,
    seed: int,
    context: int | None = None,
    frames: int | None = None,
) -> list[Rung]:
    """decode_stream's chunks vs the reference's one-shot decode of the whole sequence (the
    architecture-written `codec/reference.decode`), every window.

    Window 0 starts at frame 0 and sees everything the one-shot decode sees before its frames
    (every op is causal): exact math there, gated on max|d| (`STREAM_EXACT_MAX_ABS`) and on its
    cosine. Later windows re-read only `context` frames, and the window-128 transformers (and
    the convolutions' receptive field) reach further back: every sample of them is approximate,
    gated on its own cosine (`STREAM_WINDOW_COS_MIN`), max|d| and rms error in the note.
    `context` defaults to STREAM_CONTEXT, cut to a quarter of the graph's window when that is
    smaller (the reduced graph is 32 frames wide). `frames` defaults to 2.5 windows (3 windows).
    """
    width = host_codec.graph_frames(session, CODEC_GRAPH)
    ctx = context if context is not None else min(STREAM_CONTEXT, width // 4)
    total = frames or (2 * width + width // 2)
    if total <= width:
        raise ValueError(f"{total} frames fit one {width}-frame window: nothing streams")
    plan = host_codec.window_plan(total, width, ctx)
    fs = codec_cfg.frame_size
    state = codec_state(codec)
    memo: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def decoded() -> tuple[np.ndarray, np.ndarray]:
        if "out" not in memo:
            codes = random_codes(codec_cfg, total, seed + 1)
            chunks = list(host_codec.decode_stream(session, codes, codec_cfg, width, ctx))
            streamed = np.concatenate(chunks)
            whole = _ref_decode(state, codec_cfg, codes)
            if streamed.size != whole.size:
                raise ValueError(f"streamed {streamed.size} samples, one-shot {whole.size}")
            memo["out"] = (streamed, whole)
        return memo["out"]

    def window(k: int) -> tuple[np.ndarray, np.ndarray, str]:
        start, a, b = plan[k]
        streamed, whole = decoded()
        w, s = whole[a * fs : b * fs], streamed[a * fs : b * fs]
        d = np.abs(w.astype(np.float64) - s)
        note = (
            f"window {k}/{len(plan)} emits frames {a}..{b - 1} (decoded from frame {start}, "
            f"width {width}, context {min(ctx, a)}): max|d| {d.max():.3g}, rms err "
            f"{np.sqrt(np.mean(d**2)):.3g}, ref rms {_rms(w):.3g}"
        )
        return w, s, note

    def cos_of(k: int) -> Measured:
        w, s, note = window(k)
        return Measured(_cos(w, s), note)

    def exact() -> Measured:
        w, s, note = window(0)
        return Measured(float(np.abs(w.astype(np.float64) - s).max()), note)

    rungs = [
        Rung(
            "codec.stream_vs_whole[w0].max_abs",
            "max_abs",
            STREAM_EXACT_MAX_ABS,
            exact,
            False,
        )
    ]
    for k in range(len(plan)):
        threshold = STREAM_WINDOW_COS_MIN[min(k, len(STREAM_WINDOW_COS_MIN) - 1)]
        rungs.append(
            Rung(f"codec.stream_vs_whole[w{k}]", "cosine", threshold, lambda k=k: cos_of(k), True)
        )
    return rungs


# -- 5. voice registration: the encoder graph vs the reference encoder --------------------------


def reference_clip(cfg: CodecConfig, samples: int, seed: int) -> np.ndarray:
    """A speech-like test clip: a gliding harmonic tone with a syllable envelope, plus noise."""
    rng = np.random.default_rng([seed, samples])
    t = np.arange(samples) / cfg.sample_rate
    f0 = 140 + 40 * np.sin(2 * np.pi * 1.3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / cfg.sample_rate
    voiced = sum(np.sin(h * phase) / h for h in range(1, 8))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * t) ** 2
    clip = 0.25 * envelope * voiced + 0.01 * rng.standard_normal(samples)
    return clip.astype(np.float32)


def encoder_rungs(
    session, codec: Codec | Mapping[str, torch.Tensor], codec_cfg: CodecConfig, seed: int
) -> list[Rung]:
    """The bundle's `encoder` graph (voice registration) vs the architecture-written reference
    (`codec/reference.encode`) on one clip filling the bucket: the share of codes equal, and
    the audio the bundle makes of them (the graph's codes through the `codec` graph) vs the
    reference's (its codes through `codec/reference.decode`)."""
    state = codec_state(codec)
    memo: dict[str, tuple] = {}

    def run() -> tuple:
        if "out" not in memo:
            inputs = session.manifest.function(ENCODER_GRAPH, FUNCTION)["inputs"]
            capacity = int(inputs[0]["shape"][-1])
            clip = reference_clip(codec_cfg, capacity, seed)
            got = host_codec.encode_reference(session, clip, codec_cfg).astype(np.int64)
            with torch.no_grad():
                audio = torch.from_numpy(clip)[None, None]
                want = CR.encode(state, codec_cfg, audio)[0].numpy().astype(np.int64)
            wav_want = _ref_decode(state, codec_cfg, want)
            # the bundle's path end to end: the graph's codes through the `codec` graph
            width = host_codec.graph_frames(session, CODEC_GRAPH)
            ctx = min(STREAM_CONTEXT, width // 4)
            wav_got, _ = host_codec.decode_whole(session, got, codec_cfg, context=ctx)
            memo["out"] = (clip, got, want, wav_got, wav_want)
        return memo["out"]

    def codes() -> Measured:
        clip, got, want, _, _ = run()
        same = got == want
        per_book = ", ".join(f"{int(x)}" for x in same.sum(axis=1))
        note = (
            f"{int(same.sum())}/{same.size} codes equal ({want.shape[1]} frames of a "
            f"{clip.size / codec_cfg.sample_rate:.2f} s clip x {want.shape[0]} books; per book "
            f"{per_book})"
        )
        return Measured(float(same.mean()), note)

    def audio() -> Measured:
        _, got, want, wav_got, wav_want = run()
        d = np.abs(wav_want.astype(np.float64) - wav_got)
        note = (
            f"encoder + codec graphs vs reference encode + decode ({int((got != want).sum())} "
            f"codes differ): max|d| {d.max():.3g}, ref rms "
            f"{_rms(wav_want):.3g}"
        )
        return Measured(_cos(wav_want, wav_got), note)

    return [
        Rung("encoder.codes", "code_agreement", ENCODER_CODES_MIN, codes, True),
        Rung("encoder.decoded", "cosine", ENCODER_DECODED_COS_MIN, audio, True),
    ]


# -- 6. precision: exported fp16 / int8 `ar` bundles vs the fp32 reference -----------------------


def _teacher_forced(session, prompt: np.ndarray, config: Audio8Config, ref: R.Generation):
    cols = reference_columns(ref)
    if len(cols) == 0:
        raise ValueError("the reference drew eos at frame 0: no column to force")
    return host_frames.generate(
        session, prompt, len(cols), _recorded_uniforms(ref), config, forced=cols
    ).frames


def precision_measure(
    session, prompt: np.ndarray, config: Audio8Config, ref: R.Generation
) -> dict[str, dict]:
    """The candidate bundle teacher-forced on the reference's columns with its uniforms:
    per AR {draws, agree, agreement, logits_cos_min, misses}. slow: the semantic draw (after
    RAS) per frame; fast: codebooks 1..9 per frame (the slow AR's hidden feeds it, so the fast
    row carries both ARs' precision)."""
    got = _teacher_forced(session, prompt, config, ref)
    pairs = list(zip(got, ref.frames, strict=False))
    sp = _sampling(config)
    slow_miss, fast_miss = [], []
    fast_same = fast_total = 0
    for k, (f, r) in enumerate(pairs):
        logits = np.asarray(f.logits, np.float32)
        if int(f.semantic) != r.semantic:
            m, moved = _semantic_miss(r, int(f.semantic), sp, config, logits)
            slow_miss.append(f"frame {k} ({_miss_text(m, moved)})")
        for j in range(1, len(r.codes)):
            fast_total += 1
            if int(f.codes[j]) == int(r.codes[j]):
                fast_same += 1
            else:
                cand = np.asarray(f.fast_logits[j - 1], np.float32)
                m, moved = _fast_miss(r, j - 1, int(f.codes[j]), sp, cand)
                fast_miss.append(f"frame {k} code {j} ({_miss_text(m, moved)})")
    slow_same = len(pairs) - len(slow_miss)
    slow_cos = min(_cos(np.asarray(f.logits, np.float32), r.logits) for f, r in pairs)
    fast_cos = min(
        _cos(np.asarray(f.fast_logits[j], np.float32), r.fast_logits[j])
        for f, r in pairs
        for j in range(len(r.fast_logits))
    )
    return {
        "slow": {
            "draws": len(pairs),
            "agree": slow_same,
            "agreement": slow_same / max(len(pairs), 1),
            "logits_cos_min": slow_cos,
            "misses": slow_miss,
        },
        "fast": {
            "draws": fast_total,
            "agree": fast_same,
            "agreement": fast_same / max(fast_total, 1),
            "logits_cos_min": fast_cos,
            "misses": fast_miss,
        },
    }


def precision_rungs(
    open_session: Callable[[str], AbstractContextManager],
    prompt: np.ndarray,
    config: Audio8Config,
    ref: R.Generation,
    dtypes: Sequence[str] = PRECISION_DTYPES,
) -> list[Rung]:
    """Per exported precision (`open_session(dtype)`: a session over that dtype's `ar` bundle,
    opened once, closed after its measurement) and per AR: draw agreement and logits cos min
    against the fp32 reference (`PRECISION_MIN`)."""
    memo: dict[str, dict] = {}

    def measured(dtype: str) -> dict:
        if dtype not in memo:
            with open_session(dtype) as session:
                memo[dtype] = precision_measure(session, prompt, config, ref)
        return memo[dtype]

    def compute(dtype: str, ar: str, metric: str) -> Measured:
        row = measured(dtype)[ar]
        note = (
            f"{ar} AR, exported {dtype} `ar` graph teacher-forced on the fp32 reference: "
            f"{row['agree']}/{row['draws']} draws equal, logits cos min {row['logits_cos_min']:.6f}"
        )
        note += _misses_note(row["misses"], 8)
        return Measured(row[metric], note)

    rungs = []
    for dtype in dtypes:
        for ar in ARS:
            for metric, kind in (("agreement", "draws"), ("logits_cos_min", "logits_cos")):
                rungs.append(
                    Rung(
                        f"precision[{dtype}].{ar}_{kind}",
                        "draw_agreement" if kind == "draws" else "cosine",
                        PRECISION_MIN[(dtype, ar, kind)],
                        lambda d=dtype, a=ar, m=metric: compute(d, a, m),
                        True,
                    )
                )
    return rungs


__all__ = [
    "sampler_rungs",
    "sampler_bundle",
    "teacher_forced_rung",
    "teacher_forced_logits_rung",
    "ras_windows_rung",
    "free_run_rung",
    "codec_rung",
    "stream_vs_whole_rungs",
    "encoder_rungs",
    "precision_measure",
    "precision_rungs",
    "gumbel_margin",
    "reference_run",
    "reference_columns",
    "compare_draws",
]
