"""Rung 6 of the Audio8 gate: `precision_rungs`: exported fp16, int8 and mixed `ar` bundles
(fp16 / int8: the whole graph at that precision, as `--dtype` exports it; mixed: slow AR int8 +
fast AR fp16, `mixed.py`) teacher-forced on the fp32 reference's columns with its uniforms:
per AR (slow: the semantic draw; fast: the nine codebook draws) draw agreement and logits
cos min. The fp32 graph's own agreement is rung 2 (ar_rungs.py): no fp32 precision row (it would
compare the reference with itself).

The fp16 graph takes its uniforms in float16 too (`precision.prepare_inputs` halves every float
input), so its draws see u rounded to 11 bits: part of what the fp16 rows measure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np

from gates.ladder import Measured, Rung
from gates.metrics import cosine as _cos

from .. import reference as R
from ..config import Audio8Config
from .ar_rungs import (
    _fast_miss,
    _miss_text,
    _misses_note,
    _sampling,
    _semantic_miss,
    _teacher_forced,
)

# -- thresholds ---------------------------------------------------------------------------------
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


# -- 6. precision: exported fp16 / int8 `ar` bundles vs the fp32 reference -----------------------


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
    "precision_measure",
    "precision_rungs",
]
