"""The Swift package's fixtures are what the Python code writes today: regenerated and held
against the committed ones, so the two hosts cannot drift apart. Integers and text exactly;
float32 arrays within 1e-6 of their largest magnitude (machines differ in SIMD paths) — the
rule of `conversion.fixtures.compare.compare_fixtures`, which `voxport fixtures swift --check`
applies too."""

from pathlib import Path

from conversion.cli.swift_fixtures import compare_fixtures, write_fixtures

COMMITTED = Path(__file__).resolve().parents[1] / "ios" / "Tests" / "Fixtures"


def test_committed_swift_fixtures_are_current(tmp_path):
    write_fixtures(tmp_path)
    problems = compare_fixtures(tmp_path, COMMITTED)
    assert problems == [], "run: voxport fixtures swift\n" + "\n".join(problems)
