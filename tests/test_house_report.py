"""docs/tools/house_report.py finds what it reports: a circle, an upward import, a model named
outside the registry, a repeated block, the longest function — on a small tree made here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "house_report", ROOT / "docs/tools/house_report.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


BLOCK = "".join(f"    x{i} = {i} * y\n" for i in range(7))


def test_the_report_names_circles_upward_imports_and_repeats(tmp_path):
    for pkg in ("conversion", "conversion/core", "conversion/cli"):
        _write(tmp_path, f"{pkg}/__init__.py", "")
    _write(tmp_path, "conversion/kokoro/__init__.py", 'MODEL_NAME = "kokoro"\n')  # a model folder
    _write(tmp_path, "conversion/core/a.py", "from conversion.core import b\n")
    _write(tmp_path, "conversion/core/b.py", "from . import a\n")
    _write(tmp_path, "conversion/core/up.py", "import conversion.cli.main\n")
    _write(tmp_path, "conversion/cli/main.py", "from conversion.kokoro import port\n")
    _write(tmp_path, "conversion/cli/registry.py", "from conversion.kokoro import port\n")
    _write(tmp_path, "conversion/kokoro/port.py", f"def f(y):\n{BLOCK}\n\ndef g(y):\n{BLOCK}")
    report = _tool().report(tmp_path)
    assert "import circles: 1\n  conversion.core.a <-> conversion.core.b" in report
    assert "conversion.core.up -> conversion.cli.main (up)" in report
    assert "conversion.cli.main -> conversion.kokoro.port (a model by name)" in report
    assert "conversion.cli.registry ->" not in report  # the one place that may name a model
    assert "python: 1," in report  # f's and g's seven lines: one pair
    assert "     8  conversion/kokoro/port.py:" in report
