"""A killed parent takes its workers with it within a second (issue 21, deliverable 4): the
worker notices its parent's death itself (`conversion.core.runtime.parent_watch`), also while it is
busy in a long call, when the end of its stdin cannot reach it.

Each test starts a small parent process that spawns a real `voxport serve --assets` worker,
loads an asset in it (so it has a lowered folder to clean up) and leaves it busy in a call
that takes two minutes; the test then SIGKILLs the parent and watches the worker's pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from conversion.core.runtime import parent_watch
from conversion.core.runtime.session import LOWERED_PREFIX

BOUND_S = 2.0  # the worker polls every 0.2 s; the rest is slack for a loaded 2-core machine
SETUP_S = 120  # starting the parent and the worker, loading the asset (not a timed assert)

# The parent. argv: mode, asset path, busy-file path. It prints the worker's pid once the
# worker has loaded the asset and started its long call, then waits to be killed.
PARENT = r"""
import os, subprocess, sys, threading, time
from conversion.core.runtime import worker_protocol as wp

mode, asset, busy_file = sys.argv[1:4]
# `voxport serve --assets` with one op made long (a runtime call of minutes, as a
# published-size graph's): busy in it, the worker cannot see the end of its stdin.
WORKER = (
    "import sys, time\n"
    "from conversion.core.runtime import serve\n"
    "def busy(self, header, arrays):\n"
    f"    open({busy_file!r}, 'w').close()\n"
    "    time.sleep(120)\n"
    "    return {}, None\n"
    "serve.AssetServer.op_unload_asset = busy\n"
    "sys.exit(serve.main(['--assets']))\n"
)
held = {}


def spawn():
    if mode == "plain":  # as VoxportKit's WorkerProcess spawns it: nothing in its environment
        env = {k: v for k, v in os.environ.items() if not k.startswith("VOXPORT_P")}
    else:  # as IsolatedSession spawns it
        from conversion.core.runtime import parent_watch

        env = parent_watch.child_env()
    p = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env, bufsize=0)
    held["proc"], held["chan"] = p, wp.PipeChannel(p.stdout.fileno(), p.stdin.fileno())
    assert held["chan"].recv(time.monotonic() + 120)[0]["op"] == "ready"


if mode == "thread":  # spawned from a thread that ends (as WorkerPool's map threads do)
    t = threading.Thread(target=spawn)
    t.start()
    t.join()
    time.sleep(0.5)  # a parent-death signal tied to that thread would have fired by now
else:
    spawn()
chan, deadline = held["chan"], time.monotonic() + 120
chan.send({"op": "load_asset", "path": asset}, deadline=deadline)
reply = chan.recv(deadline)[0]
assert reply["ok"], reply
chan.send({"op": "describe"}, deadline=deadline)  # alive, whatever thread spawned it
assert chan.recv(deadline)[0]["ok"]
chan.send({"op": "unload_asset", "asset": reply["asset"]}, deadline=deadline)  # the long call
print(held["proc"].pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie waits for init, which may never reap it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _lowered(tmp: Path, pid: int) -> list[Path]:
    return list(tmp.glob(f"{LOWERED_PREFIX}{pid}-*"))


@pytest.mark.parametrize("mode", ["plain", "main", "thread"])
def test_a_busy_worker_dies_within_a_second_of_its_killed_parent(core_bundle, tmp_path, mode):
    """plain: the watch thread alone; main: as IsolatedSession from the main thread (the
    kernel's PR_SET_PDEATHSIG too, on Linux); thread: spawned from a thread that ended first,
    which must not kill it (the kernel's "parent" is that thread), then killed with its parent.
    """
    busy = tmp_path / "busy"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, "-c", PARENT, mode, str(core_bundle / "mlp.aimodel"), str(busy)]
    parent = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    pid = None
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"the parent did not start its worker ({line!r})"
        pid = int(line)
        deadline = time.monotonic() + SETUP_S
        while not busy.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert busy.exists() and _alive(pid), "the worker did not start its long call"
        assert len(_lowered(tmp_path, pid)) == 1  # the asset it loaded, lowered for it

        parent.kill()
        parent.wait()
        killed = time.monotonic()
        while _alive(pid) and time.monotonic() - killed < BOUND_S + 5:
            time.sleep(0.01)
        took = time.monotonic() - killed
        print(f"\n{mode}: the worker was gone {took:.3f} s after its parent was killed")
        assert not _alive(pid), f"the worker outlived its parent by {took:.1f} s"
        assert took < BOUND_S
        if mode != "main":  # the watch thread removes the lowered assets; SIGKILL cannot
            assert _lowered(tmp_path, pid) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_died_before_it_started_watching_ends_at_once(tmp_path):
    """The spawner's pid in the environment (`child_env`) catches a parent that died while the
    worker was starting: the worker's parent is already another process when it looks."""
    code = (
        "import os, time\n"
        "from conversion.core.runtime import parent_watch\n"
        "with parent_watch.watching(lambda: os.write(1, b'cleaned up\\n')):\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, parent_watch.PARENT_ENV: str(os.getpid() + 1_000_000)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=SETUP_S
    )
    assert done.returncode == parent_watch.EXIT_PARENT_GONE, done.stderr.decode()[-2000:]
    assert done.stdout == b"cleaned up\n"
    assert b"parent process" in done.stderr and b"is gone" in done.stderr


