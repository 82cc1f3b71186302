"""Weights folders written atomically, with a manifest that lets a damaged copy be detected.

A folder is filled in a temp directory beside its destination and renamed into place only
once every file and the manifest are written, so an interrupted build leaves nothing behind.
The manifest records each file's size and sha256; a truncated checkpoint or a missing voice
is then found by reading the manifest, not by a crash deep inside `torch.load`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conversion.core.bundle import file_sha256, replace_dir
from conversion.core.json_file import JsonFileError, load_json_file
from conversion.core.paths import ensure_writable_folder, staging_folder

MANIFEST = "voxport-weights.json"


def cache_dir(model: str) -> Path:
    """Where a model's built or random weights are cached: $XDG_CACHE_HOME/voxport/MODEL."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voxport" / model


FORMAT = "voxport-weights/1"


def write_folder_atomically(dest: Path, fill: Callable[[Path], dict[str, Any]]) -> Path:
    """`fill(tmp)` writes the files and returns manifest fields; then tmp becomes `dest`."""
    dest = Path(dest)
    ensure_writable_folder(dest.parent)
    tmp = staging_folder(dest)
    try:
        fields = fill(tmp)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        manifest = {
            "format": FORMAT,
            **fields,
            "files": {
                p.relative_to(tmp).as_posix(): {"size": p.stat().st_size, "sha256": file_sha256(p)}
                for p in files
            },
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        replace_dir(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none or it is unreadable."""
    try:
        data = load_json_file(Path(folder) / MANIFEST)
    except (OSError, JsonFileError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def folder_problem(folder: Path, full: bool) -> str | None:
    """Why `folder` does not match its manifest (None when it does).

    Sizes are always checked; with `full`, every file's sha256 too.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return f"{folder} does not exist"
    manifest = read_manifest(folder)
    if manifest is None:
        return f"{folder / MANIFEST} is missing or unreadable"
    for rel, entry in manifest.get("files", {}).items():
        path = folder / rel
        if not path.is_file():
            return f"{rel} is missing"
        size = path.stat().st_size
        if size != entry.get("size"):
            return f"{rel} has {size} bytes, the manifest says {entry.get('size')}"
        if full and file_sha256(path) != entry.get("sha256"):
            return f"{rel} does not match its sha256 in the manifest"
    return None


_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def files_sha256(folder: Path, names: list[str]) -> str:
    """One hash over the named files' contents (`name:sha256` lines), absent files skipped.

    A model's bundle records it as the weights it was exported from. Each file's hash is kept
    per process, keyed by path, size and mtime: a gate checks three bundles against the same
    3.5 GB snapshot and hashes it once.
    """
    h = hashlib.sha256()
    for name in names:
        path = Path(folder) / name
        if not path.is_file():
            continue
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        if key not in _FILE_HASHES:
            _FILE_HASHES[key] = file_sha256(path)
        h.update(f"{name}:{_FILE_HASHES[key]}\n".encode())
    return h.hexdigest()
