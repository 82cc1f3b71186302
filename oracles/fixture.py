"""The fixture format: what an oracle recorded, on disk, verifiable later.

A fixture is two files sharing a stem: `<stem>.npz` holds every array and `<stem>.json`
is the manifest that says what they are and pins each one by sha256, so a gate that
loads a fixture months later knows it compares against exactly what the oracle saw.

Array keys are namespaced by group in the files ("inputs/ids",
"intermediates/decoder.generator.conv_post", "draws/randn_like/0") and bare inside
`Fixture`'s dicts (`fx.inputs["ids"]`). Values that are not arrays (a speed of 1.0, a
voice name) cannot go in the npz; they live in the manifest under
`meta["scalars"]["<group>/<key>"]` and come back into their group on load.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core.versions import package_versions as core_package_versions
from oracles.arrays import is_array_like, tensor_to_numpy, widening_note

FORMAT = "voxport-fixture/1"
GROUPS = ("inputs", "intermediates", "draws", "outputs")
# Always recorded, so a fixture says which torch/numpy/Core AI produced it.
BASE_PACKAGES = ("torch", "numpy", "coreai-torch", "coreai-core", "coreai-opt")
# Stem used when save/load are given a directory.
DEFAULT_STEM = "fixture"


class FixtureError(Exception):
    """A fixture is missing, malformed, or does not match its manifest."""


@dataclass
class Fixture:
    """Everything one oracle run recorded; see the module docstring for key conventions."""

    model: str
    seeds: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    intermediates: dict[str, Any] = field(default_factory=dict)
    draws: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    packages: dict[str, str | None] = field(default_factory=dict)
    created: str | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        """All array values under their namespaced keys ("outputs/audio"), converted to numpy."""
        out: dict[str, np.ndarray] = {}
        for group in GROUPS:
            for key, value in getattr(self, group).items():
                if is_array_like(value):
                    out[f"{group}/{key}"] = _as_numpy(value)[0]
        return out


def fixture_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(npz, json) for a path stem, either file of the pair, or a directory.

    A directory means `<dir>/fixture.*`. Only a final ".npz"/".json" is stripped, so
    stems with dots ("kokoro.v1") keep them.
    """
    p = Path(path)
    if p.is_dir():
        p = p / DEFAULT_STEM
    elif p.suffix in (".npz", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".npz"), p.with_name(p.name + ".json")


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    """Installed version of each distribution (None when absent), plus every coreai-*."""
    wanted = list(dict.fromkeys([*BASE_PACKAGES, *names]))
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"] or ""
        if name.lower().startswith("coreai") and name not in wanted:
            wanted.append(name)
    return core_package_versions(wanted)


