"""Chatterbox Turbo's fault catalogue (conversion/chatterbox_turbo/mutants.py) against the
reduced gate: the unbroken port passes every rung, and every fault makes at least one rung
fail at CI's seed. CI's cheaper mode: each fault's ladder stops at its first failing rung
(the baseline runs whole); the card's table (`voxport gate chatterbox_turbo --config reduced
--mutants all`) runs every rung. Graph faults re-export their one graph at its smallest bucket
into a temp copy of the reduced bundle."""

import pytest

from conversion.chatterbox_turbo.mutants import CATALOGUE, run_mutants
from conversion.chatterbox_turbo.port import PORT
from conversion.core.bundle_source import BundleSource
from conversion.core.runs import GateRun


@pytest.mark.slow
def test_every_fault_is_killed_and_the_baseline_passes():
    folder, config = PORT.resolve("random", "reduced", 0)
    model = PORT.load_model(folder, config)
    source = BundleSource(PORT, folder, "reduced", loaded=model)
    run = GateRun(model=model, config=config, source=source, dtype="fp32", seed=0)
    table = run_mutants(run, first_kill=True)
    print("\n" + table.markdown())
    assert table.baseline_failures == []
    assert table.total == len(CATALOGUE)
    assert table.survivors == [], [(o.name, o.error) for o in table.outcomes if not o.killed]
    assert table.passed
