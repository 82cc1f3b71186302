"""The Swift Turbo hosts' fixtures (ios/Tests/Fixtures/chatterbox_turbo/{t3,pipeline}) are the
ones `conversion.chatterbox_turbo.swift_fixtures` writes now: regenerate with `voxport fixtures
swift` after changing the host, the sampler or the graph."""

from __future__ import annotations

import json

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)

from conversion.chatterbox_turbo import swift_fixtures
from conversion.fixtures.compare import compare_fixtures


def test_committed_swift_fixtures_are_current(tmp_path):
    swift_fixtures.write_swift_fixtures(tmp_path)
    stale = compare_fixtures(tmp_path, swift_fixtures.FOLDER)
    assert stale == [], f"{stale}: run voxport fixtures swift"
    # The case the Swift loop test replays: a drawn stop, the start token drawn and fed back.
    case = json.loads((tmp_path / "case.json").read_text())
    assert case["stopped"] and 6561 in case["tokens"]
    assert case["draws"] == len(case["tokens"]) + 1 == len(case["calls"])


def test_committed_pipeline_fixtures_are_current(tmp_path):
    swift_fixtures.write_pipeline_fixtures(tmp_path)
    stale = compare_fixtures(tmp_path, swift_fixtures.PIPELINE_FOLDER)
    assert stale == [], f"{stale}: run voxport fixtures swift"
    # What the Swift pipeline test leans on: a start token drawn mid-sequence (dropped, what
    # follows kept), the silence tail, a stop, and the mean-flow loop's two steps.
    case = json.loads((tmp_path / "pipeline.json").read_text())
    assert 6561 in case["tokens"] and case["stopped"]
    assert case["speech_tokens"] == [t for t in case["tokens"] if t < 6561] + [4299] * 3
    assert case["steps"] == 2 and case["calls"].count("flow_estimator.estimate_F64") == 2