def test_child_env_asks_for_the_kernel_signal_from_the_main_thread_only():
    env = parent_watch.child_env({"PATH": "/bin", parent_watch.PDEATHSIG_ENV: "1"})
    assert env == {
        "PATH": "/bin",
        parent_watch.PARENT_ENV: str(os.getpid()),
        parent_watch.PDEATHSIG_ENV: "1",
    }
    got = {}
    base = {"PATH": "/bin", parent_watch.PDEATHSIG_ENV: "1"}  # inherited: not passed on
    t = threading.Thread(target=lambda: got.update(parent_watch.child_env(base)))
    t.start()
    t.join()
    assert got == {"PATH": "/bin", parent_watch.PARENT_ENV: str(os.getpid())}


# A parent that spawns a bundle-mode worker as VoxportKit does (nothing in its environment)
# and holds no lock itself: the worker is the bundle's only holder. argv: bundle, busy-file.
BUNDLE_PARENT = r"""
import os, subprocess, sys, time
from conversion.core.runtime import worker_protocol as wp

bundle, busy_file = sys.argv[1:3]
WORKER = (
    "import sys, time\n"
    "from conversion.core.runtime import serve\n"
    "def busy(self, header, arrays):\n"
    f"    open({busy_file!r}, 'w').close()\n"
    "    time.sleep(120)\n"
    "serve.Server.op_reset_state = busy\n"
    f"sys.exit(serve.main([{bundle!r}, '--graphs=mlp']))\n"
)
env = {k: v for k, v in os.environ.items() if not k.startswith("VOXPORT_P")}
p = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, env=env, bufsize=0)
chan, deadline = wp.PipeChannel(p.stdout.fileno(), p.stdin.fileno()), time.monotonic() + 120
assert chan.recv(deadline)[0]["op"] == "ready"
chan.send({"op": "reset_state", "graph": "mlp"}, deadline=deadline)  # the long call
print(p.pid, flush=True)
time.sleep(600)
"""


def test_a_worker_whose_parent_died_releases_the_bundle_lock(core_bundle, tmp_path):
    """Reported: `.NAME.lock` stayed beside the bundle after a worker exited because its
    parent died (the watch thread skipped the lock registry)."""
    import shutil

    from conversion.core import bundle_lock

    bundle = tmp_path / "b"
    shutil.copytree(core_bundle, bundle)
    busy = tmp_path / "busy"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", BUNDLE_PARENT, str(bundle), str(busy)],
        stdout=subprocess.PIPE,
        env=env,
    )
    pid = None
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"the parent did not start its worker ({line!r})"
        pid = int(line)
        deadline = time.monotonic() + SETUP_S
        while not busy.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert busy.exists() and bundle_lock.lock_path(bundle).exists()
        parent.kill()
        parent.wait()
        killed = time.monotonic()
        while _alive(pid) and time.monotonic() - killed < BOUND_S + 5:
            time.sleep(0.01)
        assert not _alive(pid), "the worker outlived its parent"
        assert not bundle_lock.lock_path(bundle).exists(), "the worker left the lock file"
        assert _lowered(tmp_path, pid) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)
