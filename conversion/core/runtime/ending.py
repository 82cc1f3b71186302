"""How a voxport process ends: normally, on SIGTERM or SIGINT, or with a traceback, it leaves
nothing behind (issue 29) — its bundle lock files released, its lowered assets and temp folder
removed, its workers ended, the output it was writing removed.

- **A normal exit** (`end_process`): every session is closed and every file written; the
  process then ends by `os._exit`, without the interpreter's teardown (the Core AI runtime's
  native teardown has aborted finished processes).
- **A signal in the `voxport` program** (`install()`): SIGTERM raises `Terminated` (a
  `KeyboardInterrupt`, as SIGINT raises one), so the same `finally` blocks run as for Ctrl-C
  (sessions closed, staging folders and partial files removed, exit 143 or 130). A runtime
  call cannot be cut, and a thread may wait on a busy worker: `GRACE_S` after the signal,
  whatever is still running, `end_now` does the rest from a thread of its own.
- **A signal in a worker** (`install(unwind=False)`: `voxport serve`): `end_now` at once.
- **`end_now`**: end the children (SIGTERM, then SIGKILL after `CHILD_GRACE_S`; the folders
  of any that could not clean up are swept), remove every lowered folder and every partial
  output this process registered (`removing`), release the bundle locks, remove the temp
  folder, `os._exit`. It takes no lock without a time limit: the thread it interrupted may
  hold one.

Measured on this 2-core machine, from the signal to the last process and file gone: 0.017-0.045 s
for a process holding a bundle, loaded in process and in a worker busy in a two-minute call,
streaming a wav (tests/test_signals.py, SIGTERM and SIGINT); 0.011-0.041 s mid-`export core`;
0.016-0.538 s for `speak audio8_tts --stream` with two workers (0.538: a worker inside the
runtime's lowering, where its handler cannot run, so the deadline and a SIGKILL took over).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

from conversion.core import bundle_lock, paths

#: After a signal, how long the `voxport` program unwinds before `end_now` takes over.
GRACE_S = 0.5

#: How long a child (a worker) has to end on SIGTERM before it is killed.
CHILD_GRACE_S = 0.3

#: How long `end_now` waits for a lock another thread of this process may hold.
LOCK_WAIT_S = 0.1


class Terminated(KeyboardInterrupt):
    """SIGTERM (or another ending signal), raised like Ctrl-C's `KeyboardInterrupt` so every
    `finally` runs; `code` is the exit status a shell shows for the signal (128 + its number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.code = 128 + signum


def exit_code(err: BaseException) -> int:
    """The exit status for an interrupt: 143 for SIGTERM, 130 for Ctrl-C."""
    return err.code if isinstance(err, Terminated) else 128 + signal.SIGINT


def message(err: BaseException) -> str:
    """The one line the program prints for an interrupt."""
    if isinstance(err, Terminated):
        return f"voxport: terminated ({signal.Signals(err.signum).name})"
    return "voxport: interrupted"


_signal: int | None = None  # the signal being handled
_ended = False  # `end_process` / `end_now` has begun: a later signal changes nothing
_removing: set[Path] = set()


def ending() -> bool:
    """Whether this process is ending on a signal: a session ends its worker rather than
    asking it to close (it may be busy in a call for minutes)."""
    return _signal is not None


def install(unwind: bool = True) -> None:
    """Handle SIGTERM and SIGINT from now on (main thread only: Python's rule): raise
    `Terminated` / `KeyboardInterrupt` with `end_now` as a deadline (`unwind`), or `end_now`
    at once."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _unwind if unwind else _end_at_once)


def _unwind(signum: int, frame: object) -> None:
    global _signal
    if _signal is not None or _ended:
        return  # a second signal while cleaning up: the first one's deadline stands
    _signal = signum
    threading.Thread(target=_deadline, args=(signum,), name="voxport-ending", daemon=True).start()
    raise Terminated(signum) if signum != signal.SIGINT else KeyboardInterrupt()


def _deadline(signum: int) -> None:
    """Pass the end on to the children at once (a worker ends itself, a `voxport` child
    unwinds as this one does), then end this process if it has not ended by `GRACE_S`."""
    import psutil

    start = time.monotonic()
    for child in _children(recursive=False):
        with contextlib.suppress(psutil.Error):
            child.terminate()
    time.sleep(max(0.0, GRACE_S - (time.monotonic() - start)))
    end_now(128 + signum, signalled_line())


def _end_at_once(signum: int, frame: object) -> None:
    global _signal
    if _ended:
        return
    _signal = signum
    end_now(128 + signum)


@contextlib.contextmanager
def removing(path: Path) -> Iterator[Path]:
    """While inside, `end_now` removes `path` (an output being written: a partial file)."""
    path = Path(path)
    _removing.add(path)
    try:
        yield path
    finally:
        _removing.discard(path)


def _children(recursive: bool) -> list:
    """This process's children to end (psutil processes), but multiprocessing's resource
    tracker: it ignores SIGTERM, and ends by itself once this process has gone (its pipe
    closes), unlinking the semaphores it tracks — a SIGKILL would leave them in /dev/shm."""
    import psutil

    try:
        children = psutil.Process().children(recursive=recursive)
    except psutil.Error:
        return []
    out = []
    for child in children:
        try:
            if any("multiprocessing.resource_tracker" in word for word in child.cmdline()):
                continue
        except psutil.Error:
            continue  # gone already
        out.append(child)
    return out


def end_children(grace_s: float = CHILD_GRACE_S) -> None:
    """End every child process (and theirs): SIGTERM, then SIGKILL for those still there after
    `grace_s`; then the temp and lowered folders of those that could not remove their own."""
    import psutil

    from conversion.core.runtime.lowering import LOWERED_PREFIX

    children = _children(recursive=True)
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    # Those of children killed now, and of any that ended before (killed by another hand).
    paths.sweep_dead_temp_folders(LOWERED_PREFIX, paths.TEMP_PREFIX)


def end_child(proc: subprocess.Popen, grace_s: float = CHILD_GRACE_S) -> None:
    """End one child (a worker) now: SIGTERM, which it answers by cleaning up and exiting
    (`install(unwind=False)`), then SIGKILL after `grace_s`, its folders swept then."""
    from conversion.core.runtime.lowering import LOWERED_PREFIX

    with contextlib.suppress(OSError):
        proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        paths.sweep_dead_temp_folders(LOWERED_PREFIX, paths.TEMP_PREFIX)


def _remove_own() -> None:
    """What this process made and would remove on a normal exit, short of its children."""
    from conversion.core.runtime import lowering

    lowering.discard_all()
    for path in list(_removing):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    bundle_lock.release_all(timeout=LOCK_WAIT_S)
    paths.remove_claimed_temp_folder()


def end_now(code: int, line: str | None = None) -> NoReturn:
    """End this process within a fraction of a second, from any thread, leaving nothing:
    children ended, lowered folders and registered partial files removed, bundle locks
    released, the temp folder removed. `line` goes to stderr first (unbuffered: a full pipe
    must not keep the process alive, so it is written from a thread of its own)."""
    global _ended
    _ended = True
    with contextlib.suppress(BaseException):
        end_children()
    with contextlib.suppress(BaseException):
        _remove_own()
    if line:
        note = threading.Thread(target=os.write, args=(2, f"{line}\n".encode()), daemon=True)
        note.start()
        note.join(0.1)
    os._exit(code)


def end_process(code: int) -> NoReturn:
    """End this process without the interpreter's teardown, once every session is closed (or
    its lowered assets discarded) and every file written. The Core AI runtime's native teardown
    has aborted finished processes (SIGABRT, "C++ exception handling detected but the Swift
    runtime was compiled with exceptions disabled": a `serve` worker after its last reply, the
    Swift tests' recording script after its last file), turning a success into exit 6 at
    random; the OS frees what the runtime holds. Used by every entry point that loads it.
    The bundle folders it holds are let go first, so their lock files go with it."""
    global _ended
    _ended = True  # a signal now changes nothing: the end is under way
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    # A child still running (a session left open on an error's way out) is ended so that it
    # cleans up: the kernel's parent-death SIGKILL (`parent_watch`) would leave its folders.
    with contextlib.suppress(BaseException):
        end_children()
    _remove_own()
    os._exit(code)


def run_program(main: Callable[[], int | None]) -> NoReturn:
    """Run a program's `main` (the `voxport` program, a `serve` worker) in its own temp folder
    (`paths.claim_temp_folder`) with SIGTERM and SIGINT handled (`install`), then end the
    process by `end_process` however `main` ended — returned, interrupted, a traceback (printed
    first, exit 1) — so its lock files, lowered assets and temp folder go with it."""
    paths.claim_temp_folder()
    install()
    try:
        code = main()
    except SystemExit as e:  # argparse's refusals and --help
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, int | None):
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt as e:
        print(message(e), file=sys.stderr)
        code = exit_code(e)
    except BaseException:
        if _signal is None:  # a bug: its traceback, and the clean-up of any other end
            traceback.print_exc()
            code = 1
        else:
            # The signal's exception, changed on its way out by a library that wrapped it: the
            # converter's MLIR callbacks turn any exception into a RuntimeError.
            print(signalled_line(), file=sys.stderr)
            code = 128 + _signal
    end_process(code or 0)


def signalled_line() -> str | None:
    """The one line for the signal this process is ending on (None: no signal)."""
    if _signal is None:
        return None
    return message(Terminated(_signal) if _signal != signal.SIGINT else KeyboardInterrupt())
