"""Chatterbox Turbo weights: a snapshot in the publisher's layout, and seeded random ones.

    ve.safetensors              VoiceEncoder (speaker embedding for T3)
    t3_turbo_v1.safetensors     T3 (GPT2_medium backbone, speaker projection, embeddings, heads)
    s3gen_meanflow.safetensors  S3Gen(meanflow=True) (S3 tokenizer, CAMPPlus, flow, HiFT)
    tokenizer.json              GPT-2's byte-level BPE tokenizer (len 50,276 with added tokens)
    tokenizer_config.json       what AutoTokenizer reads to pick the GPT-2 tokenizer class
    conds.pt                    optional: the default voice (T3Cond + S3Gen reference dict)

Everything loads through the publisher's own `ChatterboxTurboTTS.from_local`. No hub is
reachable here, so `random_snapshot` writes the publisher's constructors' models at `config`'s
sizes, seeded and calibrated (calibration.py), in exactly that layout (plus
`voxport-config.json` naming the sizes, which from_local cannot be told), with a default voice
made by the publisher's own `prepare_conditionals` from a synthetic 6 s reference.

The tokenizer stand-in: Whisper's GPT-2 tokenizer.json (installed in the venv) is GPT-2's
byte-level BPE, 50,257 ids with <|endoftext|> at 50256; it is kept with Whisper's own special
tokens and post-processor dropped (GPT-2 adds none) and 19 stand-in added tokens at 50257..50275,
so that `len(tokenizer)` is the 50,276 from_local expects (it warns otherwise). The publisher's
own 19 added tokens are not known here: the stand-ins are named `<|voxport_added_N|>`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from conversion.core.errors import WeightsError
from conversion.core.json_file import JsonFileError, load_json_object
from conversion.core.weights_folder import cache_dir, folder_problem, write_folder_atomically
from conversion.s3gen.calibration import calibrate_hift
from conversion.s3gen.snapshot import (
    check_files,
    publisher_environment,
    randomize_untrained,
    synthetic_reference,
)

from .calibration import CALIBRATION, calibrate_t3, calibrate_time_mixer
from .config import (
    CONFIG_FILE,
    PUBLISHED,
    SAMPLE_RATE,
    SPEECH_VOCAB_SIZE,
    TEXT_VOCAB,
    TurboConfig,
    sizes_patched,
)

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

MODEL = "chatterbox_turbo"
VE, T3_FILE, S3GEN_FILE = "ve.safetensors", "t3_turbo_v1.safetensors", "s3gen_meanflow.safetensors"
TOKENIZER, TOKENIZER_CONFIG = "tokenizer.json", "tokenizer_config.json"
REQUIRED = (VE, T3_FILE, S3GEN_FILE, TOKENIZER)
CONDS = "conds.pt"
ENDOFTEXT = 50256
REFERENCE_SECONDS = 6.0  # prepare_conditionals asserts a reference longer than 5 s


def check_layout(folder: Path) -> None:
    """Raise WeightsError naming the first missing checkpoint file."""
    check_files(folder, "chatterbox_turbo", "ResembleAI/chatterbox-turbo", REQUIRED, CONDS)


def read_snapshot_config(folder: Path) -> TurboConfig:
    """The sizes a snapshot was written at: our marker file, or the published ones."""
    marker = Path(folder) / CONFIG_FILE
    if not marker.exists():
        return PUBLISHED
    try:
        return TurboConfig.from_json(load_json_object(marker))
    except (OSError, JsonFileError, TypeError) as e:
        raise WeightsError(f"{marker} cannot be read as the snapshot's sizes ({e})") from None


def load_model(folder: Path) -> ChatterboxTurboTTS:
    """The publisher's `ChatterboxTurboTTS.from_local(folder)` at the snapshot's sizes (CPU)."""
    folder = Path(folder)
    check_layout(folder)
    config = read_snapshot_config(folder)
    from chatterbox.tts_turbo import ChatterboxTurboTTS

    with sizes_patched(config), publisher_environment():
        try:
            model = ChatterboxTurboTTS.from_local(folder, "cpu")
        except RuntimeError as err:  # load_state_dict: missing keys or wrong shapes
            raise WeightsError(
                f"chatterbox_turbo weights in {folder} do not match the {config.name} "
                f"configuration's model: {str(err).splitlines()[0]}"
            ) from err
    # The reference caps (`prepare_conditionals`): published, the publisher's 15 s for T3's
    # prompt and 10 s for S3Gen's; reduced, shorter, so a reduced voice is small.
    if config.t3_prompt_samples_max < ChatterboxTurboTTS.ENC_COND_LEN:
        model.ENC_COND_LEN = config.t3_prompt_samples_max
    if config.prompt_samples_max < ChatterboxTurboTTS.DEC_COND_LEN:
        model.DEC_COND_LEN = config.prompt_samples_max
    _keep_loudness_dtype(model)
    return model


def _keep_loudness_dtype(model: ChatterboxTurboTTS) -> None:
    """`norm_loudness` returns the reference in the dtype it was given, as under the numpy < 2
    the publisher pins: there, float32 x a float64 scalar gain stays float32; numpy 2 promotes it
    to float64 and the S3 tokenizer's float32 mel filters then refuse it (prepare_conditionals
    fails with "expected scalar type Double but found Float")."""
    publisher = model.norm_loudness

    def norm_loudness(wav: np.ndarray, sr: int, target_lufs: float = -27) -> np.ndarray:
        return np.asarray(publisher(wav, sr, target_lufs), dtype=np.asarray(wav).dtype)

    model.norm_loudness = norm_loudness


def write_tokenizer(folder: Path) -> None:
    """GPT-2's byte-level BPE (from Whisper's copy) padded to 50,276 ids (module docstring)."""
    from conversion.fixtures.text.shapes import whisper_path

    spec = json.loads(whisper_path().read_text(encoding="utf-8"))
    endoftext = next(t for t in spec["added_tokens"] if t["id"] == ENDOFTEXT)
    stand_ins = [
        {**endoftext, "id": i, "content": f"<|voxport_added_{i - ENDOFTEXT}|>"}
        for i in range(ENDOFTEXT + 1, TEXT_VOCAB)
    ]
    spec["added_tokens"] = [endoftext, *stand_ins]
    spec["post_processor"] = None  # Whisper's template adds its transcript prefix; GPT-2 none
    spec["truncation"] = spec["padding"] = None
    (folder / TOKENIZER).write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    tokenizer_config = {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "add_prefix_space": False,
        "model_max_length": 1024,
    }
    (folder / TOKENIZER_CONFIG).write_text(json.dumps(tokenizer_config, indent=1) + "\n")


def _turbo_t3_hp():
    """The T3Config from_local builds (tts_turbo.py), for constructing T3 outside it."""
    from chatterbox.models.t3.modules.t3_config import T3Config

    hp = T3Config(text_tokens_dict_size=TEXT_VOCAB)
    hp.llama_config_name = "GPT2_medium"
    hp.speech_tokens_dict_size = SPEECH_VOCAB_SIZE
    hp.input_pos_emb = None
    hp.speech_cond_prompt_len = 375
    hp.use_perceiver_resampler = False
    hp.emotion_adv = False
    return hp


def random_snapshot(dest: Path, config: TurboConfig, seed: int = 0) -> Path:
    """Seeded random weights at `config`'s sizes, in the publisher's layout, with conds.pt."""
    from safetensors.torch import save_file

    def fill(tmp: Path) -> dict:
        from chatterbox.models.s3gen import S3Gen
        from chatterbox.models.t3 import T3
        from chatterbox.models.voice_encoder import VoiceEncoder

        torch.manual_seed(seed)
        with sizes_patched(config):
            parts = {
                VE: VoiceEncoder(),
                T3_FILE: T3(_turbo_t3_hp()),
                S3GEN_FILE: S3Gen(meanflow=True),
            }
        for module in parts.values():
            randomize_untrained(module, seed)
        calibrate_t3(parts[T3_FILE], seed, config)
        calibrate_time_mixer(parts[S3GEN_FILE].flow.decoder.estimator, seed)
        calibrate_hift(parts[S3GEN_FILE].mel2wav.eval(), seed)
        for name, module in parts.items():
            state = {k: v.contiguous() for k, v in module.state_dict().items()}
            save_file(state, str(tmp / name))
        write_tokenizer(tmp)
        if not config.is_published:
            (tmp / CONFIG_FILE).write_text(json.dumps(config.to_json(), indent=2) + "\n")
        _write_default_voice(tmp, seed)
        return {
            "model": MODEL,
            "config": config.name,
            "seed": seed,
            "random": True,
            "calibration": CALIBRATION,
        }

    print(f"{MODEL}: writing seeded random weights ({config.name}) to {dest}", file=sys.stderr)
    return write_folder_atomically(Path(dest), fill)


def cached_random_snapshot(config: TurboConfig, seed: int = 0) -> Path:
    """`random_snapshot` in voxport's weights cache, written once and reused while intact and
    of the current calibration."""
    from conversion.core.weights_folder import read_manifest

    folder = cache_dir(MODEL) / f"random-{config.name}-seed{seed}"
    manifest = read_manifest(folder) or {}
    if folder_problem(folder, full=False) is not None or manifest.get("calibration") != CALIBRATION:
        random_snapshot(folder, config, seed)
    return folder


def _write_default_voice(folder: Path, seed: int) -> None:
    """conds.pt via the publisher's `prepare_conditionals` on a synthetic reference."""
    import soundfile as sf

    ref = folder / ".default-voice-ref.wav"
    sf.write(ref, synthetic_reference(REFERENCE_SECONDS, seed), SAMPLE_RATE)
    model = load_model(folder)
    state, threads = torch.random.get_rng_state(), torch.get_num_threads()
    # one thread: the voice encoders' float sums then round alike in every process, so the
    # same seed writes the same conds.pt bytes whatever the caller's thread count
    torch.set_num_threads(1)
    try:
        model.prepare_conditionals(str(ref))
    finally:
        torch.set_num_threads(threads)
        torch.random.set_rng_state(state)
        ref.unlink()
    _save_conds(model.conds, folder / CONDS)


def _save_conds(conds: object, path: Path) -> None:
    """`Conditionals.save`'s layout ({"t3": T3Cond fields, "gen": S3Gen ref dict}) with every
    tensor cloned: torch.save writes a view's whole storage, and the publisher's tensors are
    views whose storage differs between runs, so the bytes would differ for equal values."""

    def own(value: object) -> object:
        return value.detach().clone().contiguous() if torch.is_tensor(value) else value

    state = {
        "t3": {k: own(v) for k, v in vars(conds.t3).items()},
        "gen": {k: own(v) for k, v in conds.gen.items()},
    }
    torch.save(state, path)
