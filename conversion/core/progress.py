"""Progress for long work: a rich bar on a terminal, plain lines otherwise (CI logs, pipes)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


class Steps:
    """Advance with a label; `done` counts finished steps."""

    def __init__(self, advance) -> None:
        self._advance = advance
        self.done = 0

    def step(self, label: str) -> None:
        self.done += 1
        self._advance(label)


@contextmanager
def progress_steps(total: int, description: str, enabled: bool = True) -> Iterator[Steps]:
    """A progress bar of `total` steps; `Steps.step(label)` after each finishes."""
    if not enabled:
        yield Steps(lambda label: None)
        return
    if not sys.stderr.isatty():
        start = time.perf_counter()
        counter = {"n": 0}

        def plain(label: str) -> None:
            counter["n"] += 1
            elapsed = time.perf_counter() - start
            print(
                f"[{description}] {counter['n']}/{total} {label} ({elapsed:.1f}s)",
                file=sys.stderr,
                flush=True,
            )

        yield Steps(plain)
        return
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[label]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(description, total=total, label="")
        yield Steps(lambda label: bar.update(task, advance=1, label=label))
