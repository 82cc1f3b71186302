"""The gate and bench half of the model contract: what `voxport gate|bench MODEL` hands a port.

    the model's flags ─▶ its options (its cli.py's `gate_options` / `bench_options`, checked
    before anything loads) ─▶ the snapshot (`port.resolve`) ─▶ `port.check_bundles` (a
    `--bundle` made from other arguments is refused now, not after the oracle ran)
    ─▶ the model in memory (`port.load_model`) ─▶ `port.run_gate(GateRun)`,
    `port.run_mutants(GateRun)` or `port.run_bench(BenchRun)`

`conversion/cli/verbs.py` is the one caller that builds these from the command line; a port
reads only what it needs from them. Every bundle comes from `source` (`BundleSource`): the main
one by `bundle()`, side bundles (other precisions, graph subsets) by `source.get`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conversion.core.bundle_source import BundleSource


@dataclass(frozen=True)
class _Run:
    model: Any  # the snapshot in memory (`ModelPort.load_model`): the oracle, the export's input
    config: Any
    source: BundleSource  # every bundle the run may ask for (`source.loaded` is `model`)
    dtype: str  # --dtype: the main bundle's precision
    seed: int  # the draws' seed
    options: Any = None  # the model's own flags (its cli.py's `gate_options` / `bench_options`)
    json_path: Path | None = None

    @property
    def folder(self) -> Path:
        """The snapshot folder the model was loaded from."""
        return self.source.folder

    @property
    def config_name(self) -> str:
        """--config, as the bundle folders and the gate's record name it."""
        return self.source.config_name

    def bundle(self) -> Path:
        """The main bundle: every graph at `dtype` (reused when current, else exported)."""
        return self.source.get(self.config, self.dtype)


@dataclass(frozen=True)
class GateRun(_Run):
    """`voxport gate MODEL`: the ladder (`ModelPort.run_gate`), or with `mutants` the kill
    table of those faults (`ModelPort.run_mutants`)."""

    stop_on_fail: bool = False
    markdown: Path | None = None
    plot: Path | None = None  # only for a port with `gate_plots`
    mutants: list | None = None  # the faults chosen from the model's catalogue (`--mutants`)


@dataclass(frozen=True)
class BenchRun(_Run):
    """`voxport bench MODEL` (`ModelPort.run_bench`)."""

    repeats: int | None = None  # timed calls per measurement; None: the model's default
    profile: bool = False  # also time every op of each graph called
    workers: int = 1  # pipelines side by side, for a model whose bench uses them
