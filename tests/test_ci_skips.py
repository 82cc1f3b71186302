"""In CI a skip fails, naming what is missing (tests/ci_skips.py); outside CI it stays a skip.
Run on a throwaway test file in a child pytest with only that plugin loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SAMPLE = """
import pytest

def test_runs():
    assert True

def test_needs_a_tool():
    pytest.skip("frobnicate not installed (apt-get install frobnicate)")

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_known_bug():
    assert False
"""

MODULE_SKIP = """
import pytest
pytest.importorskip("no_such_package_voxport")

def test_never_collected():
    assert True
"""


def _pytest(tmp_path: Path, source: str, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.ci_skips", "-p", "no:cacheprovider",
         "-c", str(tmp_path / "pytest.ini"), "-rfEs", str(tmp_path / "test_sample.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("ci", ["true", "1"])
def test_a_skip_in_ci_fails_and_names_what_is_missing(tmp_path, ci):
    proc = _pytest(tmp_path, SAMPLE, ci)
    assert proc.returncode == 1, proc.stdout
    assert "1 failed, 1 passed, 1 xfailed" in proc.stdout, proc.stdout
    assert "test skipped in CI, where every test must run" in proc.stdout
    assert "frobnicate not installed (apt-get install frobnicate)" in proc.stdout


def test_outside_ci_a_skip_stays_a_skip(tmp_path):
    for ci in (None, "false", ""):
        proc = _pytest(tmp_path, SAMPLE, ci)
        assert proc.returncode == 0 and "1 passed, 1 skipped, 1 xfailed" in proc.stdout, (
            ci,
            proc.stdout,
        )


def test_a_module_skipped_at_import_fails_in_ci(tmp_path):
    proc = _pytest(tmp_path, MODULE_SKIP, "true")
    assert proc.returncode != 0 and "module skipped in CI" in proc.stdout, proc.stdout
    assert "no_such_package_voxport" in proc.stdout
    outside = _pytest(tmp_path, MODULE_SKIP, None)  # 5: no test ran, as pytest says it
    assert outside.returncode == 5 and "1 skipped" in outside.stdout, outside.stdout
