"""The `voxport` CLI: exit codes, one-line errors, and `gate core --json` end to end."""

import json
import os
import subprocess
import sys

import pytest

from conversion.cli.main import main


def _run(argv, capsys):
    code = main(argv)
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["export", "nosuchmodel"], "unknown model 'nosuchmodel'"),
        (["gate", "kokoro", "--weights", "/does/not/exist"], "weights folder /does/not/exist"),
        (["bench", "audio8_tts"], "no weights given"),
        (["bench", "chatterbox"], "no weights given"),
        (["gate", "chatterbox", "--weights", "/does/not/exist"], "weights folder /does/not/exist"),
        (["speak", "core", "hello", "-o", "/tmp/x.wav"], "has no voice"),
        (["speak", "core", "   ", "-o", "/tmp/x.wav"], "TEXT is empty"),
        (["gate", "core", "--json", "/proc/voxport/report.json"], "cannot create /proc/voxport"),
    ],
)
def test_user_errors_are_one_line_exit_2(argv, needle, capsys):
    code, err = _run(argv, capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("voxport: error:") and needle in err[0]


def test_export_refuses_existing_bundle_without_overwrite(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    code, err = _run(["export", "core", "--output-dir", str(tmp_path / "b")], capsys)
    assert code == 2 and "--overwrite" in err[0]


def test_doctor_versions_only(tmp_path, capsys):
    code = main(["doctor", "--no-selftest", "--json", str(tmp_path / "d.json")])
    report = json.loads((tmp_path / "d.json").read_text())
    assert code == 0, report["problems"]
    assert report["versions"]["coreai-torch"] == "0.4.3"


def test_gate_core_json_schema_and_exit_code(tmp_path):
    """The whole self-test ladder, as a user runs it (console script, child runtime)."""
    out = tmp_path / "gate.json"
    exe = os.path.join(os.path.dirname(sys.executable), "voxport")
    proc = subprocess.run(
        [exe, "gate", "core", "--json", str(out), "--plot", str(tmp_path / "p.png")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(out.read_text())
    assert set(report) == {"model", "passed", "rungs"}
    assert report["model"] == "core"
    names = [r["name"] for r in report["rungs"]]
    assert any("greedy tokens" in n for n in names) and any("sampler" in n for n in names)
    for r in report["rungs"]:
        assert {"name", "metric", "value", "threshold", "passed"} <= set(r)
    assert report["passed"] == all(r["passed"] for r in report["rungs"])
    assert proc.returncode == (0 if report["passed"] else 1), proc.stderr[-2000:]
    assert report["passed"], [r for r in report["rungs"] if not r["passed"]]
    assert (tmp_path / "p.png").stat().st_size > 10_000
