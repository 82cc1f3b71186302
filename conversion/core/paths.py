"""Output paths checked before any work starts, so a long export never dies at the end."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from conversion.core.errors import UserError


def ensure_writable_folder(folder: Path) -> Path:
    """Create `folder` if needed; a UserError naming it when it cannot be written."""
    folder = Path(folder) if str(folder) else Path(".")
    check_name_lengths(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {folder}: {e.strerror}") from e
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write to {folder}: permission denied")
    # os.access says yes to root everywhere, and /proc or a read-only mount refuse anyway:
    # create (and remove) a file there, so the failure comes now, not after minutes of work.
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".voxport-probe-"):
            pass
    except OSError as e:
        raise UserError(f"cannot write to {folder}: {e.strerror}") from e
    return folder


#: The file system's limits where it says none (Linux: ext4, tmpfs, xfs, btrfs alike).
NAME_MAX, PATH_MAX = 255, 4096


def _limit(path: Path, name: str, default: int) -> int:
    """`pathconf(name)` of the nearest existing folder above `path` (its file system's own)."""
    p = Path(os.path.abspath(path))
    for folder in (p, *p.parents):
        try:
            return int(os.pathconf(folder, name))
        except (OSError, ValueError):
            continue
    return default


def shown(path: Path | str, width: int = 60) -> str:
    """`path` for a one-line message: a long name cut in the middle (a 5,000-character name
    would be the whole error)."""
    text = str(path)
    return text if len(text) <= width else f"{text[: width // 2]}…{text[-width // 2 :]}"


def check_name_lengths(path: Path | str, what: str | None = None) -> None:
    """A UserError when a name in `path` is longer than its file system takes (NAME_MAX
    bytes per name, PATH_MAX bytes in all): every later call on it (stat, open, mkdir) would
    fail with ENAMETOOLONG, some only after minutes of work."""
    path = Path(path)
    label = what or shown(path)
    name_max = _limit(path, "PC_NAME_MAX", NAME_MAX)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise UserError(
                f"{label}: the name {shown(part, 24)!r} is {size} bytes, over the file "
                f"system's {name_max} bytes per name; give a shorter name"
            )
    size = len(os.fsencode(os.path.abspath(path)))
    path_max = _limit(path, "PC_PATH_MAX", PATH_MAX)
    if size >= path_max:
        raise UserError(
            f"{label}: the path is {size} bytes in full, over the file system's {path_max - 1}; "
            "give a shorter path"
        )


def public_mode(path: Path | str) -> None:
    """Give a finished temp file the mode a plain `open()` would (0666 less the umask):
    mkstemp's 0600 would otherwise leak into the renamed output."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


# The folders this process made for its output files, outermost first: a failed run removes
# them again (those still empty), so it leaves no trace of its `-o` path (`remove_made_folders`).
_MADE_FOR_OUTPUTS: list[Path] = []


def _missing_ancestors(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, outermost first."""
    missing = []
    p = folder.absolute()
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing[::-1]


def forget_made_folders() -> None:
    """A new run begins (the CLI called again in one process): earlier runs' folders stay."""
    _MADE_FOR_OUTPUTS.clear()


def remove_made_folders() -> list[Path]:
    """Remove the folders made for outputs that are still empty, innermost first (the run
    failed); the removed ones. A folder something was written into stays."""
    removed = []
    while _MADE_FOR_OUTPUTS:
        folder = _MADE_FOR_OUTPUTS.pop()
        try:
            folder.rmdir()
            removed.append(folder)
        except OSError:
            continue  # not empty (or gone): kept
    return removed


def writable_file(value: str | Path) -> Path:
    """An output file path whose folder exists (or can be made) and is writable, naming a
    regular file or nothing yet.

    Outputs are written beside the target and renamed onto it (a reader never sees half a
    file), so the target is replaced, not written into: a symbolic link, a device (`/dev/null`,
    `/dev/full`), a FIFO or a socket there is refused in one line, before any work, rather
    than swapped for a regular file. An empty path, or a name longer than the file system
    takes, is refused too (`check_name_lengths`)."""
    if not str(value):
        raise UserError("an output path is empty: give a file path")
    path = Path(value)
    check_name_lengths(path)
    if path.is_symlink():
        raise UserError(
            f"{path} is a symbolic link: outputs replace their target by a rename, which would "
            "replace the link; give the path of a regular file (e.g. the link's target)"
        )
    if path.is_dir():
        raise UserError(f"{path} is a folder: give a file path")
    if path.exists() and not path.is_file():
        kind = (
            "a device" if path.is_char_device() or path.is_block_device()
            else "a FIFO" if path.is_fifo()
            else "a socket" if path.is_socket()
            else "not a regular file"
        )  # fmt: skip
        raise UserError(
            f"{path} is {kind}: outputs replace their target by a rename, which would replace "
            "it; give the path of a regular file"
        )
    made = _missing_ancestors(path.parent if str(path.parent) else Path("."))
    ensure_writable_folder(path.parent)
    _MADE_FOR_OUTPUTS.extend(f for f in made if f not in _MADE_FOR_OUTPUTS)
    return path


_PARTIAL = ".partial-"


def partial_path(target: Path | str) -> Path:
    """Where this process writes `target` before renaming it there: `.NAME.partial-PID`
    beside it (two processes writing one target never share it). The partial files of
    processes that are gone (killed mid-write) are removed first."""
    target = Path(target)
    sweep_dead_partials(target.parent)
    return target.with_name(f".{_partial_stem(target.name)}{_PARTIAL}{os.getpid()}")


def _partial_stem(name: str) -> str:
    """`name`, or when `.NAME.partial-PID` would pass NAME_MAX (a valid 250-byte target, whose
    write failed after all the work), its first bytes and a hash of the whole: still one
    name per target, within the limit whatever the pid (7 digits at most on Linux)."""
    raw = os.fsencode(name)
    room = NAME_MAX - 1 - len(_PARTIAL) - 7
    if len(raw) <= room:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = raw[: room - 17].decode("utf-8", "ignore")  # whole characters only
    return f"{head}~{digest}"


def sweep_dead_partials(folder: Path) -> list[Path]:
    """Remove from `folder` the partial files (`.NAME.partial-PID`) of writers that are gone,
    whatever their target (issue 29: a `speak --stream` killed mid-write left one that only a
    later write of the same target removed); the removed paths. A live writer's is kept."""
    removed = []
    for stale in Path(folder).glob(f".*{_PARTIAL}*"):
        pid = stale.name.rsplit(_PARTIAL, 1)[1]
        # Only a regular file whose name ends in a pid is a writer's: never a user's
        # `.notes.partial-draft`, a folder or a link.
        if not pid.isdigit() or stale.is_symlink() or not stale.is_file():
            continue
        if owner_alive(f"{_PARTIAL}{pid}", _PARTIAL):
            continue
        stale.unlink(missing_ok=True)
        removed.append(stale)
    return removed


def write_json(path: Path | str | None, payload: dict) -> None:
    """Write `payload` as JSON to `path` (nothing when None); NaN is refused, not written."""
    if path is not None:
        if not str(path):
            raise UserError("a JSON output path is empty: give a file path")
        write_text_file(path, json.dumps(payload, indent=2, allow_nan=False) + "\n")


def write_text_file(path: Path | str, text: str) -> None:
    """Write `text` beside `path` and rename it on (an existing file is replaced whole; a run
    that fails leaves what was there)."""
    tmp = partial_path(path)
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- staging folders: a finished folder appears by rename; a killed writer leaves only these --

_STAGING = ".tmp-"
_OLD = ".old-"


def owner_alive(name: str, marker: str) -> bool:
    """Whether the process named in a staging folder's name (`.NAME.tmp-PID-xxxx` or
    `.NAME.old-PID`) still runs; a name without a pid (older voxport) counts as dead."""
    tail = name.split(marker, 1)[1]
    pid = tail.split("-", 1)[0]
    if not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def sweep_stale_staging(dest: Path) -> list[Path]:
    """Remove what a killed writer of `dest` left beside it; the removed paths.

    A staging folder (`.NAME.tmp-PID-…`) of a process that is gone is deleted; one of a live
    process (a second export running now) is left alone. A writer killed between its two
    renames leaves the previous folder as `.NAME.old-PID` and no `NAME`: that folder is put
    back, so the previous bundle keeps serving.
    """
    dest = Path(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for old in sorted(parent.glob(f".{dest.name}{_OLD}*")):
        if owner_alive(old.name, _OLD):
            continue
        if not dest.exists():
            os.rename(old, dest)
        else:
            shutil.rmtree(old, ignore_errors=True)
        removed.append(old)
    for tmp in sorted(parent.glob(f".{dest.name}{_STAGING}*")):
        if not owner_alive(tmp.name, _STAGING):
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def staging_folder(dest: Path) -> Path:
    """A fresh folder beside `dest` to build it in (renamed onto `dest` when complete), after
    sweeping what killed writers left; its name carries this process's pid, so a later sweep
    can tell a live writer's folder from a dead one's. Mode 0777 less the umask (mkdtemp's
    0700 would make the finished folder private)."""
    dest = Path(dest)
    sweep_stale_staging(dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}{_STAGING}{os.getpid()}-", dir=dest.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    return tmp


def process_temp_folder(prefix: str) -> Path:
    """A fresh folder `PREFIX<pid>-xxxx` in the temp folder for this process's scratch files,
    after removing those of processes that are gone (killed, or ended by `os._exit` without
    cleaning up): what a dead process left there is never read again."""
    # Beside this process's own temp folder, not in it (`claim_temp_folder`): each has its own
    # owner, lifetime and sweep.
    base = sweep_dead_temp_folders(prefix, TEMP_PREFIX)  # a killed process's own folder too
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))


