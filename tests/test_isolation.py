"""A runtime abort in the child becomes a RuntimeCrash naming the graph; errors keep their type."""

import os
import signal

import numpy as np
import pytest

from conversion.core.bundle import BundleWriter
from conversion.core.errors import InputSpecError, RuntimeCrash
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.selftest import graphs as sg


@pytest.fixture()
def mlp_bundle(tmp_path):
    spec, inputs = sg.mlp_graph(seed=4)
    with BundleWriter(tmp_path / "b", "test") as bw:
        bw.add_graph(spec)
    return tmp_path / "b", spec.functions[0].module, inputs


def test_isolated_session_parity_and_typed_errors(mlp_bundle):
    bundle, module, inputs = mlp_bundle
    with IsolatedSession(bundle) as s:
        got = s.run("mlp", "main", inputs)["y"]
        assert np.abs(got - module(inputs["x"]).numpy()).max() < 1e-5
        with pytest.raises(InputSpecError, match="shape"):
            s.run("mlp", "main", {"x": np.zeros((3, 256), np.float32)})
        assert s.alive  # a user error does not kill the child


def test_runtime_abort_becomes_runtime_crash(mlp_bundle):
    bundle, _, inputs = mlp_bundle
    # A truncated program no longer reaches the runtime (tests/test_program_check.py): the
    # child is aborted from outside instead, as the runtime aborts it (SIGABRT).
    with IsolatedSession(bundle) as s:
        os.kill(s._proc.pid, signal.SIGABRT)
        with pytest.raises(RuntimeCrash, match=r"graph 'mlp'.*SIGABRT"):
            s.run("mlp", "main", inputs)
