"""Where the CLI's Chatterbox weights come from: --weights DIR, or seeded random ones (cached)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from conversion.core.errors import WeightsError
from conversion.core.weights_folder import files_sha256, folder_problem

from . import weights
from .config import ChatterboxConfig


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voxport" / "chatterbox"


def resolve(spec: str | None, config: ChatterboxConfig, seed: int) -> Path:
    """The snapshot folder for `--weights` (a folder, "random", or nothing)."""
    import torch

    # Eager torch with 2 threads stalls on this shared machine; the runtime is single-threaded.
    torch.set_num_threads(1)
    if spec is None:
        raise WeightsError(
            "chatterbox: no weights given. Pass --weights DIR (a local snapshot of "
            "ResembleAI/chatterbox: ve.safetensors, t3_cfg.safetensors, s3gen.safetensors, "
            "tokenizer.json, conds.pt) or --weights random (seeded random weights: noise)"
        )
    if spec == "random":
        print(
            "chatterbox: --weights random: seeded random weights at the "
            f"{config.name} configuration; the audio will be noise",
            file=sys.stderr,
        )
        folder = cache_root() / f"random-{config.name}-seed{seed}"
        if folder_problem(folder, full=False) is not None:
            weights.random_snapshot(folder, config, seed)
        return folder
    folder = Path(spec).expanduser()
    weights.check_layout(folder)
    return folder


def is_random(folder: Path) -> bool:
    """True for a snapshot `weights.random_snapshot` wrote (its manifest says so)."""
    from conversion.core.weights_folder import read_manifest

    manifest = read_manifest(folder)
    return bool(manifest and manifest.get("random"))


def snapshot_sha256(folder: Path) -> str:
    """One hash over the checkpoint files' contents (what a bundle was exported from)."""
    return files_sha256(folder, [*weights.REQUIRED, weights.CONDS])
