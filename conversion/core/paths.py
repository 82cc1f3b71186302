"""Output paths checked before any work starts, so a long export never dies at the end."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .errors import UserError


def ensure_writable_folder(folder: Path) -> Path:
    """Create `folder` if needed; a UserError naming it when it cannot be written."""
    folder = Path(folder) if str(folder) else Path(".")
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


def public_mode(path: Path | str) -> None:
    """Give a finished temp file the mode a plain `open()` would (0666 less the umask):
    mkstemp's 0600 would otherwise leak into the renamed output."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def writable_file(value: str | Path) -> Path:
    """An output file path whose folder exists (or can be made) and is writable."""
    path = Path(value)
    if path.is_dir():
        raise UserError(f"{path} is a folder: give a file path")
    ensure_writable_folder(path.parent)
    return path


def write_json(path: Path | str | None, payload: dict) -> None:
    """Write `payload` as JSON to `path` (nothing when None); NaN is refused, not written."""
    if path is not None:
        text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
        tmp = Path(path).with_name(f".{Path(path).name}.partial")
        tmp.write_text(text)
        tmp.replace(path)
