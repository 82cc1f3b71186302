"""Bundles are atomic, hash-verified, and never serve an old graph's numerics."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from conversion.core.bundle import BundleWriter, load_manifest
from conversion.core.errors import BundleIntegrityError, BundleNotFoundError, UserError
from conversion.core.export.program import FunctionSpec, GraphSpec
from conversion.core.runtime.session import Session
from conversion.selftest import graphs as sg


def _mlp_bundle(dest, seed, overwrite=False):
    spec, inputs = sg.mlp_graph(seed)
    with BundleWriter(dest, "test", overwrite=overwrite, weights_sha256="ab" * 32) as bw:
        bw.add_graph(spec)
    return spec.functions[0].module, inputs


def test_manifest_describes_graphs(tmp_path):
    _mlp_bundle(tmp_path / "b", seed=0)
    m = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert m["format"] == "voxport-bundle/1" and m["model"] == "test"
    assert m["weights_sha256"] == "ab" * 32
    fn = m["graphs"]["mlp"]["functions"]["main"]
    assert fn["inputs"] == [{"name": "x", "shape": [8, 256], "dtype": "float32"}]
    assert fn["outputs"] == [{"name": "y", "shape": [8, 256], "dtype": "float32"}]
    assert len(m["graphs"]["mlp"]["sha256"]) == 64
    assert m["packages"]["coreai-torch"] == "0.4.3"
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "b").stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's 0700


def test_tampered_asset_is_refused(tmp_path):
    dest = tmp_path / "b"
    _mlp_bundle(dest, seed=0)
    weights = next(p for p in (dest / "mlp.aimodel").rglob("*") if p.suffix == ".mlirb")
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(BundleIntegrityError, match=r"mlp\.aimodel.*re-export"):
        Session(dest)


def test_reexport_into_same_path_serves_new_numerics(tmp_path):
    dest = tmp_path / "b"
    old, inputs = _mlp_bundle(dest, seed=0)
    new, _ = _mlp_bundle(dest, seed=1, overwrite=True)
    with Session(dest) as s:
        got = s.run("mlp", "main", {"x": inputs["x"].numpy()})["y"]
    assert np.abs(got - new(inputs["x"]).numpy()).max() < 1e-5
    assert np.abs(got - old(inputs["x"]).numpy()).max() > 1e-2


def test_existing_bundle_needs_overwrite(tmp_path):
    _mlp_bundle(tmp_path / "b", seed=0)
    with pytest.raises(UserError, match="--overwrite"):
        _mlp_bundle(tmp_path / "b", seed=0)


def test_export_that_raises_midway_leaves_nothing(tmp_path):
    class Boom(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom in forward")

    good, _ = sg.conv_graph()
    bad = GraphSpec("bad", [FunctionSpec("main", Boom(), {"x": torch.zeros(2)}, ["y"])])
    with pytest.raises(RuntimeError, match="boom"), BundleWriter(tmp_path / "b", "t") as bw:
        bw.add_graph(good)  # one asset written to the staging folder ...
        bw.add_graph(bad)  # ... then the export fails
    assert os.listdir(tmp_path) == []


def test_failed_reexport_keeps_the_previous_bundle(tmp_path):
    dest = tmp_path / "b"
    _mlp_bundle(dest, seed=0)
    before = (dest / "manifest.json").read_text()
    with pytest.raises(KeyboardInterrupt), BundleWriter(dest, "t", overwrite=True) as bw:
        bw.add_graph(sg.conv_graph()[0])
        raise KeyboardInterrupt
    assert (dest / "manifest.json").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["b"]
    load_manifest(dest)  # still verifies


def test_missing_bundle_and_manifest(tmp_path):
    with pytest.raises(BundleNotFoundError, match="voxport export"):
        load_manifest(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleNotFoundError, match="manifest.json"):
        load_manifest(tmp_path / "empty")


def test_unwritable_destination(tmp_path):
    # A read-only folder stops a user; /proc stops root too (CI runs as root, where os.access
    # says yes to everything: the check must create a file to know).
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    for parent in ([] if os.geteuid() == 0 else [ro]) + [Path("/proc")]:
        with pytest.raises(UserError, match="cannot write"):
            _mlp_bundle(parent / "b", seed=0)
