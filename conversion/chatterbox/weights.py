"""Chatterbox weights: a local snapshot in the publisher's layout, or seeded random ones.

    ve.safetensors        VoiceEncoder (speaker embedding for T3)
    t3_cfg.safetensors    T3 (Llama_520M backbone, conditioning encoder, embeddings, heads)
    s3gen.safetensors     S3Gen (S3 tokenizer, CAMPPlus x-vector, flow encoder + CFM, HiFT)
    tokenizer.json        the English text tokenizer ([START] = 255, [STOP] = 0)
    conds.pt              optional: the default voice (T3Cond + S3Gen reference dict)

Everything loads through the publisher's own `ChatterboxTTS.from_local`. No hub is reachable
here, so tests and the published-size gate use `random_snapshot`: the publisher's constructors
at `config`'s sizes, seeded, calibrated where a gate rung needs trained-like behaviour
(calibration.py: voiced f0, a vocoder that depends on its mel, peaked T3 logits, a stop
token that comes), saved in exactly that layout (plus `voxport-config.json` naming the
sizes, which `from_local` cannot be told), with a default voice made by the publisher's own
`prepare_conditionals` from a synthetic reference wav.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from conversion.core.errors import WeightsError
from conversion.core.json_file import load_json_file
from conversion.core.weights_folder import write_folder_atomically
from conversion.s3gen.calibration import calibrate_hift
from conversion.s3gen.snapshot import (
    check_files,
    publisher_environment,
    randomize_untrained,
    synthetic_reference,
)

from .calibration import CALIBRATION, calibrate_t3
from .config import CONFIG_FILE, SAMPLE_RATE, ChatterboxConfig, read_snapshot_config, sizes_patched

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS

REQUIRED = ("ve.safetensors", "t3_cfg.safetensors", "s3gen.safetensors", "tokenizer.json")
CONDS = "conds.pt"
START_TEXT, STOP_TEXT = 255, 0
# Our stand-in tokenizer: the publisher's special tokens at ids 0..7 (its tokenizer.json puts
# [STOP] at 0 and [START] at 255), then one id per character. Random weights only.
_SPECIALS = ("[STOP]", "[UNK]", "[SPACE]", "[PAD]", "[SEP]", "[CLS]", "[MASK]")
_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:'\"-()&$%/ "


def check_layout(folder: Path) -> None:
    """Raise WeightsError naming the first missing checkpoint file."""
    check_files(folder, "chatterbox", "ResembleAI/chatterbox", REQUIRED, CONDS)


def check_snapshot(folder: Path, config: ChatterboxConfig | None = None) -> ChatterboxConfig:
    """The snapshot's sizes, after checking (no model built) that every checkpoint is there
    and readable and, given `config`, that the sizes are the ones asked for: a WeightsError
    naming the file, or both configurations and where the snapshot's came from."""
    folder = Path(folder)
    check_layout(folder)
    # Readable first: damaged files are named as such, not by the sizes their missing
    # marker implies.
    _check_readable(folder)
    snapshot_config = read_snapshot_config(folder)
    if config is not None and config.name != snapshot_config.name:
        if (folder / CONFIG_FILE).exists():
            source = f"its {CONFIG_FILE} says they are the {snapshot_config.name} configuration"
        else:  # the publisher's layout: no marker, the published sizes
            source = (
                f"they carry no {CONFIG_FILE} (voxport writes one into every snapshot it makes "
                f"at other sizes), so they are read as the {snapshot_config.name} configuration"
            )
        raise WeightsError(
            f"chatterbox weights in {folder} do not fit --config {config.name}: {source}; "
            f"pass --config {snapshot_config.name}, or a snapshot made at the {config.name} sizes"
        )
    return snapshot_config


def load_model(folder: Path, config: ChatterboxConfig | None = None) -> ChatterboxTTS:
    """The publisher's `ChatterboxTTS.from_local(folder)` at the snapshot's sizes (CPU, eval)."""
    folder = Path(folder)
    snapshot_config = check_snapshot(folder, config)
    from chatterbox.tts import ChatterboxTTS

    with sizes_patched(snapshot_config), publisher_environment():
        try:
            model = ChatterboxTTS.from_local(folder, "cpu")
        except RuntimeError as err:  # load_state_dict: missing keys or wrong shapes
            name = _file_named_by(str(err))
            raise WeightsError(
                f"chatterbox weights: {folder / name} does not match the "
                f"{snapshot_config.name} configuration's model: {str(err).splitlines()[0]}"
            ) from err
        except (OSError, ValueError) as err:  # unreadable safetensors / tokenizer / conds
            raise WeightsError(f"chatterbox weights in {folder} could not be read: {err}") from err
    model.t3.eval()
    model.s3gen.eval()
    model.ve.eval()
    # The reference cap S3Gen's prompt is cut to (`prepare_conditionals`: the first
    # DEC_COND_LEN samples). Published: the publisher's own 10 s. Reduced: the reduced sizes'
    # shorter cap, so the publisher's cloning and voxport's cut the same samples.
    if snapshot_config.prompt_samples_max < ChatterboxTTS.DEC_COND_LEN:
        model.DEC_COND_LEN = snapshot_config.prompt_samples_max
    return model


