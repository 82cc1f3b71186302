"""Graphs exported side by side (`BundleWriter.add_graphs(workers=N)`): the same bundle as one
at a time, the manifest in spec order, and a worker's failure raised in the parent with
nothing left behind."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from torch import nn

from conversion.core.bundle import BundleWriter, load_manifest
from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.runtime.session import Session
from conversion.selftest import graphs as sg


def _specs() -> list[GraphSpec]:
    conv, _ = sg.conv_graph(3)
    mlp, _ = sg.mlp_graph(3)
    return [conv, mlp]


def _export(dest, specs, workers):
    steps: list[tuple[str, str]] = []
    with BundleWriter(dest, "core") as bw:
        bw.add_graphs(specs, workers=workers, on_function=lambda g, fn: steps.append((g, fn)))
    return steps


def test_side_by_side_equals_one_at_a_time(tmp_path):
    specs = _specs()
    serial_steps = _export(tmp_path / "serial", specs, workers=1)
    parallel_steps = _export(tmp_path / "parallel", specs, workers=2)
    serial, parallel = load_manifest(tmp_path / "serial"), load_manifest(tmp_path / "parallel")
    assert list(parallel.graphs) == ["conv", "mlp"]  # spec order, whichever finished first
    assert sorted(parallel_steps) == sorted(serial_steps) == [("conv", "main"), ("mlp", "main")]
    for g in ("conv", "mlp"):
        assert parallel.graphs[g]["functions"] == serial.graphs[g]["functions"]
    x = {g: spec.functions[0].inputs for g, spec in zip(("conv", "mlp"), specs, strict=True)}
    with Session(tmp_path / "serial") as a, Session(tmp_path / "parallel") as b:
        for g, inputs in x.items():
            arrays = {k: v.numpy() for k, v in inputs.items()}
            want, got = a.run(g, "main", arrays)["y"], b.run(g, "main", arrays)["y"]
            np.testing.assert_array_equal(got, want)


class _Fails(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("this graph cannot be traced")


class _Dies(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        os._exit(3)  # a worker killed outright (OOM, a runtime abort) reports nothing


@pytest.mark.parametrize(
    ("module", "message"),
    [(_Fails(), "cannot be traced"), (_Dies(), "exporting graph 'bad' died \\(exit code 3\\)")],
)
def test_a_failing_worker_is_raised_and_leaves_no_bundle(tmp_path, module, message):
    bad = GraphSpec("bad", [FunctionSpec("main", module, {"x": torch.zeros(1, 4)}, ["y"])])
    with pytest.raises((ValueError, RuntimeError), match=message):
        _export(tmp_path / "b", [_specs()[1], bad], workers=2)
    assert not (tmp_path / "b").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no staging folder either
