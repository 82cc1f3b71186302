"""The CLI's Audio8 weights: --weights DIR (the publisher's layout) or seeded random ones."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from conversion.core.errors import WeightsError
from conversion.core.weights_folder import files_sha256, folder_problem, read_manifest

from . import codec as codec_mod
from . import weights
from .config import Audio8Config
from .reference import Audio8LM
from .tokenizer import TOKENIZER_FILE, check_tokenizer, load_tokenizer


@dataclass
class Loaded:
    folder: Path
    config: Audio8Config
    lm: Audio8LM
    codec: codec_mod.Codec
    codec_config: codec_mod.CodecConfig
    tokenizer: object


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voxport" / "audio8_tts"


def resolve(spec: str | None, config: Audio8Config, seed: int) -> Path:
    torch.set_num_threads(1)  # 2 threads stall this shared machine; the runtime uses one
    if spec is None:
        raise WeightsError(
            "audio8_tts: no weights given. Pass --weights DIR (a local snapshot: config.json, "
            "model.safetensors, codec.pth, tokenizer.json) or --weights random (noise)"
        )
    if spec == "random":
        print(
            f"audio8_tts: --weights random: seeded random weights at the {config.name} "
            "configuration; the audio will be noise",
            file=sys.stderr,
        )
        folder = cache_root() / f"random-{config.name}-seed{seed}"
        if folder_problem(folder, full=False) is not None:
            codec_cfg = codec_mod.CONFIGS[config.name]
            weights.random_snapshot(
                folder,
                config,
                seed,
                codec_writer=lambda p: codec_mod.write_random_codec(
                    p, codec_cfg, seed, nested=True
                ),
            )
        return folder
    folder = Path(spec).expanduser()
    weights.check_layout(folder)
    return folder


def is_random(folder: Path) -> bool:
    manifest = read_manifest(folder)
    return bool(manifest and manifest.get("random"))


def load(folder: Path, config: Audio8Config) -> Loaded:
    """The reference LM, the codec and the tokenizer from a snapshot, checked against `config`."""
    weights.check_layout(folder)
    found = weights.read_config(folder)
    if found.name != config.name:
        raise WeightsError(
            f"audio8_tts weights in {folder} are the {found.name} configuration, but --config "
            f"{config.name} was asked for: pass --config {found.name}"
        )
    lm = Audio8LM(found).eval()
    lm.load_state_dict(weights.load_lm_state(folder, found))
    codec_cfg = codec_mod.CONFIGS[found.name]
    codec = codec_mod.load_codec(folder / found.codec_filename, codec_cfg).eval()
    tok = load_tokenizer(folder)
    check_tokenizer(tok, found, str(folder / TOKENIZER_FILE))
    return Loaded(folder, found, lm, codec, codec_cfg, tok)


def snapshot_sha256(folder: Path) -> str:
    """One hash over the snapshot's files (our own voxport-* manifest excluded)."""
    names = sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith("voxport-"))
    return files_sha256(folder, names)
