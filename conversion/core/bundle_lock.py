"""Who may replace a bundle folder: a process that uses one holds it; a writer waits for them.

One lock file per bundle folder, `.NAME.lock` beside it while anyone holds it (the last
holder removes it), taken with `flock` (the OS drops a dead holder's lock, however it died):

- **shared** while it is in use: by a process that asked `ensure_bundle` for it (a speak, a
  gate, a bench: until it exits), a `Session` or `IsolatedSession` (and so every `voxport
  serve` worker, the Swift `WorkerRunner`'s included) from opening to closing, `sideload`
  while it copies, the asset server while it lowers an asset of a bundle;
- **exclusive** while it is written: `ensure_bundle`'s check-and-export, `voxport export`,
  any `BundleWriter` renaming a finished folder onto it.

So a second export of a folder in use waits until the last process using it lets go, and says
so (naming them); a process that starts using a folder while it is written waits for the new
one. Within one process every use and write of a folder goes through one open lock file (a
process never waits on itself): threads take turns writing, and a thread that writes a folder
its own process uses converts the process's lock.

Waiting is the choice here, not writing elsewhere: the default folder of every random weights
seed is its own (`ModelPort.bundle_path`), so two runs meet at one folder only when they ask
for the same graphs (then the second reuses them) or name the folder themselves.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


@dataclass
class _Folder:
    """This process's hold on one folder: the open lock file, its uses, its writing thread."""

    dest: Path  # its real path
    file: IO | None = None
    uses: int = 0
    writer: int | None = None  # the thread ident writing it now
    depth: int = 0  # nested writes by that thread
    turn: threading.Condition = field(default_factory=threading.Condition)

    @property
    def lock_path(self) -> Path:
        return self.dest.with_name(f".{self.dest.name}.lock")


_FOLDERS: dict[str, _Folder] = {}
_FOLDERS_LOCK = threading.Lock()


def lock_path(dest: Path | str) -> Path:
    """The lock file of folder `dest`: `.NAME.lock` beside it."""
    return _Folder(Path(os.path.realpath(dest))).lock_path


def _folder(dest: Path | str) -> _Folder:
    real = Path(os.path.realpath(dest))
    with _FOLDERS_LOCK:
        return _FOLDERS.setdefault(str(real), _Folder(real))


def _open(f: _Folder) -> IO | None:
    """The lock file, opened once while this process holds the folder (closing any descriptor
    of it would drop the lock); None where it can be neither created nor read: a read-only
    place, where whoever cannot create the lock file cannot replace the folder beside it."""
    if f.file is None:
        for mode in ("a", "r"):
            try:
                f.file = open(f.lock_path, mode)  # noqa: SIM115
                break
            except OSError:
                continue
    return f.file


def _close(f: _Folder) -> None:
    if f.file is not None:
        f.file.close()  # drops this process's lock
        f.file = None


def _current(f: _Folder) -> bool:
    """Whether the open lock file is still the one at its path: the last holder removes it
    (`_settle`), and a process that was waiting on the removed one must take the new one."""
    try:
        return os.stat(f.lock_path).st_ino == os.fstat(f.file.fileno()).st_ino
    except OSError:
        return False


