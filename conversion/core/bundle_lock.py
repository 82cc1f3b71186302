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

The lock file is voxport's own (issue 29): it is opened without following a link
(`O_NOFOLLOW`), made with `MARK` in it, and anything else at its path — a symbolic link (even
to a missing file: opening through it would create the target), a folder, a FIFO, a user's
file — is refused in one line naming it, never created, written, held or removed.

Waiting is the choice here, not writing elsewhere: the default folder of every random weights
seed is its own (`ModelPort.bundle_path`), so two runs meet at one folder only when they ask
for the same graphs (then the second reuses them) or name the folder themselves.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from conversion.core.errors import UserError


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


#: What a lock file voxport made holds. An empty file is taken as one too: what voxport wrote
#: before this mark (a holder that died left it), and what nobody could lose anything of.
MARK = b"voxport bundle lock: held while the folder beside it is in use or written\n"


def _refuse(path: Path, what: str) -> UserError:
    return UserError(
        f"{path} is {what}, not a lock file voxport made: voxport keeps the lock of the bundle "
        f"{path.name[1:-5]} there; move it away (or remove it) and run again"
    )


def _make(path: Path) -> None:
    """Create the lock file at `path`, its mark in it, never through a link
    (`O_EXCL`: anything there, a dangling link included, is `FileExistsError`)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        os.write(fd, MARK)
    finally:
        os.close(fd)


def _open_nofollow(path: Path) -> int:
    """A descriptor of what is at `path` itself, never a link's target: read-write where it may
    be (NFS emulates flock with POSIX locks, and an exclusive one needs a descriptor open for
    writing), else read-only (a lock file of another user's). O_NONBLOCK: opening a FIFO would
    otherwise wait for a writer."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        return os.open(path, os.O_RDWR | flags)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR):
            raise
    return os.open(path, os.O_RDONLY | flags)


def _open_ours(path: Path) -> IO | None:
    """The lock file at `path`, opened without following a link, made first when absent; a
    `UserError` for anything there that voxport did not make; None where it can be neither
    made nor read (a read-only place)."""
    for _ in range(8):  # made or removed by another process between two looks: look again
        try:
            fd = _open_nofollow(path)
        except FileNotFoundError:
            try:
                _make(path)
            except FileExistsError:
                pass  # another process made it meanwhile: open that one
            except OSError:
                return None  # cannot be made here: nobody here can replace the folder
            continue
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refuse(path, "a symbolic link") from None
            if e.errno in (errno.EACCES, errno.EPERM):
                return None
            raise
        try:
            mode = os.fstat(fd).st_mode
            what = (
                None if stat.S_ISREG(mode)
                else "a folder" if stat.S_ISDIR(mode)
                else "a FIFO" if stat.S_ISFIFO(mode)
                else "not a regular file"
            )  # fmt: skip
            if what is None and os.pread(fd, len(MARK) + 1, 0) not in (MARK, b""):
                what = "a file with other contents"
            if what is not None:
                raise _refuse(path, what)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb")
    return None


def _open(f: _Folder) -> IO | None:
    """The lock file, opened once while this process holds the folder (closing any descriptor
    of it would drop the lock); None where it can be neither created nor read: a read-only
    place, where whoever cannot create the lock file cannot replace the folder beside it."""
    if f.file is None:
        f.file = _open_ours(f.lock_path)
    return f.file


def _close(f: _Folder) -> None:
    if f.file is not None:
        f.file.close()  # drops this process's lock
        f.file = None


def _current(f: _Folder) -> bool:
    """Whether the open lock file is still the one at its path: the last holder removes it
    (`_settle`), and a process that was waiting on the removed one must take the new one."""
    try:
        here, held = os.lstat(f.lock_path), os.fstat(f.file.fileno())
        return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)
    except OSError:
        return False


def _flock(f: _Folder, mode: int, waiting: str) -> None:
    """Take `mode` on the folder's lock file; when it must wait, say `waiting` and who holds
    it. No-op without a lock file."""
    if mode == fcntl.LOCK_EX:
        f.lock_path.parent.mkdir(parents=True, exist_ok=True)
    elif not os.path.lexists(f.lock_path) and not f.dest.is_dir():
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


def release_all(timeout: float = -1) -> None:
    """Let go of every folder this process holds (a folder it was writing too: nothing of this
    process goes on), removing the lock files no other process holds: it is about to end
    without the interpreter's teardown (`runtime.end_process`), or on a signal or its parent's
    death (`runtime.ending`). `timeout` (seconds; -1: no limit) bounds each wait for this
    module's own locks, which the thread that was interrupted may hold: a folder whose lock
    cannot be had in time is left to the kernel (its flock goes with the process; the file
    stays until the folder's next use)."""
    if not _FOLDERS_LOCK.acquire(timeout=timeout):
        return
    try:
        folders = list(_FOLDERS.values())
    finally:
        _FOLDERS_LOCK.release()
    for f in folders:
        if not f.turn.acquire(timeout=timeout):
            continue
        try:
            if f.file is not None:
                f.uses, f.writer, f.depth = 0, None, 0
                _settle(f)
        finally:
            f.turn.release()


def holders(lock_file: Path, exclude: int | None = None) -> str:
    """Who holds `lock_file` now, from /proc/locks (Linux; '' elsewhere or when unreadable):
    e.g. 'pid 1234 using it: voxport gate chatterbox …'."""
    try:
        inode = os.lstat(lock_file).st_ino
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
