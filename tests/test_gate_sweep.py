"""The seed sweep: its plan, the flags it hands each run, and the worst-over-seeds summary."""

from __future__ import annotations

import math

import pytest

from conversion.cli import sweep as cli_sweep
from conversion.cli.main import main
from gates.sweep import markdown, worst_over_seeds


def _report(seeds, rungs):
    return {
        "model": "m",
        "passed": all(p for _, _, p, _ in rungs),
        "seeds": {"weights_seed": seeds[0], "seed": seeds[1]},
        "rungs": [
            {"name": n, "metric": "x", "value": v, "threshold": 0.9, "passed": p,
             "higher_is_better": hib}
            for n, v, p, hib in rungs
        ],
    }  # fmt: skip


def test_worst_is_the_minimum_when_higher_is_better_and_the_maximum_otherwise():
    reports = [
        _report((0, 0), [("cos", 0.99, True, True), ("err", 0.01, True, False)]),
        _report((1, 0), [("cos", 0.95, True, True), ("err", 0.30, False, False)]),
        _report((0, 3), [("cos", 0.97, True, True), ("err", 0.02, True, False)]),
    ]
    rows = {r["name"]: r for r in worst_over_seeds(reports)}
    assert rows["cos"]["worst"] == 0.95 and rows["cos"]["worst_seeds"] == {
        "weights_seed": 1,
        "seed": 0,
    }
    assert rows["err"]["worst"] == 0.30 and (rows["err"]["passed"], rows["err"]["runs"]) == (2, 3)
    table = markdown("m", list(rows.values()), 3)
    assert "| cos | x | 0.95 | ≥ 0.9 | 3/3 | (1, 0) |" in table
    assert "| err | x | 0.3 | ≤ 0.9 | 2/3 | (1, 0) |" in table


def test_a_rung_missing_from_a_run_or_unmeasured_counts_against_it():
    reports = [
        _report((0, 0), [("cos", 0.99, True, True), ("late", 1.0, True, True)]),
        _report((0, 1), [("cos", None, False, True)]),  # NaN written as null; 'late' never ran
    ]
    rows = {r["name"]: r for r in worst_over_seeds(reports)}
    assert rows["cos"]["worst"] == -math.inf and rows["cos"]["passed"] == 1
    assert rows["late"]["missing"] == 1
    assert "| late | x | 1 | ≥ 0.9 | 1/2 |" in markdown("m", list(rows.values()), 2)


def test_the_runs_get_their_own_seed_and_report_flags():
    argv = ["gate", "chatterbox", "--weights", "random", "--seeds", "0,1", "--seed=4",
            "--weights-seeds", "2,3", "--json", "out.json", "--config", "reduced"]  # fmt: skip
    assert cli_sweep._child_argv(argv) == [
        "gate", "chatterbox", "--weights", "random", "--config", "reduced",
    ]  # fmt: skip


@pytest.mark.parametrize("bad", ["1,x", ","])
def test_a_bad_seed_list_is_one_line(bad, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["gate", "core", "--seeds", bad])
    assert caught.value.code == 2
    assert "seed" in capsys.readouterr().err.strip().splitlines()[-1]


def test_weights_seeds_without_random_weights_is_one_line(capsys):
    """Kokoro's real weights (its default) are one set: a weights-seed sweep over them would
    gate the same export five times and call it five seeds."""
    assert main(["gate", "kokoro", "--config", "reduced", "--weights-seeds", "0,1"]) == 2
    assert "--weights random" in capsys.readouterr().err.strip().splitlines()[-1]
