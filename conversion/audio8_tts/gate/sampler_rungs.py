"""Rung 1 of the Audio8 gate: `sampler_rungs`: the graph's sampler (`ar.graphs.draw_tokens`)
exported alone into a temp bundle (functions `draw_20` / `draw_1000`, cached per process) vs the
NumPy sampler (`conversion.core.host.sampling.sample`, `AUDIO8_ORDER`, top-k 50, top-p 0.9,
T 0.7) on random [N, 4097] logits with the same uniforms: 20/20, then 1,000/1,000."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.core.host.sampling import U_MIN, SamplingConfig, sample
from gates.ladder import Measured, Rung

from .. import reference as R
from ..ar.graphs import draw_tokens
from .ar_rungs import _fmt_margin, _misses_note, _processed, gumbel_margin

# -- thresholds ---------------------------------------------------------------------------------
SAMPLER_SIZES = (20, 1000)  # sampler rungs: all N draws equal
SAMPLER_WIDTH = 4097  # the slow draw's compact row (semantic ids then eos)
# random logits' std: 4 puts ~0.91 of the mass in the top 50 (iid Gaussian over 4,096; std 3:
# 0.74), so top-p 0.9 cuts inside top-k in most rows and a sampler without it draws otherwise
SAMPLER_SCALE = 4.0


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


__all__ = [
    "sampler_rungs",
    "sampler_bundle",
]
