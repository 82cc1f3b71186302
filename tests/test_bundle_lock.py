"""A bundle in use is never swapped underneath: a writer waits for every process that has the
folder loaded (and names them), a loader waits for a writer, and a process that asked for one
key and finds another in the folder gets an error naming both, never a run on other graphs."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from conversion.core import bundle_lock
from conversion.core.bundle import BundleWriter, key_digest, load_manifest
from conversion.core.errors import BundleKeyMismatchError, UserError
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.session import Session

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")

# A child process holding DEST the way a loader or a writer does, until a line on its stdin.
HOLDER = textwrap.dedent(
    """
    import sys
    from conversion.core import bundle_lock
    dest, mode = sys.argv[1], sys.argv[2]
    if mode == "use":
        hold = bundle_lock.Use(dest)
    else:
        hold = bundle_lock.writing(dest, "holder")
        hold.__enter__()
    print("held", flush=True)
    sys.stdin.readline()
    hold.release() if mode == "use" else hold.__exit__(None, None, None)
    print("released", flush=True)
    sys.stdin.readline()
    """
)


class Holder:
    def __init__(self, dest: Path, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(dest), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"

    def end(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _in_thread(work) -> threading.Event:
    done = threading.Event()

    def run():
        work()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return done


def _waits_for(holder: Holder, work, what: str) -> None:
    """`work` (in a thread) stays blocked while `holder` holds, and finishes once it lets go."""
    try:
        done = _in_thread(work)
        assert not done.wait(1.5), f"{what} went ahead while another process held the folder"
        holder.release()
        assert done.wait(30)
    finally:
        holder.end()


def test_a_writer_waits_for_the_process_using_the_folder_and_names_it(tmp_path, capfd):
    dest = tmp_path / "b"
    dest.mkdir()
    user = Holder(dest, "use")

    def write():
        with bundle_lock.writing(dest, "exporter"):
            pass

    _waits_for(user, write, "the writer")
    err = capfd.readouterr().err
    assert f"exporter: waiting to write {dest}: pid {user.proc.pid} using it" in err, err


def test_a_loader_waits_for_the_process_writing_the_folder(tmp_path, capfd):
    dest = tmp_path / "b"  # not there yet: the writer makes it
    writer = Holder(dest, "write")
    _waits_for(writer, lambda: bundle_lock.Use(dest).release(), "a loader")
    err = capfd.readouterr().err
    assert f"waiting to load {dest}: pid {writer.proc.pid} writing it" in err, err


def test_uses_share_and_one_process_never_waits_on_itself(tmp_path):
    dest = tmp_path / "b"
    dest.mkdir()
    other = Holder(dest, "use")  # another process's use does not stop ours
    try:
        with bundle_lock.Use(dest), bundle_lock.Use(dest):
            pass
    finally:
        other.release()
        other.end()
    with bundle_lock.Use(dest):  # this process re-exporting what it uses converts its own lock
        with bundle_lock.writing(dest, "self"):
            pass
        probe = Holder(dest, "use")  # after the write the folder is shared again, not held
        probe.release()
        probe.end()


def test_loading_a_missing_folder_leaves_no_lock_file(tmp_path):
    with bundle_lock.Use(tmp_path / "typo"):
        pass
    assert list(tmp_path.iterdir()) == []


def _mlp_bundle(dest: Path, weights: str, overwrite: bool = False) -> dict:
    from conversion.selftest import graphs as sg

    key = {"model": "m", "weights_sha256": weights * 32, "graphs": {"mlp": "fp32"}}
    spec, _ = sg.mlp_graph(0 if weights == "aa" else 1)
    with BundleWriter(dest, "m", key=key, overwrite=overwrite) as bw:
        bw.add_graph(spec)
    return key


@pytest.fixture(scope="module")
def two_keys(tmp_path_factory):
    """One small bundle for each of two keys (other weights, other numbers)."""
    root = tmp_path_factory.mktemp("keys")
    a, b = root / "a", root / "b"
    return (a, _mlp_bundle(a, "aa")), (b, _mlp_bundle(b, "bb"))


def test_a_session_on_another_key_than_asked_for_is_an_error_naming_both(two_keys, tmp_path):
    (a, key_a), (b, key_b) = two_keys
    dest = tmp_path / "b"
    shutil.copytree(a, dest)
    bundle_lock.expect(dest, key_a)  # what ensure_bundle records for this process
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    with Session(dest) as s:
        before = s.run("mlp", "main", {"x": x})["y"]
    shutil.rmtree(dest)  # another process re-exports the folder from other weights
    shutil.copytree(b, dest)
    for open_session in (Session, IsolatedSession):
        with pytest.raises(BundleKeyMismatchError) as err:
            open_session(dest)
        msg = str(err.value)
        assert f"key {key_digest(key_b)[:12]}… (weights bbbbbbbbbbbb…; mlp fp32)" in msg, msg
        assert f"key {key_digest(key_a)[:12]}… (weights aaaaaaaaaaaa…; mlp fp32)" in msg, msg
        assert "differ in weights_sha256" in msg and "\n" not in msg
    bundle_lock.expect(dest, key_b)  # asked for again (a re-run): it loads, other numbers
    with Session(dest) as s:
        assert not np.array_equal(s.run("mlp", "main", {"x": x})["y"], before)


def test_a_worker_refuses_a_bundle_whose_key_is_not_the_one_its_parent_checked(two_keys):
    (a, key_a), (_, key_b) = two_keys
    argv = [sys.executable, "-m", "conversion.core.runtime.serve", str(a), "--no-verify"]
    proc = subprocess.run(
        [*argv, f"--key={key_digest(key_b)}"], capture_output=True, text=True, timeout=120
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"not from the key {key_digest(key_b)[:12]}… this process asked for" in lines[0]
    ok = subprocess.run(
        [*argv, f"--key={key_digest(key_a)}"], input=b"", capture_output=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr[-2000:]


def test_export_over_a_served_bundle_waits_for_the_server(core_bundle, tmp_path):
    """`voxport export --overwrite` into a folder a `voxport serve` worker has loaded: the
    export says it waits (naming the worker), the worker keeps answering with the graphs it
    loaded, and the folder is replaced only once the worker has closed."""
    from tests.test_serve import Child

    dest = tmp_path / "bundle"
    shutil.copytree(core_bundle, dest)
    old = load_manifest(dest)
    log = open(tmp_path / "serve.txt", "w+b")  # noqa: SIM115
    server = Child([VOXPORT, "serve", str(dest)], log)
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    header = {"op": "run", "id": 1, "graph": "mlp", "function": "main"}
    want = server.ask(header, {"x": x})[1]["y"]
    export = subprocess.Popen(
        [VOXPORT, "export", "core", "--output-dir", str(dest), "--overwrite", "--seed", "5"],
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[str] = []
    waiting = threading.Event()

    def read_stderr():
        for line in export.stderr:
            err.append(line)
            if f"waiting to write {dest}" in line:
                waiting.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert waiting.wait(300), "".join(err)[-2000:]
        assert export.poll() is None and load_manifest(dest).created == old.created
        got = server.ask({**header, "id": 2}, {"x": x})[1]["y"]
        assert got.tobytes() == want.tobytes()  # the graphs it loaded, whatever waits
    finally:
        code = server.close()
        log.close()
    assert export.wait(timeout=600) == 0 and code == 0, "".join(err)[-2000:]
    reader.join(timeout=30)
    text = "".join(err)
    assert f"waiting to write {dest}: pid {server.proc.pid} using it: voxport serve" in text, text
    new = load_manifest(dest)
    assert json.dumps(new.graphs) != json.dumps(old.graphs)  # seed 5's graphs, all of them
    assert not bundle_lock.lock_path(dest).exists()  # both let go as they ended: no lock file


# -- the lock file is voxport's own (issue 29) ------------------------------------------------


def _uses(dest: Path) -> None:
    """Every way a process takes the folder: a use, a write, a use inside a write."""
    for take in (lambda: bundle_lock.Use(dest), lambda: bundle_lock.writing(dest).__enter__()):
        with pytest.raises(UserError) as err:
            take()
        msg = str(err.value)
        assert "\n" not in msg and str(bundle_lock.lock_path(dest)) in msg, msg
        assert "not a lock file voxport made" in msg and "move it away" in msg, msg


@pytest.mark.parametrize("target", ["missing", "user-file"])
def test_a_lock_file_that_is_a_link_is_refused_never_followed(tmp_path, target):
    """Reported: `.NAME.lock`, a link to a missing path: using the bundle created the link's
    target; to a user's file: the link was removed at exit (the lock file's last holder)."""
    dest = tmp_path / "b"
    dest.mkdir()
    aim = tmp_path / "elsewhere" / "target.txt"
    aim.parent.mkdir()
    if target == "user-file":
        aim.write_text("the user's\n")
    lock = bundle_lock.lock_path(dest)
    lock.symlink_to(aim)
    _uses(dest)
    assert lock.is_symlink() and os.readlink(lock) == str(aim)  # kept, as it was
    if target == "missing":
        assert not aim.exists(), "the link's target was created"
    else:
        assert aim.read_text() == "the user's\n"
    left = sorted(p.name for p in aim.parent.iterdir())
    assert left == ([] if target == "missing" else [aim.name])


@pytest.mark.parametrize("kind", ["file", "folder", "fifo"])
def test_anything_but_a_lock_file_voxport_made_is_refused_and_kept(tmp_path, kind):
    dest = tmp_path / "b"
    dest.mkdir()
    lock = bundle_lock.lock_path(dest)
    if kind == "file":
        lock.write_text("my notes\n")
    elif kind == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    _uses(dest)
    if kind == "file":
        assert lock.read_text() == "my notes\n"  # held by nobody, and not removed at the end
    else:
        assert lock.is_dir() if kind == "folder" else stat.S_ISFIFO(os.lstat(lock).st_mode)


def test_the_lock_file_is_made_with_its_mark_and_removed_by_its_last_holder(tmp_path):
    dest = tmp_path / "b"
    dest.mkdir()
    lock = bundle_lock.lock_path(dest)
    with bundle_lock.Use(dest):
        assert lock.read_bytes() == bundle_lock.MARK
    assert not lock.exists()
    lock.write_bytes(b"")  # older voxport's (empty): taken, and removed as voxport's own
    with bundle_lock.writing(dest):
        pass
    assert not lock.exists()


def test_serve_refuses_a_bundle_whose_lock_file_links_elsewhere(core_bundle, tmp_path):
    """The issue's case, through the program: `voxport serve B --graphs=`."""
    dest = tmp_path / "b"
    shutil.copytree(core_bundle, dest)
    (tmp_path / "keep.txt").write_text("keep\n")
    bundle_lock.lock_path(dest).symlink_to(tmp_path / "keep.txt")
    done = subprocess.run(
        [sys.executable, "-m", "conversion.cli.main", "serve", str(dest), "--graphs="],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("voxport: error: ") and "symbolic link" in lines[0]
    assert (tmp_path / "keep.txt").read_text() == "keep\n"
    assert bundle_lock.lock_path(dest).is_symlink()


def test_a_lock_file_made_by_another_process_meanwhile_is_taken(tmp_path, monkeypatch):
    """Two processes find no lock file and both make one: the second's O_EXCL fails, and it
    must take the first's, not go on holding nothing."""
    dest = tmp_path / "b"
    dest.mkdir()
    make = bundle_lock._make

    def raced(path: Path) -> None:
        make(path)  # the other process, first
        raise FileExistsError(path)

    monkeypatch.setattr(bundle_lock, "_make", raced)
    with bundle_lock.Use(dest):
        lock = bundle_lock.lock_path(dest)
        assert f"pid {os.getpid()} using it" in bundle_lock.holders(lock)
    assert not lock.exists()
