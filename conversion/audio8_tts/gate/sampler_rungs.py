"""Rung 1 of the Audio8 gate: `sampler_rungs`: the graph's sampler exported alone into a temp
bundle (cached per process) vs a sampler written apart from it, on the same uniforms:

- `sampler.graph_vs_numpy[N]`: `ar.graphs.draw_tokens` (functions `draw_20` / `draw_1000`) vs
  the NumPy sampler (`conversion.core.host.sampling.sample`, `AUDIO8_ORDER`, top-k 50, top-p
  0.9, T 0.7) on random [N, 4097] logits: 20/20, then 1,000/1,000;
- `sampler.semantic_vs_reference`: the frame graph's slow draw as the graph holds it
  (`Audio8ARGraph._semantic`, function `semantic`: both draws, RAS, compact row -> vocabulary
  id with eos) vs the reference's `draw_semantic`, row by row on rows where eos is the best
  candidate (alone in the kept set, or leading it), rows whose window holds the normal draw
  (RAS takes the high one; eos in the window never replaces eos), and plain rows: every id
  equal. The utterance's own draws may never reach eos (at seed 0 they do not), so this is
  where an eos id off by one shows at every seed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from conversion.audio8_tts.sampling import AUDIO8_ORDER
from conversion.core.host.sampling import U_MIN, SamplingConfig, sample
from gates.ladder import Measured, Rung

from .. import reference as R
from ..ar import graphs as G
from ..ar.graphs import draw_tokens
from ..config import Audio8Config
from ..sampling import SamplingParams
from .ar_rungs import _fmt_margin, _misses_note, _processed, gumbel_margin

# -- thresholds ---------------------------------------------------------------------------------
SAMPLER_SIZES = (20, 1000)  # sampler rungs: all N draws equal
SAMPLER_WIDTH = 4097  # the slow draw's compact row (semantic ids then eos)
# random logits' std: 4 puts ~0.91 of the mass in the top 50 (iid Gaussian over 4,096; std 3:
# 0.74), so top-p 0.9 cuts inside top-k in most rows and a sampler without it draws otherwise
SAMPLER_SCALE = 4.0
SEMANTIC_ROWS = 24  # the slow draw's rows: a third each eos best, RAS taken, plain
# eos's logit above the row's best: 12 puts p(eos) > 0.9999 (top-p keeps eos alone, every
# uniform draws it); 1 leaves eos the best of several kept candidates (the race decides)
EOS_LEADS = (12.0, 1.0)


# -- 1. the sampler, graph vs NumPy, through the runtime ----------------------------------------


class _SamplerGraph(nn.Module):
    def __init__(self, top_k: int, top_p: float, temperature: float) -> None:
        super().__init__()
        self.top_k, self.top_p, self.temperature = top_k, top_p, temperature

    def forward(self, logits, uniforms):
        out = draw_tokens(logits, uniforms, self.top_k, self.top_p, self.temperature)
        return out.to(torch.int32)


class _SemanticGraph(nn.Module):
    """The frame graph's slow draw alone: `Audio8ARGraph._semantic` over one compact row."""

    def __init__(self, config: Audio8Config, sampling: SamplingParams) -> None:
        super().__init__()
        self.config, self.sampling = config, sampling
        self.n_compact = config.semantic_count + 1

    def forward(self, logits, noise_slow, window):
        # looked up when traced, so a fault patched into the graph class is exported here too
        return G.Audio8ARGraph._semantic(self, logits, noise_slow, window)


_SAMPLER_BUNDLES: dict[tuple, Path] = {}
_SAMPLER_TMP: list[tempfile.TemporaryDirectory] = []


def sampler_bundle(
    sizes: Sequence[int] = SAMPLER_SIZES,
    width: int = SAMPLER_WIDTH,
    top_k: int = R.TOP_K,
    top_p: float = R.TOP_P,
    temperature: float = R.TEMPERATURE,
    config: Audio8Config | None = None,
) -> Path:
    """A temp bundle holding graph "sampler" with one function `draw_{N}` per size and
    `semantic` (the slow draw of `config`, default the published one), cached per process: the
    export is done once whatever the number of gate runs. The key holds the graph code it
    traces (`_draw`, `Audio8ARGraph._semantic`), so a patched one is exported afresh."""
    from conversion.core.bundle import BundleWriter
    from conversion.core.export.program import FunctionSpec, GraphSpec

    config = config or Audio8Config()
    code = (G._draw, G.Audio8ARGraph._semantic)
    key = (tuple(sizes), width, top_k, top_p, temperature, config, code)
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
    n_compact = config.semantic_count + 1
    functions.append(
        FunctionSpec(
            "semantic",
            _SemanticGraph(config, SamplingParams.from_config(config)),
            {
                "logits": torch.zeros(1, n_compact),
                "noise_slow": torch.full((2, n_compact), 0.5),
                "window": torch.full((config.ras_window_size,), -1, dtype=torch.int32),
            },
            ["semantic", "normal", "high"],
        )
    )
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


_KINDS = ("eos", "ras", "plain")
_IDS = ("semantic", "normal", "high")  # the semantic function's outputs


def _reference_semantic(
    logits: np.ndarray, u: np.ndarray, windows: np.ndarray, config: Audio8Config
) -> np.ndarray:
    """The reference's slow draw per row -> [rows, 3] vocabulary ids (semantic, normal, high)."""
    d = R.draw_semantic(
        torch.from_numpy(logits),
        torch.from_numpy(u),
        torch.from_numpy(windows.astype(np.int64)),
        config,
        SamplingParams.from_config(config),
    )
    return torch.stack((d.semantic, d.normal, d.high), dim=1).numpy()


