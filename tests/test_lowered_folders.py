"""Lowered assets on disk: every process's are removed, however it ends.

The runtime lowers each asset to an ODIX folder in the temp folder for the process's life. Its
own `executable()` removes that folder only when its context exits, which a `voxport serve`
worker ended by `os._exit` or a killed child never runs: a CI run once filled the disk with
them (70-90 MB a reduced bundle per child). Each test here points the temp folder at its own
(`TMPDIR` for the children, `tempfile.tempdir` for this process) and counts what is left.
"""

from __future__ import annotations

import os
import signal
import tempfile

import numpy as np
import pytest

from conversion.core.bundle import BundleWriter
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.session import LOWERED_PREFIX, Session
from conversion.selftest import graphs as sg


@pytest.fixture(scope="module")
def mlp_bundle(tmp_path_factory):
    spec, inputs = sg.mlp_graph(seed=5)
    dest = tmp_path_factory.mktemp("lowered") / "b"
    with BundleWriter(dest, "test") as bw:
        bw.add_graph(spec)
    return dest, inputs


@pytest.fixture()
def temp_folder(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _left(folder):
    """What lowering left in `folder`: our named folders and the runtime's anonymous ones."""
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".aimodelx" or p.is_dir())


def test_a_session_lowers_into_its_own_folder_and_removes_it(mlp_bundle, temp_folder):
    bundle, inputs = mlp_bundle
    with Session(bundle) as s:
        s.run("mlp", "main", inputs)
        (mine,) = _left(temp_folder)
        assert mine.startswith(f"{LOWERED_PREFIX}{os.getpid()}-")
        assert any((temp_folder / mine / "mlp.aimodelx").iterdir())
    assert _left(temp_folder) == []


def test_a_worker_ended_by_close_leaves_nothing(mlp_bundle, temp_folder):
    bundle, inputs = mlp_bundle
    with IsolatedSession(bundle) as s:
        s.run("mlp", "main", inputs)
        # the child's lowered folder, while it runs (beside its own temp folder)
        assert len([n for n in _left(temp_folder) if n.startswith(LOWERED_PREFIX)]) == 1
    # The child ends with os._exit (serve's `_exit_now`): the runtime's teardown never runs.
    assert _left(temp_folder) == []


def test_a_killed_workers_folder_is_swept_by_the_next_session(mlp_bundle, temp_folder):
    bundle, inputs = mlp_bundle
    live = IsolatedSession(bundle)
    killed = IsolatedSession(bundle)
    try:
        live_pid, killed_pid = live._proc.pid, killed._proc.pid
        os.kill(killed_pid, signal.SIGKILL)
        killed._proc.wait()
        names = _left(temp_folder)
        assert any(n.startswith(f"{LOWERED_PREFIX}{killed_pid}-") for n in names)
        with Session(bundle) as s:
            y = s.run("mlp", "main", inputs)["y"]
            names = _left(temp_folder)
            assert not any(n.startswith(f"{LOWERED_PREFIX}{killed_pid}-") for n in names)
            # A live worker's folder is left alone, and it still answers from it.
            assert any(n.startswith(f"{LOWERED_PREFIX}{live_pid}-") for n in names)
            assert np.array_equal(live.run("mlp", "main", inputs)["y"], y)
    finally:
        killed.close()
        live.close()
    assert _left(temp_folder) == []
