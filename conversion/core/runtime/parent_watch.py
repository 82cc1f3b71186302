"""A worker ends when its parent dies (issue 21): a killed `voxport speak` takes its
`voxport serve` workers with it within a second, instead of leaving them computing.

A worker sees its parent die only as the end of its stdin, and not while it is busy in a
runtime call (minutes for a published-size graph) or while another process still holds the
pipe: issue 21 found the workers of a SIGKILLed `voxport speak` running on for > 20 s. So the
worker watches for itself, two ways:

- a thread polls `os.getppid()` every `POLL_S` against the parent it had at start (portable:
  Linux and macOS, whoever spawned it — `IsolatedSession`, VoxportKit's `WorkerProcess`, a
  shell). When the parent changes (the orphan is re-parented to init or a subreaper) it runs
  the caller's cleanup (the lowered assets) and ends the process with `EXIT_PARENT_GONE`.
- on Linux, `prctl(PR_SET_PDEATHSIG, SIGKILL)`, when the spawner asks for it (`PDEATHSIG_ENV`):
  the kernel kills the worker at once, even one stuck in native code holding the GIL, where
  the thread cannot run. Only on request, because the kernel's "parent" is the *thread* that
  spawned the worker: a worker spawned from a thread that then ends (`WorkerPool` opens workers
  from its map threads) would be killed while its parent process lives on. `child_env` asks
  for it only from the main thread. What it leaves behind (the lowered assets) the next
  worker's first lowering removes (`paths.process_temp_folder`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator

#: The spawner's pid, set in a worker's environment by `child_env`: a worker whose parent is
#: already another process when it starts watching (the spawner died while it started) ends.
PARENT_ENV = "VOXPORT_PARENT_PID"

#: "1": the spawning thread lives as long as its process, so the kernel may kill the worker
#: when that thread ends (`PR_SET_PDEATHSIG`). Set by `child_env` from the main thread only.
PDEATHSIG_ENV = "VOXPORT_PDEATHSIG"

#: How often the watch thread looks at the parent: the worker dies at most this long (plus its
#: cleanup) after its parent.
POLL_S = 0.2

#: The exit status of a worker whose parent died (nobody waits for it but init; distinct from
#: `serve`'s 0-3 so a log or a subreaper can tell).
EXIT_PARENT_GONE = 4

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def child_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a worker spawned now, from this thread: `base` (default: this
    process's) plus this process's pid, and the PDEATHSIG request when this is the main
    thread (whose end is the process's end)."""
    env = dict(os.environ if base is None else base)
    env[PARENT_ENV] = str(os.getpid())
    if threading.current_thread() is threading.main_thread():
        env[PDEATHSIG_ENV] = "1"
    else:
        env.pop(PDEATHSIG_ENV, None)
    return env


def _set_pdeathsig(sig: int) -> bool:
    """Linux's parent-death signal for this process (0: none); False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _end(cleanup: Callable[[], None], parent: int) -> None:
    """Clean up and end the process, from the watch thread. Not `runtime.end_process`: that
    flushes stdio, which the main thread may hold forever (blocked on a full pipe). The bundle
    locks are let go with a time limit (the main thread may hold the registry's lock, inside a
    runtime call): their files go with the last holder, as at any other end (issue 29: a
    worker whose parent died left `.NAME.lock`)."""
    from conversion.core import bundle_lock

    with contextlib.suppress(Exception):
        cleanup()
    with contextlib.suppress(Exception):
        bundle_lock.release_all(timeout=0.1)
    # One line for the log, from a thread of its own: a full stderr pipe must not keep an
    # orphan alive.
    line = f"voxport serve: parent process {parent} is gone; exiting\n".encode()
    note = threading.Thread(target=os.write, args=(2, line), daemon=True)
    note.start()
    note.join(0.1)
    os._exit(EXIT_PARENT_GONE)


def _poll(parent: int, cleanup: Callable[[], None], stop: threading.Event) -> None:
    while not stop.wait(POLL_S):
        if os.getppid() != parent:
            _end(cleanup, parent)


@contextlib.contextmanager
def watching(cleanup: Callable[[], None]) -> Iterator[int]:
    """While inside, end this process (`cleanup()` first) once its parent dies; yields the
    parent's pid. The watch stops on leaving, so a caller that runs the server in its own
    process (a test) keeps living after it returns."""
    parent = os.getppid()
    expected = os.environ.pop(PARENT_ENV, None)  # popped: not inherited by a child of ours
    armed = os.environ.pop(PDEATHSIG_ENV, None) == "1" and _set_pdeathsig(signal.SIGKILL)
    # After the prctl (the usual order): a parent that died before it is caught here.
    if expected is not None and expected.isdigit() and int(expected) != parent:
        _end(cleanup, int(expected))
    stop = threading.Event()
    thread = threading.Thread(
        target=_poll, args=(parent, cleanup, stop), name="voxport-parent-watch", daemon=True
    )
    thread.start()
    try:
        yield parent
    finally:
        stop.set()
        if armed:
            _set_pdeathsig(0)
