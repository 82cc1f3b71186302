"""Shared oracle tooling: the fixture format, the recorder, and draw replay."""

from oracles.fixture import (
    Fixture,
    FixtureError,
    fixture_paths,
    load_fixture,
    package_versions,
    save_fixture,
)
from oracles.recorder import DrawLog, Recorder, capture_random_draws
from oracles.replay import ReplayError, compare_to_fixture, replay_random_draws

__all__ = [
    "DrawLog",
    "Fixture",
    "FixtureError",
    "Recorder",
    "ReplayError",
    "capture_random_draws",
    "compare_to_fixture",
    "fixture_paths",
    "load_fixture",
    "package_versions",
    "replay_random_draws",
    "save_fixture",
]
