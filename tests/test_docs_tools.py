"""docs/tools/rewrite_ab.py stays runnable, and every case the docs cite exists.

The tool reproduces docs/speed.md's "Rewrites tried" rows; these tests run it the way a reader
would (a subprocess, `--list` and one tiny case) so that a change in the export path or the
runtime that breaks it fails here, not the next time someone re-measures a row.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "docs" / "tools" / "rewrite_ab.py"
CITING = [ROOT / "docs" / "speed.md", *sorted((ROOT / "models").glob("*/README.md"))]


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOL), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _listed() -> set[str]:
    done = _run("--list")
    assert done.returncode == 0, done.stderr
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def test_every_cited_case_is_listed() -> None:
    listed = _listed()
    assert {"pad_vs_concat", "pow_vs_mul", "bilstm_loop"} <= listed
    cited = {
        name
        for doc in CITING
        for group in re.findall(r"rewrite_ab\.py --only ([\w ]+)", doc.read_text())
        for name in group.split()
    }
    assert cited, "docs/speed.md cites no rewrite_ab.py case"
    assert cited <= listed, f"cited but not a case: {sorted(cited - listed)}"


def test_a_tiny_case_runs_and_pad_equals_concat_exactly() -> None:
    done = _run("--only", "pad_vs_concat", "--scale", "0.01", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [ln for ln in done.stdout.splitlines() if ln.startswith("| [1,")]
    # Three shapes, two forms each; both forms exact against eager F.pad through the runtime.
    assert len(rows) == 6, done.stdout
    assert {ln.split("|")[2].strip() for ln in rows} == {"F.pad", "concat of zeros"}
    assert all(ln.split("|")[7].strip() == "0.0e+00" for ln in rows), done.stdout
