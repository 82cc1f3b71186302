"""Fixtures for the Swift package (ios/, VoxportKit), written by the project's own Python code.

The Swift tests compare their manifest decoding, content hashes, bucket choice, npy/npz reader,
wav writer, DSP and model hosts against what this writes, so every expected value comes from
the code Swift must agree with. The data flow: the shared writers of `conversion.fixtures`
(sha256 vectors, bundle, npy/npz, buckets, audio, DSP: conversion.core, numpy's own writers,
torch) write the top of the folder; then each model the registry lists with a
`swift_fixtures.py` writes `<model>/` with its own host's code; last, `index.json` lists every
file with its size and sha256 (what the next run may replace: `conversion.fixtures.folder`).

Run: `python -m conversion.cli.swift_fixtures ios/Tests/Fixtures` (or `voxport fixtures
swift`). The output is the same bytes on every run (fixed seeds), with two pinned clocks:
np.savez stamps every zip member with the local time, so the writes run with zipfile's clock
fixed at 1980-01-01 (`conversion.fixtures.plumbing.pinned_zip_clock`, also handed to each
model's writer); BundleWriter stamps `manifest.json` with `created`, which is rewritten to a
fixed value afterwards (`conversion.fixtures.bundle`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from conversion.core.threads import pin_torch_threads
from conversion.fixtures.arrays import write_arrays, write_audio, write_buckets
from conversion.fixtures.bundle import write_bundle
from conversion.fixtures.compare import compare_fixtures
from conversion.fixtures.dsp import write_dsp
from conversion.fixtures.folder import (
    INDEX,
    check_folder,
    index_payload,
    new_staging,
    remove_staging,
    swap_in,
)
from conversion.fixtures.plumbing import pinned_zip_clock, write_json, write_sha256

from . import registry

# The public face of the fixture writer (`voxport fixtures swift [--check]` uses both).
__all__ = ["compare_fixtures", "main", "write_fixtures"]

# ----------------------------------------------------------------------------- models


def _fixture_models() -> list[str]:
    """The models whose host writes its own fixtures (`<model>/`), in the registry's order."""
    return [name for name in registry.names() if registry.resolve(name).has_swift_fixtures]


def _write_models(root: Path) -> None:
    """Every model host's fixtures (`<model>/`), written by that host's code itself."""
    for model in _fixture_models():
        registry.swift_fixture_writer(model)(root / model, pinned_zip_clock)


# ----------------------------------------------------------------------------- entry
def _write_all(root: Path) -> None:
    # torch's reductions (istft's overlap-add) round differently with 1 and 2 threads: pin one,
    # as every voxport command does, so the bytes do not depend on who called first.
    pin_torch_threads()
    torch.manual_seed(0)
    write_sha256(root)
    write_bundle(root)
    write_arrays(root)
    write_buckets(root)
    write_audio(root)
    write_dsp(root)
    _write_models(root)


def write_fixtures(out_dir: Path) -> dict:
    """Write every Swift fixture under `out_dir`; returns {relative path: size in bytes}.

    `out_dir` is refused (one line, before any work) unless it is new, empty, or holds only
    what the previous run wrote (`conversion.fixtures.folder`); the new set is written beside
    it and swapped in whole, so nothing of anyone else's is deleted and a failed run leaves the
    previous fixtures as they were."""
    out_dir = Path(out_dir)
    check_folder(out_dir)
    staging = new_staging(out_dir)
    try:
        _write_all(staging)
        index = index_payload(staging)
        write_json(staging / INDEX, index)
        check_folder(out_dir)  # nothing of anyone else's appeared while this run wrote
        swap_in(staging, out_dir)
    finally:
        remove_staging(staging)
    return {rel: entry["bytes"] for rel, entry in index["files"].items()}


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
