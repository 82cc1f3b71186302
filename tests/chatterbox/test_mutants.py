"""Chatterbox's fault catalogue (conversion/chatterbox/mutants.py) against the reduced gate:
the unbroken port passes every rung, and every fault makes at least one rung fail at CI's
seed. CI's cheaper mode: each fault's ladder stops at its first failing rung (the baseline runs
whole); the card's table (`voxport gate chatterbox --config reduced --mutants`) runs every rung.
The bundle is the reduced one under bundles/ (exported once, shared with the other tests);
graph faults re-export their one graph at its smallest bucket into a temp copy."""

import pytest

from conversion.chatterbox.mutants import CATALOGUE, run_mutants
from conversion.chatterbox.port import PORT
from conversion.chatterbox.weights import load_model
from conversion.core.bundle_source import BundleSource


@pytest.mark.slow
def test_every_fault_is_killed_and_the_baseline_passes():
    folder, config = PORT.resolve("random", "reduced", 0)
    model = load_model(folder, config)
    table = run_mutants(model, config, BundleSource(PORT, folder, "reduced", loaded=model), 0,
                        first_kill=True)  # fmt: skip
    print("\n" + table.markdown())
    assert table.baseline_failures == []
    assert table.total == len(CATALOGUE)
    assert table.survivors == [], [(o.name, o.error) for o in table.outcomes if not o.killed]
    assert table.passed
