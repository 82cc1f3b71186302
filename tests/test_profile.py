"""`bench --profile`: per-op time of a bundle's functions on the Linux runtime, with the
inputs the bench really passed (TimedSession keeps each function's first ones)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conversion.core.bundle import BundleWriter
from conversion.core.runtime.profile import profile_bundle, profile_calls, profile_markdown
from conversion.core.runtime.session import Session
from conversion.core.runtime.timed_session import TimedSession
from conversion.selftest import graphs as sg

ROWS = 64


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    dest = tmp_path_factory.mktemp("profile") / "b"
    mlp, _ = sg.mlp_graph(1, rows=ROWS)
    decoder, _ = sg.decoder_graph(1)
    with BundleWriter(dest, "core") as bw:
        bw.add_graph(mlp)
        bw.add_graph(decoder)  # stateful: the profile gives it a fresh state
    return dest


def test_profile_of_the_calls_a_timed_session_made(bundle):
    x = np.random.default_rng(0).standard_normal((ROWS, 256)).astype(np.float32)
    with Session(bundle) as session:
        timed = TimedSession(session)
        timed.run("mlp", "main", {"x": x})
        timed.run("mlp", "main", {"x": np.zeros_like(x)})  # only the first inputs are kept
        sg.greedy_runtime(timed, [1, 2, 3, 4, 5, 6, 7, 8], steps=2)
        assert set(timed.first_inputs) == {"mlp.main", "decoder.prefill", "decoder.decode"}
        np.testing.assert_array_equal(timed.first_inputs["mlp.main"]["x"], x)
        profile = profile_calls(timed)
    assert set(profile) == {"mlp.main", "decoder.prefill", "decoder.decode"}
    mlp = profile["mlp.main"]
    kinds = {row["op"]: row for row in mlp["by_op"]}
    # Mlp is Linear(256 -> 512), GELU, Linear(512 -> 256): its matmuls and its GELU are timed.
    assert any("matmul" in k for k in kinds) and "gelu" in kinds
    assert sum(row["share"] for row in mlp["by_op"]) == pytest.approx(1.0, abs=0.01)
    assert 0 < mlp["ops_ms"] <= mlp["call_ms"] * 1.5
    shapes = " ".join(t for row in mlp["top_dispatches"] for t in row["operands"])
    assert f"tensor<{ROWS}x256xf32>" in shapes  # the recorded input's shape, not a stand-in
    for key in ("decoder.prefill", "decoder.decode"):
        assert profile[key]["by_op"], key  # a stateful function runs (with a fresh state)
    json.dumps(profile)  # goes into the bench's JSON as it is


def test_markdown_lists_each_function_and_its_top_op(bundle):
    x = np.ones((ROWS, 256), np.float32)
    profile = profile_bundle(bundle, {"mlp.main": {"x": x}})
    text = profile_markdown(profile)
    assert text.startswith("### mlp.main: ")
    top = profile["mlp.main"]["by_op"][0]
    assert f"| {top['op']} | {top['ms']:.1f} |" in text
    assert "slowest dispatch:" in text
