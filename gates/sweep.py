"""A gate run over several seeds, summed up rung by rung: how many runs passed, the worst value.

A model card prints the worst value over the seeds run, not the best one: the worst is what a
user with an unlucky seed gets. `reports` are `voxport gate --json` documents, each tagged with
the seeds it ran at.
"""

from __future__ import annotations

import math
from typing import Any


def worst_over_seeds(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per rung name, in first-seen order: runs, passes, worst value and its seeds.

    A rung missing from some run (it raised before reporting) counts as a failure there.
    """
    order: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    for report in reports:
        for rung in report.get("rungs", []):
            name = rung["name"]
            if name not in rows:
                order.append(name)
                rows[name] = {
                    "name": name,
                    "metric": rung["metric"],
                    "higher_is_better": rung.get("higher_is_better", True),
                    "threshold": rung["threshold"],
                    "runs": 0,
                    "passed": 0,
                    "worst": None,
                    "worst_seeds": None,
                }
            row = rows[name]
            row["runs"] += 1
            row["passed"] += bool(rung["passed"])
            value = rung["value"]
            if value is None or (isinstance(value, float) and math.isnan(value)):
                value = -math.inf if row["higher_is_better"] else math.inf
            worst = row["worst"]
            if (
                worst is None
                or (row["higher_is_better"] and value < worst)
                or (not row["higher_is_better"] and value > worst)
            ):
                row["worst"], row["worst_seeds"] = value, report.get("seeds")
    total = len(reports)
    for row in rows.values():
        row["missing"] = total - row["runs"]
    return [rows[n] for n in order]


def _fmt(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.4g}"


def markdown(model: str, rows: list[dict[str, Any]], runs: int) -> str:
    """The sweep as a markdown table (what a card pastes)."""
    lines = [
        f"### {model}: worst over {runs} gate runs",
        "",
        "| rung | metric | worst | threshold | passed | worst at (weights seed, seed) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        op = "≥" if r["higher_is_better"] else "≤"
        seeds = r["worst_seeds"] or {}
        at = f"({seeds.get('weights_seed')}, {seeds.get('seed')})" if seeds else "—"
        passed = f"{r['passed']}/{r['runs'] + r['missing']}"
        lines.append(
            f"| {r['name']} | {r['metric']} | {_fmt(r['worst'])} | {op} {_fmt(r['threshold'])} "
            f"| {passed} | {at} |"
        )
    return "\n".join(lines) + "\n"
