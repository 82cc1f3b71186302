"""Output paths checked before any work starts, so a long export never dies at the end."""

from __future__ import annotations

import json
import os
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
    return folder


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
