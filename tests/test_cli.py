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


def test_overwrite_replaces_only_a_bundle(tmp_path, capsys):
    """`--overwrite` deletes what it replaces: a folder that is not a voxport bundle (its
    manifest does not say so) is refused in one line, before any work, and kept whole."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "precious.txt").write_text("x")
    code, err = _run(["export", "core", "--output-dir", str(mine), "--overwrite"], capsys)
    assert code == 2 and len(err) == 1 and f"{mine} is not a voxport bundle" in err[0], err
    assert (mine / "precious.txt").read_text() == "x"
    (mine / "manifest.json").write_text('{"name": "some web app"}')  # a manifest, not ours
    code, err = _run(["export", "core", "--output-dir", str(mine), "--overwrite"], capsys)
    assert code == 2 and "is not a voxport bundle" in err[0] and (mine / "precious.txt").exists()


def _special_outputs(tmp_path):
    """What an output path may name besides a regular file, each made here."""
    import socket

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "target.json"
    target.write_text("kept")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    return {"a FIFO": fifo, "a symbolic link": link, "a socket": sock_path}, sock


def test_outputs_refuse_what_a_rename_would_replace(tmp_path, capsys):
    """Outputs are written beside their target and renamed onto it, so a device, FIFO, socket
    or symlink there would be swapped for a regular file: each is refused in one line before
    any work and left as it was (here /dev/null too, which as root would become a file)."""
    specials, sock = _special_outputs(tmp_path)
    try:
        cases = {**specials, "a device": "/dev/null"}
        for kind, path in cases.items():
            code, err = _run(["doctor", "--no-selftest", "--json", str(path)], capsys)
            assert code == 2 and len(err) == 1, (kind, err)
            assert f"{path} is {kind}: outputs replace their target by a rename" in err[0], err
        assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
        assert specials["a FIFO"].is_fifo() and specials["a socket"].is_socket()
        assert specials["a symbolic link"].is_symlink()
        assert (tmp_path / "target.json").read_text() == "kept"
    finally:
        sock.close()


def test_an_existing_regular_output_is_replaced_whole(tmp_path, capsys):
    out = tmp_path / "d.json"
    out.write_text("old contents, longer than nothing")
    assert main(["doctor", "--no-selftest", "--json", str(out)]) == 0
    assert out.is_file() and not out.is_symlink() and "versions" in json.loads(out.read_text())


def test_a_failed_run_removes_the_folders_it_made_for_its_output(tmp_path, capsys):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "other.txt").write_text("x")
    out = tmp_path / "new" / "deep" / "x.wav"
    code, err = _run(["speak", "core", "hello", "-o", str(out)], capsys)  # fails after -o is made
    assert code == 2 and "has no voice" in err[0]
    assert not (tmp_path / "new").exists()
    code, _ = _run(["speak", "core", "hello", "-o", str(kept / "sub" / "x.wav")], capsys)
    assert code == 2 and not (kept / "sub").exists() and (kept / "other.txt").exists()
    ok = tmp_path / "made" / "d.json"  # a run that succeeds keeps them, with its file
    assert main(["doctor", "--no-selftest", "--json", str(ok)]) == 0 and ok.is_file()


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
