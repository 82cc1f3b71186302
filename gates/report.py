"""Render a ``LadderReport``: a rich table for people, JSON for CI, markdown for model cards."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from conversion.core.paths import write_json, write_text_file
from gates.ladder import LadderReport, RungResult


def format_value(x: Any) -> str:
    """Six significant digits: enough to tell a cosine of 0.999987 from 1."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "—"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.6g}"
    return str(x)


def _threshold(r: RungResult) -> str:
    return f"{'≥' if r.higher_is_better else '≤'} {format_value(r.threshold)}"


def render_table(report: LadderReport, console: Console | None = None) -> None:
    """Print the ladder as a table, verdicts coloured."""
    console = console or Console()
    verdict = "[green]PASS[/green]" if report.passed else "[red]FAIL[/red]"
    table = Table(title=f"{report.model}: {verdict}")
    for col in ("rung", "metric", "value", "threshold", "result"):
        table.add_column(col, justify="right" if col in ("value", "threshold") else "left")
    for r in report.rungs:
        result = "[green]pass[/green]" if r.passed else "[bold red]FAIL[/bold red]"
        table.add_row(Text(r.name), r.metric, format_value(r.value), _threshold(r), result)
    console.print(table)
    for r in report.rungs:
        if r.detail:
            style = "dim" if r.passed else "red"
            console.print(Text.assemble((r.name, style), ": ", r.detail))


def to_json(report: LadderReport, path: str | Path) -> Path:
    """Write ``report.to_dict()`` as strict JSON (non-finite numbers are null)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, report.to_dict())
    return path


def _md_cell(x: Any) -> str:
    return format_value(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(report: LadderReport) -> str:
    """GitHub markdown table of the ladder, for a model card."""
    lines = [
        "| Rung | Metric | Value | Threshold | Result |",
        "|---|---|---:|---:|---|",
    ]
    for r in report.rungs:
        result = "pass" if r.passed else "**FAIL**"
        cells = [r.name, r.metric, format_value(r.value), _threshold(r), result]
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    notes = [f"- {r.name}: {r.detail}" for r in report.rungs if r.detail]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def bench_table_markdown(figures: dict[str, Any]) -> str:
    """GitHub markdown table of benchmark figures.

    ``figures`` is either nested, ``{row: {column: value}}`` (e.g. ``{"fp16": {"RTF": 0.05,
    "first audio ms": 120}}``; columns are the union in first-seen order, missing cells
    shown as "—"), or flat, ``{name: value}``, which becomes a two-column table.
    """
    if figures and all(isinstance(v, dict) for v in figures.values()):
        columns: list[str] = []
        for row in figures.values():
            columns.extend(c for c in row if c not in columns)
        lines = [
            "| | " + " | ".join(_md_cell(c) for c in columns) + " |",
            "|---|" + "---:|" * len(columns),
        ]
        for name, row in figures.items():
            cells = [_md_cell(row.get(c)) for c in columns]
            lines.append(f"| {_md_cell(name)} | " + " | ".join(cells) + " |")
    else:
        lines = ["| Figure | Value |", "|---|---:|"]
        lines += [f"| {_md_cell(k)} | {_md_cell(v)} |" for k, v in figures.items()]
    return "\n".join(lines) + "\n"


def emit(
    report: LadderReport,
    json_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
) -> None:
    """What `voxport gate` does with a report: the table always, JSON and markdown on request."""
    render_table(report)
    if json_path:
        to_json(report, json_path)
    if markdown_path:
        write_text_file(markdown_path, to_markdown(report))
