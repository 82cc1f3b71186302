"""The kill table: a fault no rung fails survives, a rung no fault fails is idle, a broken
baseline fails the table, and `--mutants` picks faults by name."""

from __future__ import annotations

import contextlib
import json

import pytest

from conversion.core.errors import UserError
from gates.ladder import Rung, run_ladder
from gates.mutants import KillTable, Mutant, emit_table, run_catalogue, select

# A toy "port": a scale and an offset that the rungs check against the "oracle" values 2 and 1.
PORT = {"scale": 2.0, "offset": 1.0}


@contextlib.contextmanager
def _set(key: str, value: float):
    old = PORT[key]
    PORT[key] = value
    try:
        yield
    finally:
        PORT[key] = old


def _evaluate(mutant):
    with mutant.inject() if mutant is not None else contextlib.nullcontext():
        rungs = [
            Rung("scale", "max_abs", 1e-6, lambda: (2.0, PORT["scale"])),
            Rung("offset", "max_abs", 1e-6, lambda: (1.0, PORT["offset"])),
        ]
        return run_ladder("toy", rungs, progress=False)


CATALOGUE = (
    Mutant("scale-off", "scale 2 → 3", lambda: _set("scale", 3.0)),
    Mutant("offset-off", "offset 1 → 0", lambda: _set("offset", 0.0), graph="toy"),
    Mutant("offset-same", "offset rewritten with its own value", lambda: _set("offset", 1.0)),
)


def test_a_fault_no_rung_fails_survives_and_the_table_fails():
    table = run_catalogue("toy", CATALOGUE, _evaluate)
    assert [o.killed_by for o in table.outcomes] == [["scale"], ["offset"], []]
    assert (table.killed, table.total) == (2, 3)
    assert table.survivors == ["offset-same"]
    assert not table.passed
    assert PORT == {"scale": 2.0, "offset": 1.0}  # every fault undone


def test_every_fault_killed_passes_and_an_idle_rung_is_named():
    table = run_catalogue("toy", CATALOGUE[:1], _evaluate)
    assert table.passed
    assert table.idle_rungs == ["offset"]
    assert table.kills_per_rung() == {"scale": 1, "offset": 0}


def test_a_broken_baseline_fails_the_table_whatever_the_kills():
    with _set("offset", 5.0):
        table = run_catalogue("toy", CATALOGUE[:1], _evaluate)
    assert table.baseline_failures == ["offset"]
    assert not table.passed


def test_a_fault_that_raises_before_the_ladder_is_not_a_kill():
    def boom():
        raise RuntimeError("export failed\nsecond line")

    table = run_catalogue("toy", [Mutant("boom", "cannot export", boom)], _evaluate)
    assert table.outcomes[0].error == "RuntimeError: export failed"
    assert not table.outcomes[0].killed and not table.passed


def test_select_by_name_keeps_catalogue_order_and_names_unknown_faults():
    assert [m.name for m in select(CATALOGUE, "offset-off,scale-off")] == [
        "scale-off",
        "offset-off",
    ]
    assert len(select(CATALOGUE, "all")) == 3
    with pytest.raises(UserError, match="unknown fault.*nope.*scale-off"):
        select(CATALOGUE, "nope")


def test_a_name_listed_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        run_catalogue("toy", [CATALOGUE[0], CATALOGUE[0]], _evaluate)


def test_the_table_is_written_as_json_and_markdown(tmp_path, capsys):
    table: KillTable = run_catalogue("toy", CATALOGUE, _evaluate)
    emit_table(table, tmp_path / "k.json", tmp_path / "k.md")
    doc = json.loads((tmp_path / "k.json").read_text())
    assert doc["killed"] == 2 and doc["survivors"] == ["offset-same"]
    assert doc["mutants"][1]["where"] == "graph toy"
    md = (tmp_path / "k.md").read_text()
    assert "2/3 faults killed" in md and "**survived**" in md
    assert "survived: offset-same" in capsys.readouterr().out