def sweep_dead_temp_folders(*prefixes: str) -> Path:
    """Remove the `PREFIX<pid>-xxxx` folders of processes that are gone from the temp folder
    (the one `claim_temp_folder` works beside); that temp folder."""
    base = _claimed.parent if _claimed is not None else Path(tempfile.gettempdir())
    for swept in dict.fromkeys(prefixes):
        for stale in base.glob(f"{swept}*"):
            if stale.is_dir() and not owner_alive(stale.name, swept):
                shutil.rmtree(stale, ignore_errors=True)
    return base


#: The prefix of a voxport process's own temp folder (`claim_temp_folder`).
TEMP_PREFIX = "voxport-tmp-"

_claimed: Path | None = None


def claim_temp_folder() -> Path:
    """Make a fresh `voxport-tmp-<pid>-xxxx` folder this process's temp folder (Python's
    `tempfile.tempdir`), so every temp file and folder made in it, by voxport or by a library,
    goes when `remove_claimed_temp_folder` removes it. Why: voxport ends by `os._exit`
    (`runtime.end_process`), which skips the interpreter's exit handlers, and some libraries
    clean up only there (the G2P's espeak-ng loader copies `libespeak-ng.so` into a `mkdtemp`
    folder removed by a `weakref.finalize`: two folders left per Kokoro run). A killed
    process's folder is removed by the next voxport process (`process_temp_folder`).

    `TMPDIR` points there too, for native libraries and child processes: onnxruntime's
    telemetry writes a `.ses` file into `$TMPDIR` on import (issue 29), and a worker's own
    folders then sit inside its parent's, removed with it."""
    global _claimed, _tmpdir_before
    if _claimed is None:
        _claimed = process_temp_folder(TEMP_PREFIX)
        tempfile.tempdir = str(_claimed)
        _tmpdir_before = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = str(_claimed)
    return _claimed


_tmpdir_before: str | None = None


def remove_claimed_temp_folder() -> None:
    """Remove this process's temp folder and everything in it (the process is ending)."""
    global _claimed
    if _claimed is not None:
        shutil.rmtree(_claimed, ignore_errors=True)
        tempfile.tempdir = None
        if _tmpdir_before is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = _tmpdir_before
        _claimed = None


def old_folder(dest: Path) -> Path:
    """Where `dest` waits while its replacement is renamed in (see `sweep_stale_staging`)."""
    return dest.with_name(f".{dest.name}{_OLD}{os.getpid()}")


NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def no_space_message(err: OSError) -> str | None:
    """The one-line message for a full disk (None for any other OSError)."""
    if err.errno not in NO_SPACE:
        return None
    where = f" writing {err.filename}" if err.filename else ""
    return (
        f"no space left on the device{where}: nothing was kept; free some space there "
        "or write somewhere else (--output-dir / -o)"
    )
