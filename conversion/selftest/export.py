"""Export the self-test bundle: every self-test graph at the precision `gate core` checks it at."""

from __future__ import annotations

from pathlib import Path

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.progress import progress_steps

from .graphs import graph_specs


def build_bundle(
    dest: Path,
    seed: int,
    precision: Precision | None = None,
    overwrite: bool = True,
    only: list[str] | None = None,
) -> Path:
    """Export the self-test graphs (at their gate precisions, or all at `precision`)."""
    specs = graph_specs(seed)
    if precision is not None:
        specs = {k: (s, precision) for k, (s, p) in specs.items() if p is Precision.FP32}
    if only is not None:
        specs = {k: v for k, v in specs.items() if k in only}
    with (
        progress_steps(len(specs), "export core") as bar,
        BundleWriter(
            dest,
            "core",
            precision=precision or Precision.FP32,
            overwrite=overwrite,
            config={"seed": seed},
        ) as bw,
    ):
        for name, (spec, prec) in specs.items():
            bw.add_graph(spec, precision=prec)
            bar.step(f"{name} ({prec.value})")
    return dest