def _flock(f: _Folder, mode: int, waiting: str) -> None:
    """Take `mode` on the folder's lock file; when it must wait, say `waiting` and who holds
    it. No-op without a lock file."""
    if mode == fcntl.LOCK_EX:
        f.lock_path.parent.mkdir(parents=True, exist_ok=True)
    elif not f.lock_path.exists() and not f.dest.is_dir():
        return  # nothing there to hold (the load fails on its own); leave no lock file behind
    said = False
    while (file := _open(f)) is not None:
        try:
            fcntl.flock(file, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if not said:
                who = holders(f.lock_path, exclude=os.getpid()) or "another process holds it"
                print(f"{waiting}: {who}", file=sys.stderr, flush=True)
                said = True
            fcntl.flock(file, mode)
        if _current(f):
            return
        _close(f)  # it was removed while this waited: take the one there now


def _settle(f: _Folder) -> None:
    """After a write or the last use of this process: shared again while it still uses the
    folder; else let go, removing the lock file when no other process holds it (none can
    while this one holds it exclusively), so a folder at rest has no lock file beside it."""
    if f.file is None:
        return
    if f.uses:
        # Current Linux converts exclusive to shared in one step: no writer gets in between.
        fcntl.flock(f.file, fcntl.LOCK_SH)
        return
    try:
        fcntl.flock(f.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _current(f):
            f.lock_path.unlink()
    except (BlockingIOError, OSError):
        pass  # another process holds it (or it cannot be removed here): it stays
    _close(f)


@contextlib.contextmanager
def writing(dest: Path | str, who: str = "voxport") -> Iterator[None]:
    """Hold folder `dest` exclusively for the block (re-entrant in one thread): while another
    process uses or writes it, this waits, saying so as `who` and naming them."""
    f = _folder(dest)
    me = threading.get_ident()
    waiting = f"{who}: waiting to write {dest}"
    with f.turn:
        if f.writer not in (None, me):
            print(f"{waiting}: another thread of this process is writing it", file=sys.stderr)
            f.turn.wait_for(lambda: f.writer is None)
        first = f.writer is None
        f.writer, f.depth = me, f.depth + 1
    try:
        if first:
            _flock(f, fcntl.LOCK_EX, waiting)
        yield
    finally:
        with f.turn:
            f.depth -= 1
            if f.depth == 0:
                f.writer = None
                _settle(f)
                f.turn.notify_all()


class Use:
    """A shared hold on one folder, released by `release()` (idempotent) or `with`."""

    def __init__(self, dest: Path | str) -> None:
        self._folder = _folder(dest)
        self.dest = Path(dest)
        f, me = self._folder, threading.get_ident()
        waiting = f"voxport: waiting to load {self.dest}"
        with f.turn:
            if f.writer not in (None, me):
                print(f"{waiting}: another thread of this process is writing it", file=sys.stderr)
                f.turn.wait_for(lambda: f.writer is None)
            f.uses += 1
            try:
                if f.file is None and f.writer is None:
                    _flock(f, fcntl.LOCK_SH, waiting)
            except BaseException:
                f.uses -= 1
                raise
        self._held = True

    def release(self) -> None:
        f = self._folder
        with f.turn:
            if not self._held:
                return
            self._held = False
            f.uses -= 1
            if f.uses == 0 and f.writer is None:
                _settle(f)

    def __enter__(self) -> Use:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


_KEPT: list[Use] = []


def keep(use: Use) -> None:
    """Hold `use` until this process exits (the OS lets go then): what `ensure_bundle` does
    for the bundles a process asked for."""
    _KEPT.append(use)


def release_all() -> None:
    """Let go of every folder this process holds, removing the lock files no other process
    holds: it is about to end without the interpreter's teardown (`runtime.end_process`)."""
    with _FOLDERS_LOCK:
        folders = list(_FOLDERS.values())
    for f in folders:
        with f.turn:
            if f.writer is None and f.file is not None:
                f.uses = 0
                _settle(f)


def holders(lock_file: Path, exclude: int | None = None) -> str:
    """Who holds `lock_file` now, from /proc/locks (Linux; '' elsewhere or when unreadable):
    e.g. 'pid 1234 using it: voxport gate chatterbox …'."""
    try:
        inode = os.stat(lock_file).st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return ""
    found: list[str] = []
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (blocked waiters are "->" lines)
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        if parts[5].rsplit(":", 1)[-1] != str(inode) or not parts[4].isdigit():
            continue
        pid = int(parts[4])
        if pid == exclude:
            continue
        what = "writing it" if parts[3] == "WRITE" else "using it"
        found.append(f"pid {pid} {what}: {_command_line(pid)}")
    return "; ".join(found)


def _command_line(pid: int, limit: int = 80) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    while words and (Path(words[0]).name.startswith("python") or words[0] == "-m"):
        # "python -m conversion.core.runtime.serve …", ".venv/bin/python voxport …"
        words = words[1:]
    if words:
        words[0] = Path(words[0]).name
    text = " ".join(words)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- what this process asked for ------------------------------------------------------------------

_EXPECTED: dict[str, dict] = {}


def expect(dest: Path | str, key: dict) -> None:
    """Record that this process asked for the bundle at `dest` made from `key` (a manifest
    key): every session it opens there checks the key it loads against it."""
    _EXPECTED[os.path.realpath(dest)] = key


def expected(dest: Path | str) -> dict | None:
    """The key this process asked for at `dest`, if it asked."""
    return _EXPECTED.get(os.path.realpath(dest))