def save_fixture(
    fx: Fixture, path: str | os.PathLike[str], extra_packages: Iterable[str] = ()
) -> Path:
    """Write `fx` atomically; returns the manifest's path.

    Both files are written to temporary names first and moved into place with
    os.replace, npz before json, so a crash leaves either the previous fixture or (if it
    dies between the two moves) a pair whose hashes disagree, which load_fixture refuses.
    Package versions already set in `fx.packages` are kept (re-saving a loaded fixture
    keeps its provenance); the rest are read from this environment.
    """
    npz_path, json_path = fixture_paths(path)
    arrays, scalars, notes = _split(fx)
    meta = dict(fx.meta)
    if scalars:
        meta["scalars"] = {**meta.get("scalars", {}), **scalars}
    if notes:
        meta["dtype_notes"] = {**meta.get("dtype_notes", {}), **notes}
    packages = package_versions([*fx.packages, *extra_packages])
    packages.update({k: v for k, v in fx.packages.items() if v is not None})
    manifest = {
        "format": FORMAT,
        "model": fx.model,
        "created": fx.created or datetime.now(UTC).isoformat(timespec="seconds"),
        "seeds": fx.seeds,
        "packages": packages,
        **{g: [k for k in arrays if k.startswith(g + "/")] for g in GROUPS},
        "arrays": {
            k: {"shape": list(a.shape), "dtype": str(a.dtype), "sha256": _sha256(a)}
            for k, a in arrays.items()
        },
        "meta": meta,
    }
    try:
        manifest_text = json.dumps(manifest, indent=1, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise FixtureError(f"fixture {fx.model!r}: seeds/meta are not JSON: {exc}") from exc

    npz_path.parent.mkdir(parents=True, exist_ok=True)
    temps: list[Path] = []
    try:
        temps.append(_write_temp(npz_path, lambda fh: np.savez(fh, **arrays)))
        temps.append(_write_temp(json_path, lambda fh: fh.write(manifest_text.encode())))
        os.replace(temps[0], npz_path)
        os.replace(temps[1], json_path)
    finally:
        for tmp in temps:  # already moved on success; leftovers only after a failure
            tmp.unlink(missing_ok=True)
    return json_path


def load_fixture(path: str | os.PathLike[str]) -> Fixture:
    """Read a fixture and verify every array against the manifest's shape, dtype and sha256."""
    npz_path, json_path = fixture_paths(path)
    if not json_path.is_file():
        raise FixtureError(f"fixture manifest missing: {json_path}")
    if not npz_path.is_file():
        raise FixtureError(f"fixture arrays missing: {npz_path} (manifest {json_path} exists)")
    try:
        manifest = json.loads(json_path.read_text())
    except json.JSONDecodeError as exc:
        raise FixtureError(f"{json_path}: not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise FixtureError(f"{json_path}: format is {found!r}, expected {FORMAT!r}")

    listed: dict[str, dict[str, Any]] = manifest.get("arrays", {})
    with np.load(npz_path, allow_pickle=False) as npz:
        stored = set(npz.files)
        for key in listed:
            if key not in stored:
                raise FixtureError(f"{npz_path}: array {key!r} is in the manifest but not stored")
        extra = sorted(stored - set(listed))
        if extra:
            raise FixtureError(f"{npz_path}: array {extra[0]!r} is stored but not in the manifest")
        arrays = {key: _verified(npz, key, listed[key], npz_path) for key in listed}

    meta = dict(manifest.get("meta", {}))
    groups: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
    for key, array in arrays.items():
        group, _, name = key.partition("/")
        if group not in groups:
            raise FixtureError(f"{npz_path}: array {key!r} has unknown group {group!r}")
        groups[group][name] = array
    for key, value in meta.pop("scalars", {}).items():
        group, _, name = key.partition("/")
        groups.setdefault(group, {})[name] = value
    return Fixture(
        model=manifest.get("model", ""),
        seeds=manifest.get("seeds", {}),
        meta=meta,
        packages=manifest.get("packages", {}),
        created=manifest.get("created"),
        **{g: groups[g] for g in GROUPS},
    )


def _verified(npz: Any, key: str, entry: dict[str, Any], npz_path: Path) -> np.ndarray:
    try:
        array = npz[key]
    except Exception as exc:  # a corrupt zip member surfaces as many exception types
        raise FixtureError(f"{npz_path}: array {key!r} cannot be read: {exc}") from exc
    if list(array.shape) != list(entry.get("shape", [])) or str(array.dtype) != entry.get("dtype"):
        raise FixtureError(
            f"{npz_path}: array {key!r} is {array.dtype}{list(array.shape)}, "
            f"manifest says {entry.get('dtype')}{entry.get('shape')}"
        )
    if _sha256(array) != entry.get("sha256"):
        raise FixtureError(f"{npz_path}: array {key!r} does not match its sha256 in the manifest")
    return array


def _split(fx: Fixture) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, str]]:
    """Namespaced arrays, namespaced JSON scalars, and notes on widened dtypes."""
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for group in GROUPS:
        for key, value in getattr(fx, group).items():
            if not isinstance(key, str) or not key or key.startswith("/"):
                raise FixtureError(f"fixture {fx.model!r}: bad key {key!r} in {group}")
            full = f"{group}/{key}"
            if is_array_like(value):
                array, widened = _as_numpy(value)
                if array.dtype.hasobject:
                    raise FixtureError(f"fixture {fx.model!r}: array {full!r} has object dtype")
                arrays[full] = array
                if widened:
                    notes[full] = widening_note(widened)
            else:
                scalars[full] = value.item() if isinstance(value, np.generic) else value
    return arrays, scalars, notes


def _as_numpy(value: Any) -> tuple[np.ndarray, str | None]:
    if isinstance(value, np.ndarray):
        return value, None
    return tensor_to_numpy(value)


def _sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _write_temp(final: Path, write: Any) -> Path:
    """Write through `write(fh)` to a hidden temp file beside `final`; remove it on failure."""
    fd, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp
