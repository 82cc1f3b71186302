"""No temp folder outlives a voxport process, finished or failed (issue 21, deliverable 4).

voxport ends by `os._exit` (`runtime.end_process`), which skips the interpreter's exit
handlers; the G2P's espeak-ng loader copies `libespeak-ng.so` into a `mkdtemp` folder that
only such a handler removes. The program's temp files now live in its own folder, removed
with it, and a killed process's folder is swept by the next one."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conversion.core import paths

REPO = Path(__file__).resolve().parents[1]
PROGRAM = "from conversion.cli.main import console; console()"


def _voxport(args: list[str], tmpdir: Path, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


def test_a_kokoro_run_leaves_no_temp_folder_finished_or_failed(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # An out-of-lexicon word: the G2P loads its espeak-ng fallback (the two leaked folders).
    ok = _voxport(["phonemize", "kokoro", "Zyxquorbl says hello."], tmpdir)
    assert ok.returncode == 0, ok.stderr
    assert '"phonemes"' in ok.stdout
    assert sorted(p.name for p in tmpdir.iterdir()) == []
    failed = _voxport(["phonemize", "kokoro", "Hello there.", "--max-ids", "1"], tmpdir)
    assert failed.returncode == 2 and "--max-ids" in failed.stderr
    assert sorted(p.name for p in tmpdir.iterdir()) == []


def test_the_folder_of_a_killed_process_is_swept_by_the_next(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    code = (
        "import time; from conversion.core import paths; p = paths.claim_temp_folder(); "
        "(p / 'scratch').write_text('x'); print(p, flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    left = Path(proc.stdout.readline().strip())
    assert left.parent == tmpdir and left.name.startswith(f"{paths.TEMP_PREFIX}{proc.pid}-")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert (left / "scratch").exists()  # SIGKILL: nothing could remove it
    deadline = time.monotonic() + 5
    while Path(f"/proc/{proc.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ok = _voxport(["phonemize", "kokoro", "Hi."], tmpdir)
    assert ok.returncode == 0, ok.stderr
    assert not left.exists() and list(tmpdir.iterdir()) == []


def test_two_exports_into_one_folder_at_once_one_writes_the_other_refuses(tmp_path):
    """Reported: two exports into one folder both converted and the second silently replaced
    the first without --overwrite. The export takes the bundle's write lock (`BundleWriter`):
    the second waits for the first, then finds the folder there and refuses in one line."""
    dest = tmp_path / "b"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    cmd = [sys.executable, "-c", PROGRAM, "export", "core", "--output-dir", str(dest)]
    procs = [
        subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=600), p.stderr.read().decode()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "already exists: pass --overwrite" in refused and "Traceback" not in refused
    from conversion.core.bundle import load_manifest

    assert load_manifest(dest).model == "core"
    assert [p.name for p in tmp_path.iterdir()] == ["b"]  # no staging or temp folder left


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_writers_partial_file_is_swept_by_the_next_write_whatever_its_target(tmp_path):
    """Reported: `speak --stream -o x.wav` killed (SIGTERM or SIGKILL) left `.x.wav.partial-PID`,
    removed only if `x.wav` itself was written again. Now any write into the folder sweeps
    it; a live writer's, and a user's file that merely looks like one, stay."""
    import numpy as np

    from conversion.core.host.audio_io import write_wav

    dead = tmp_path / f".x.wav.partial-{_dead_pid()}"
    dead_json = tmp_path / f".report.json.partial-{_dead_pid()}"
    live = tmp_path / f".y.wav.partial-{os.getppid()}"  # a process that runs
    mine = tmp_path / ".notes.partial-draft"  # no pid: not a writer's
    for p in (dead, dead_json, live, mine):
        p.write_text("x")
    write_wav(tmp_path / "other.wav", np.zeros(240, np.float32), 24000)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["other.wav", live.name, mine.name])


def test_onnxruntime_leaves_nothing_in_the_temp_folder(tmp_path):
    """Reported: onnxruntime's telemetry writes a `.ses` file into `$TMPDIR` on import, which
    stayed after the process. `$TMPDIR` is the process's own folder while it runs."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    code = (
        "from conversion.core import paths\n"
        "paths.claim_temp_folder()\n"
        "import onnxruntime\n"
        "paths.remove_claimed_temp_folder()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in tmpdir.iterdir()) == []
