"""In CI a skip is a failure: a test that cannot run there (a package, a tool, a mount that is
missing) must say so loudly, not pass as `s`. Outside CI a skip stays a skip, so a laptop
without `espeak-ng` or root still runs the rest.

CI is `CI` set to true/1/yes (GitHub Actions sets it; `.ci/run` exports it). Loaded by
tests/conftest.py (`pytest_plugins`); xfails are left alone.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail(report, what: str) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"{what} skipped in CI, where every test must run (CI={os.environ.get('CI')}): "
        f"{_reason(report.longrepr)} — install what it names (make setup / make system-deps)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _fail(report, "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.outcome == "skipped":
        _fail(report, "module")
