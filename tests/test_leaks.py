"""tests/leaks.py, the count CI takes after the test run, finds what it must and only that."""

import os
import subprocess
import sys
import tempfile
import time
import uuid

from tests import leaks


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temp_folders_of_gone_processes_and_espeak_copies_are_found(tmp_path):
    since = time.time() - 1
    dead = tmp_path / f"voxport-tmp-{_dead_pid()}-abcd"
    live = tmp_path / f"voxport-lowered-{os.getpid()}-efgh"
    old = tmp_path / f"voxport-tmp-{_dead_pid()}-old0"
    espeak = tmp_path / "tmpq1w2e3"
    other = tmp_path / "tmpunrelated"
    for d in (dead, live, old, espeak, other):
        d.mkdir()
    (espeak / "libespeak-ng.so.1").write_bytes(b"\0")
    os.utime(old, (since - 60, since - 60))  # before the run: not the run's
    assert leaks.left_temp_folders(tmp_path, since) == sorted([dead.name, espeak.name])


def test_processes_carrying_the_runs_token_are_found_until_they_end(monkeypatch):
    token = uuid.uuid4().hex
    env = {**os.environ, leaks.TOKEN: token}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        deadline = time.monotonic() + 10
        while not (found := leaks.left_processes(token)) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the child has exec'd
        assert [line.split()[0] for line in found] == [str(child.pid)]
        assert leaks.left_processes(uuid.uuid4().hex) == []
    finally:
        child.kill()
        child.wait()
    assert leaks.left_processes(token) == []


def test_main_fails_on_a_leak_and_passes_without(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv(leaks.TOKEN, uuid.uuid4().hex)  # this process and its parents: not counted
    since = time.time() - 1
    assert leaks.main(["--since", str(since), "--grace", "0"]) == 0
    assert "left behind: 0 temp folder(s), 0 process(es)" in capsys.readouterr().out
    (tmp_path / f"voxport-tmp-{_dead_pid()}-abcd").mkdir()
    assert leaks.main(["--since", str(since), "--grace", "0"]) == 1
    assert "1 temp folder(s)" in capsys.readouterr().out