def _semantic_case(config: Audio8Config, seed: int, n: int = SEMANTIC_ROWS):
    """Rows for the slow draw: logits [n, 4097] (std `SAMPLER_SCALE`), uniforms [n, 2, 4097],
    RAS windows [n, W] (vocabulary ids, -1 empty) and each row's kind: `eos` (eos's logit
    `EOS_LEADS` above the row's best; half of them with eos in their window), `ras` (the
    window holds the reference's normal draw) or `plain` (a window of random semantic ids)."""
    rng = np.random.default_rng([seed, n, config.semantic_count])
    width = config.semantic_count + 1
    size = config.ras_window_size
    logits = (rng.standard_normal((n, width)) * SAMPLER_SCALE).astype(np.float32)
    u = np.maximum(rng.random((n, 2, width), dtype=np.float32), np.float32(U_MIN))
    windows = np.full((n, size), -1, np.int32)
    kinds = [_KINDS[i % len(_KINDS)] for i in range(n)]
    for i, kind in enumerate(kinds):
        j = i // len(_KINDS)
        if kind == "eos":
            logits[i, -1] = logits[i, :-1].max() + EOS_LEADS[j % len(EOS_LEADS)]
            if j % 4 >= 2:
                windows[i, -1] = config.eos_token_id  # eos in the window never replaces eos
        elif kind == "plain":
            k = 1 + j % size
            windows[i, -k:] = config.semantic_begin_id + rng.integers(0, config.semantic_count, k)
    normal = _reference_semantic(logits, u, windows, config)[:, 1]
    for i, kind in enumerate(kinds):
        if kind == "ras":  # the normal draw seen in the window: RAS takes the high one
            windows[i, -1 - (i // len(_KINDS)) % size] = normal[i]
    return logits, u, windows, kinds


def _semantic_rung(graph_rows: Callable[[], np.ndarray], case: tuple, config: Audio8Config) -> Rung:
    """`sampler.semantic_vs_reference`: the graph's (semantic, normal, high) ids per row
    (`graph_rows()`) vs the reference's `draw_semantic` on the same logits, uniforms and window
    (`case`: `_semantic_case`)."""

    def compute() -> Measured:
        logits, u, windows, kinds = case
        want = _reference_semantic(logits, u, windows, config)
        got = graph_rows()
        same = (got == want).all(axis=1)
        eos = config.eos_token_id
        rows_eos = [i for i, k in enumerate(kinds) if k == "eos"]
        drawn_eos = sum(int(want[i, 0] == eos) for i in rows_eos)
        high = int(((want[:, 0] == want[:, 2]) & (want[:, 0] != want[:, 1])).sum())
        misses = [
            f"row {i} ({kinds[i]}): graph {got[i].tolist()} vs reference {want[i].tolist()}"
            for i in np.flatnonzero(~same)
        ]
        note = (
            f"{int(same.sum())}/{len(kinds)} rows equal (semantic, normal, high ids); eos the "
            f"best candidate in {len(rows_eos)} rows, drawn in {drawn_eos} (eos id {eos}); RAS "
            f"took the high draw in {high} rows"
        )
        return Measured(int(same.sum()), note + _misses_note(misses))

    n = len(case[3])
    return Rung("sampler.semantic_vs_reference", "rows_equal", float(n), compute, True)


def sampler_rungs(
    seed: int = 0, isolate: bool = True, config: Audio8Config | None = None
) -> list[Rung]:
    """The in-graph sampler through the runtime vs the NumPy sampler: 20/20, then 1000/1000;
    then the frame graph's slow draw vs the reference's on `config`'s ids (default: the
    published configuration), every row equal."""
    cfg = SamplingConfig(
        temperature=R.TEMPERATURE, top_k=R.TOP_K, top_p=R.TOP_P, order=AUDIO8_ORDER
    )
    config = config or Audio8Config()
    memo: dict[object, np.ndarray] = {}
    cases = {n: _sampler_case(n, seed) for n in SAMPLER_SIZES}
    semantic = _semantic_case(config, seed)

    def run_graph() -> None:
        # one child process (or session) for both sizes and the slow draw's rows
        from conversion.core.runtime.isolated_session import IsolatedSession
        from conversion.core.runtime.session import Session

        bundle = sampler_bundle(config=config)
        with (IsolatedSession if isolate else Session)(bundle) as s:
            for k, (logits, u) in cases.items():
                out = s.run("sampler", f"draw_{k}", {"logits": logits, "uniforms": u})
                memo[k] = np.asarray(out["tokens"]).reshape(-1)
            logits, u, windows, _ = semantic
            rows = []
            for i in range(len(logits)):
                feed = {"logits": logits[i : i + 1], "noise_slow": u[i], "window": windows[i]}
                out = s.run("sampler", "semantic", feed)
                rows.append([int(np.asarray(out[k]).reshape(-1)[0]) for k in _IDS])
            memo["semantic"] = np.array(rows, np.int64)

    def graph_draws(n: int) -> np.ndarray:
        if n not in memo:
            run_graph()
        return memo[n]

    def graph_rows() -> np.ndarray:
        if "semantic" not in memo:
            run_graph()
        return memo["semantic"]

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
        *(
            Rung(
                f"sampler.graph_vs_numpy[{n}]",
                "draws_equal",
                float(n),
                lambda n=n: compute(n),
                True,
            )
            for n in SAMPLER_SIZES
        ),
        _semantic_rung(graph_rows, semantic, config),
    ]


__all__ = [
    "sampler_rungs",
    "sampler_bundle",
]
