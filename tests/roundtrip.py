"""Helpers for tests and self-checks: one module through export, bundle and runtime."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.export.precision import Precision
from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.runtime.session import Session


def export_single(
    module: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    output_names: list[str],
    dest: Path,
    precision: Precision | str = Precision.FP32,
    graph: str = "graph",
    function: str = "main",
) -> Path:
    """A one-graph, one-function bundle at `dest`."""
    spec = GraphSpec(graph, [FunctionSpec(function, module, inputs, output_names)])
    with BundleWriter(dest, model="test", precision=precision, overwrite=True) as bw:
        bw.add_graph(spec)
    return Path(dest)


def run_through_coreai(
    module: torch.nn.Module,
    inputs: dict[str, torch.Tensor],
    output_names: list[str],
    precision: Precision | str = "fp32",
) -> dict[str, np.ndarray]:
    """Export `module` at `precision`, run it once through the Core AI runtime, return outputs."""
    with tempfile.TemporaryDirectory(prefix="voxport-test-") as tmp:
        bundle = export_single(module, inputs, output_names, Path(tmp) / "b", precision)
        with Session(bundle) as s:
            return s.run("graph", "main", {k: v.numpy() for k, v in inputs.items()})