def _check_readable(folder: Path) -> None:
    """Open each checkpoint's header (and conds.pt) so a damaged file is named, not a crash."""
    from safetensors import safe_open

    for name in REQUIRED:
        path = folder / name
        try:
            if name.endswith(".safetensors"):
                with safe_open(str(path), framework="pt") as f:
                    f.keys()
            else:
                load_json_file(path)
        except Exception as err:  # noqa: BLE001 - any decoder error: the file is damaged
            raise WeightsError(
                f"chatterbox weights: {path} cannot be read ({type(err).__name__}: "
                f"{str(err)[:160]}); it is truncated or not a {path.suffix} file: re-download it"
            ) from err
    conds = folder / CONDS
    if conds.exists():
        try:
            torch.load(conds, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001
            raise WeightsError(
                f"chatterbox weights: {conds} cannot be read ({type(err).__name__}): "
                "re-download it, or delete it and clone a voice with --ref"
            ) from err


def _file_named_by(message: str) -> str:
    for cls, name in (("T3", "t3_cfg.safetensors"), ("S3Token2Wav", "s3gen.safetensors")):
        if f"for {cls}:" in message:
            return name
    return "ve.safetensors" if "VoiceEncoder" in message else "(a checkpoint)"


def write_tokenizer(path: Path) -> None:
    """A character tokenizer with the publisher's special tokens and ids (random weights only)."""
    vocab = {tok: i for i, tok in enumerate(_SPECIALS)}
    for ch in _CHARS:
        if ch != " ":
            vocab.setdefault(ch, len(vocab))
    vocab["[START]"] = START_TEXT
    added = [
        {
            "id": vocab[t],
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t in (*_SPECIALS, "[START]")
    ]
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Split",
            "pattern": {"String": ""},
            "behavior": "Isolated",
            "invert": False,
        },
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    Path(path).write_text(json.dumps(spec, indent=1))


def random_snapshot(dest: Path, config: ChatterboxConfig, seed: int = 0) -> Path:
    """Seeded random weights at `config`'s sizes, in the publisher's layout, with conds.pt."""
    from safetensors.torch import save_file

    def fill(tmp: Path) -> dict:
        from chatterbox.models.s3gen import S3Gen
        from chatterbox.models.t3 import T3
        from chatterbox.models.voice_encoder import VoiceEncoder

        torch.manual_seed(seed)
        with sizes_patched(config):
            parts = {
                "ve.safetensors": VoiceEncoder(),
                "t3_cfg.safetensors": T3(),
                "s3gen.safetensors": S3Gen(),
            }
            for module in parts.values():
                randomize_untrained(module, seed)
            # trained-like where a gate rung needs it (calibration.py: the statistics)
            calibrate_t3(parts["t3_cfg.safetensors"], seed, config.name)
            calibrate_hift(parts["s3gen.safetensors"].mel2wav.eval(), seed)
            for name, module in parts.items():
                state = {k: v.contiguous() for k, v in module.state_dict().items()}
                save_file(state, str(tmp / name))
        write_tokenizer(tmp / "tokenizer.json")
        if not config.is_published:
            (tmp / CONFIG_FILE).write_text(json.dumps(config.to_json(), indent=2) + "\n")
        _write_default_voice(tmp, config, seed)
        return {
            "model": "chatterbox",
            "config": config.name,
            "seed": seed,
            "random": True,
            "calibration": CALIBRATION,
        }

    print(f"chatterbox: writing seeded random weights ({config.name}) to {dest}", file=sys.stderr)
    return write_folder_atomically(Path(dest), fill)


def _write_default_voice(folder: Path, config: ChatterboxConfig, seed: int) -> None:
    """conds.pt via the publisher's `prepare_conditionals` on a synthetic reference."""
    import soundfile as sf

    seconds = 3.0 if config.is_published else 1.0
    ref = folder / ".default-voice-ref.wav"
    sf.write(ref, synthetic_reference(seconds, seed), SAMPLE_RATE)
    model = load_model(folder)
    model.prepare_conditionals(str(ref), exaggeration=0.5)
    model.conds.save(folder / CONDS)
    ref.unlink()
