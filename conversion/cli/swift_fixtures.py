"""Fixtures for the Swift package (ios/, VoxportKit), written by the project's own Python code.

The Swift tests compare their manifest decoding, content hashes, bucket choice, npy/npz reader,
wav writer, DSP and model hosts against what this writes, so every expected value comes from
the code Swift must agree with. The data flow: the shared writers of `conversion.fixtures`
(sha256 vectors, bundle, npy/npz, buckets, audio, DSP: conversion.core, numpy's own writers,
torch) write the top of the folder; then each model the registry lists with a
`swift_fixtures.py` writes `<model>/` with its own host's code; last, `index.json` lists every
file with its size (what the next run clears).

Run: `python -m conversion.cli.swift_fixtures ios/Tests/Fixtures` (or `voxport fixtures
swift`). The output is the same bytes on every run (fixed seeds), with two pinned clocks:
np.savez stamps every zip member with the local time, so the writes run with zipfile's clock
fixed at 1980-01-01 (`conversion.fixtures.plumbing.pinned_zip_clock`, also handed to each
model's writer); BundleWriter stamps `manifest.json` with `created`, which is rewritten to a
fixed value afterwards (`conversion.fixtures.bundle`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch

from conversion.core.threads import pin_torch_threads
from conversion.fixtures.arrays import write_arrays, write_audio, write_buckets
from conversion.fixtures.bundle import write_bundle
from conversion.fixtures.compare import compare_fixtures
from conversion.fixtures.dsp import write_dsp
from conversion.fixtures.plumbing import pinned_zip_clock, write_json, write_sha256

from . import registry

# The public face of the fixture writer (`voxport fixtures swift [--check]` uses both).
__all__ = ["compare_fixtures", "main", "write_fixtures"]

INDEX = "index.json"


# ----------------------------------------------------------------------------- models


def _fixture_models() -> list[str]:
    """The models whose host writes its own fixtures (`<model>/`), in the registry's order."""
    return [name for name in registry.names() if registry.resolve(name).has_swift_fixtures]


def _write_models(root: Path) -> None:
    """Every model host's fixtures (`<model>/`), written by that host's code itself."""
    for model in _fixture_models():
        registry.swift_fixture_writer(model)(root / model, pinned_zip_clock)


# ----------------------------------------------------------------------------- entry
def _clear_previous(out_dir: Path) -> None:
    """Remove what a previous run listed in its index (never anything else)."""
    index = out_dir / INDEX
    if not index.is_file():
        return
    for rel in json.loads(index.read_text())["files"]:
        (out_dir / rel).unlink(missing_ok=True)
    shutil.rmtree(out_dir / "bundle", ignore_errors=True)
    for model in _fixture_models():
        shutil.rmtree(out_dir / model, ignore_errors=True)


def write_fixtures(out_dir: Path) -> dict:
    """Write every Swift fixture under `out_dir`; returns {relative path: size in bytes}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _clear_previous(out_dir)
    # torch's reductions (istft's overlap-add) round differently with 1 and 2 threads: pin one,
    # as every voxport command does, so the bytes do not depend on who called first.
    pin_torch_threads()
    torch.manual_seed(0)
    write_sha256(out_dir)
    write_bundle(out_dir)
    write_arrays(out_dir)
    write_buckets(out_dir)
    write_audio(out_dir)
    write_dsp(out_dir)
    _write_models(out_dir)
    files = {
        p.relative_to(out_dir).as_posix(): p.stat().st_size
        for p in sorted(out_dir.rglob("*"))
        if p.is_file() and p.name != INDEX
    }
    write_json(out_dir / INDEX, {"files": files, "total_bytes": sum(files.values())})
    return files


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m conversion.cli.swift_fixtures OUT_DIR", file=sys.stderr)
        return 2
    files = write_fixtures(Path(argv[0]))
    print(f"wrote {len(files)} files, {sum(files.values())} bytes, to {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
