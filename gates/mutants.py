"""Mutation-tested gates: deliberate faults put into the port, never the oracle, and which rung
of the ladder catches each one.

A rung that no broken port can fail proves nothing. Each model lists the faults a new user's
bug would be (`Mutant`s, in its `mutants.py`): `inject` is a context manager that breaks the
port for as long as it is open — a host step patched, or a graph's torch code patched while that
one graph is re-exported (`graph` names it). `run_catalogue` runs the model's ladder once
unbroken (the baseline must pass) and once per fault, through `evaluate`, a callback the model
writes (its oracle recorded once, outside every fault), and returns the kill table: for each
fault, the rungs that failed. A fault that no rung fails survives; a rung that fails for no
fault is idle. Either is a failure of the gate, not of the port: `KillTable.passed` is False.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core.errors import UserError
from conversion.core.paths import write_json, write_text_file
from gates.ladder import LadderReport, Rung, run_ladder


@dataclass(frozen=True)
class Mutant:
    """One deliberate fault in the port.

    ``name`` is a short id (``vocoder-ignores-har``), ``fault`` one line saying what is wrong;
    ``inject()`` returns a context manager inside which the port has the fault. ``graph`` is the
    graph the fault lives in (re-exported with it), None for a fault in a host step.
    """

    name: str
    fault: str
    inject: Callable[[], AbstractContextManager[Any]]
    graph: str | None = None

    @property
    def where(self) -> str:
        return "host" if self.graph is None else f"graph {self.graph}"


@dataclass
class MutantOutcome:
    """What the ladder said with one fault in: the rungs that failed (``killed_by``)."""

    name: str
    fault: str
    where: str
    killed_by: list[str]
    error: str
    seconds: float

    @property
    def killed(self) -> bool:
        return bool(self.killed_by)


@dataclass
class KillTable:
    """The catalogue's result: one row per fault, the baseline's rungs as the columns."""

    model: str
    rungs: list[str]
    baseline_failures: list[str]
    outcomes: list[MutantOutcome] = field(default_factory=list)

    @property
    def killed(self) -> int:
        return sum(o.killed for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def survivors(self) -> list[str]:
        return [o.name for o in self.outcomes if not o.killed]

    @property
    def idle_rungs(self) -> list[str]:
        """Rungs that no fault made fail (each should be fixed or removed)."""
        used = {r for o in self.outcomes for r in o.killed_by}
        return [r for r in self.rungs if r not in used]

    @property
    def passed(self) -> bool:
        """The baseline passed and every fault was killed (idle rungs are reported, a goal)."""
        return not self.baseline_failures and bool(self.outcomes) and not self.survivors

    def kills_per_rung(self) -> dict[str, int]:
        return {r: sum(r in o.killed_by for o in self.outcomes) for r in self.rungs}

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "passed": self.passed,
            "killed": self.killed,
            "total": self.total,
            "baseline_failures": self.baseline_failures,
            "survivors": self.survivors,
            "idle_rungs": self.idle_rungs,
            "kills_per_rung": self.kills_per_rung(),
            "rungs": self.rungs,
            "mutants": [
                {
                    "name": o.name,
                    "fault": o.fault,
                    "where": o.where,
                    "killed": o.killed,
                    "killed_by": o.killed_by,
                    "error": o.error,
                    "seconds": round(o.seconds, 2),
                }
                for o in self.outcomes
            ],
        }

    def markdown(self) -> str:
        """The kill table a card prints: faults killed / total, and by which rungs."""
        index = {r: i for i, r in enumerate(self.rungs, start=1)}
        lines = [
            f"### {self.model}: {self.killed}/{self.total} faults killed",
            "",
            "| fault | where | killed by (rung numbers) | seconds |",
            "|---|---|---|---|",
        ]
        for o in self.outcomes:
            by = ", ".join(str(index.get(r, r)) for r in o.killed_by) or "**survived**"
            if o.error:
                by += f" ({o.error})"
            lines.append(f"| `{o.name}`: {o.fault} | {o.where} | {by} | {o.seconds:.0f} |")
        lines += ["", "| # | rung | faults it kills |", "|---|---|---|"]
        for r, n in self.kills_per_rung().items():
            lines.append(f"| {index[r]} | {r} | {n if n else '**none**'} |")
        if self.baseline_failures:
            lines += ["", f"**The unbroken port failed**: {', '.join(self.baseline_failures)}"]
        return "\n".join(lines) + "\n"


def select(catalogue: Sequence[Mutant], spec: str) -> list[Mutant]:
    """``all`` or comma-separated names, in the catalogue's order; an unknown name is a one-line
    error listing the known ones."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names or names == ["all"]:
        return list(catalogue)
    known = {m.name: m for m in catalogue}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(
            f"unknown fault(s) {', '.join(unknown)}: --mutants takes all or names among "
            + ", ".join(known)
        )
    return [m for m in catalogue if m.name in names]


def check_catalogue(catalogue: Sequence[Mutant]) -> None:
    """Names are unique (a table row per fault)."""
    seen: set[str] = set()
    for m in catalogue:
        if m.name in seen:
            raise ValueError(f"fault {m.name!r} is listed twice")
        seen.add(m.name)


def run_catalogue(
    model: str,
    mutants: Sequence[Mutant],
    evaluate: Callable[[Mutant | None], LadderReport],
    on_mutant: Callable[[int, int, Mutant], None] | None = None,
) -> KillTable:
    """The baseline (``evaluate(None)``), then ``evaluate(m)`` for each fault.

    ``evaluate`` builds whatever the fault needs (a re-exported graph) and runs the ladder with
    it in; it must leave the port as it found it. An exception from ``evaluate`` (a mutated graph
    that does not export) is recorded as the row's error: a fault that never reaches the ladder
    is not a kill.
    """
    check_catalogue(mutants)
    baseline = evaluate(None)
    table = KillTable(
        model=model,
        rungs=[r.name for r in baseline.rungs],
        baseline_failures=[r.name for r in baseline.failures],
    )
    for i, mutant in enumerate(mutants, start=1):
        if on_mutant is not None:
            on_mutant(i, len(mutants), mutant)
        start = time.perf_counter()
        error = ""
        killed_by: list[str] = []
        try:
            report = evaluate(mutant)
            killed_by = [r.name for r in report.failures]
        except Exception as exc:  # noqa: BLE001 - the row says what broke
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        table.outcomes.append(
            MutantOutcome(
                name=mutant.name,
                fault=mutant.fault,
                where=mutant.where,
                killed_by=killed_by,
                error=error,
                seconds=time.perf_counter() - start,
            )
        )
    return table


@contextlib.contextmanager
def patched(obj: Any, name: str, value: Any) -> Iterator[None]:
    """`obj.name = value` for the block."""
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


def wrapped(obj: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]):
    """`obj.name` replaced by `make(original)` for the block."""
    return lambda: patched(obj, name, make(getattr(obj, name)))


def first_kill_ladder(
    model: str, rungs: Sequence[Rung], cheap_first: Sequence[str]
) -> LadderReport:
    """The rungs, cheapest first (by the first of `cheap_first`'s name prefixes each starts
    with; the rest last), up to the first that fails: CI's cheaper mode, where a fault is
    killed once one rung of the real ladder fails it and the rest are not run."""

    def cost(rung: Rung) -> int:
        return next((i for i, p in enumerate(cheap_first) if rung.name.startswith(p)), 99)

    done = []
    for rung in sorted(rungs, key=cost):
        done += run_ladder(model, [rung], progress=False).rungs
        if not done[-1].passed:
            break
    return LadderReport(model, done)


def emit_table(
    table: KillTable, json_path: Path | None = None, markdown: Path | None = None
) -> None:
    """Print the kill table; write it as JSON / markdown when asked."""
    print(table.markdown(), flush=True)
    if table.survivors:
        print(f"[{table.model}] survived: {', '.join(table.survivors)}", flush=True)
    if table.idle_rungs:
        print(f"[{table.model}] rungs that killed no fault: {'; '.join(table.idle_rungs)}")
    if json_path is not None:
        write_json(json_path, table.to_dict())
    if markdown is not None:
        write_text_file(markdown, table.markdown())


def result_replaced(obj: Any, name: str, **changes: Any):
    """`obj.name(self)` (a method returning a dataclass, e.g. a speak options' sampling config)
    answering with `changes` made to its result, for the block."""
    return wrapped(
        obj, name, lambda original: lambda self: dataclasses.replace(original(self), **changes)
    )


class SessionProxy:
    """A runtime session whose `run` edits the feed of one graph's functions (those whose name
    starts with `function`) before the real call; everything else is the session's."""

    def __init__(self, session: Any, graph: str, function: str, edit: Callable[[dict], dict]):
        self._session, self._graph, self._function, self._edit = session, graph, function, edit

    def run(self, graph: str, function: str, feed: dict, **kwargs: Any) -> Any:
        if graph == self._graph and function.startswith(self._function):
            feed = self._edit(dict(feed))
        return self._session.run(graph, function, feed, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def feed_edited(module: Any, name: str, graph: str, function: str, edit: Callable[[dict], dict]):
    """`module.name(session, ...)` called with a session that edits `graph.function`'s feed."""

    def make(original):
        def faulty(session, *args, **kwargs):
            return original(SessionProxy(session, graph, function, edit), *args, **kwargs)

        return faulty

    return wrapped(module, name, make)


def plus_one(key: str, delta: int = 1) -> Callable[[dict], dict]:
    """A feed edit: the integer input `key` moved by `delta` (an index or length off by one)."""

    def edit(feed: dict) -> dict:
        feed[key] = np.asarray(feed[key]) + np.int32(delta)
        return feed

    return edit


def run_bundle_mutants(
    model: str,
    mutants: Sequence[Mutant],
    bundle: Path,
    open_pipeline: Callable[[Path], AbstractContextManager[Any]],
    rungs: Callable[[Any], Sequence[Rung]],
    rebuild: Callable[[str, Path], Path],
    cheap_first: Sequence[str],
    first_kill: bool = False,
) -> KillTable:
    """The kill table of a model whose port is a bundle opened by `open_pipeline`: the baseline
    and every host fault run `rungs(pipeline)` on the baseline `bundle`, opened once; a graph
    fault's ladder runs on `rebuild(graph, dest)`, a copy of the bundle with that graph
    re-exported while the fault is in, in a temp folder removed afterwards. With `first_kill`
    each fault's ladder stops at its first failing rung, cheapest first (the baseline runs
    whole)."""

    def ladder(pipeline: Any, whole: bool) -> LadderReport:
        if whole or not first_kill:
            return run_ladder(model, rungs(pipeline), progress=False)
        return first_kill_ladder(model, rungs(pipeline), cheap_first)

    with open_pipeline(bundle) as baseline:

        def evaluate(mutant: Mutant | None) -> LadderReport:
            if mutant is None:
                return ladder(baseline, whole=True)
            if mutant.graph is None:
                with mutant.inject():
                    return ladder(baseline, whole=False)
            with tempfile.TemporaryDirectory(prefix=f"voxport-{model}-mutant-") as tmp:
                with mutant.inject():
                    path = rebuild(mutant.graph, Path(tmp) / "bundle")
                with open_pipeline(path) as pipeline:
                    return ladder(pipeline, whole=False)

        def progress(i: int, n: int, mutant: Mutant) -> None:
            print(f"{model} mutants: [{i}/{n}] {mutant.name} ({mutant.where})", file=sys.stderr)

        return run_catalogue(model, mutants, evaluate, on_mutant=progress)
