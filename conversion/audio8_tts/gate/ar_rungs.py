"""Rungs 2 and 3 of the Audio8 gate, the fused `ar` graph against the fp32 reference's run, and
the draw helpers every AR comparison shares (Gumbel margins, misses, kept sets):

2. `teacher_forced_rung`: `reference.generate` free (seeded uniforms) gives the reference's
   columns and draws; the bundle's `ar` graph is teacher-forced on those columns with the same
   uniforms (`host_frames.generate(..., forced=...)`): agreement over every draw (the semantic
   after RAS + the nine fast codes per frame), each miss listed with its Gumbel margin; the
   logits (`teacher_forced_logits_rung`) and the RAS windows (`ras_windows_rung`) likewise;
3. `free_run_rung`: the graph's free run with the same uniforms == the reference's codes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from conversion.core.host.sampling import U_MAX, U_MIN
from gates.ladder import Measured, Rung
from gates.metrics import cosine as _cos

from .. import reference as R
from ..ar import host as host_frames
from ..config import Audio8Config

# -- thresholds ---------------------------------------------------------------------------------
TEACHER_FORCED_MIN = 0.99  # share of draws (semantic + 9 codes per frame) equal, fp32 graph
# fp32 graph vs reference logits, teacher-forced: measured max|d| 6.7e-6 slow, 8.6e-6 fast
# (reduced, calibrated weights seed 0, draw seed 0, logits std 3); the bar is ~12x that
TEACHER_FORCED_LOGITS_MAX_ABS = 1e-4
FREE_RUN_MIN = 1.0  # fp32: identical code sequences

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


def _fmt_margin(m: float) -> str:
    return "inf" if math.isinf(m) else f"{m:.3g}"


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


def _teacher_forced(session, prompt: np.ndarray, config: Audio8Config, ref: R.Generation):
    cols = reference_columns(ref)
    if len(cols) == 0:
        raise ValueError("the reference drew eos at frame 0: no column to force")
    return host_frames.generate(
        session, prompt, len(cols), _recorded_uniforms(ref), config, forced=cols
    ).frames


__all__ = [
    "teacher_forced_rung",
    "teacher_forced_logits_rung",
    "ras_windows_rung",
    "free_run_rung",
    "gumbel_margin",
    "reference_run",
    "reference_columns",
    "compare_draws",
]
