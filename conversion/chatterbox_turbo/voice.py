"""Chatterbox Turbo voices: what the host needs for one speaker, from conds.pt or a reference.

A voice is computed once, in eager torch, by the publisher's own code:
`TurboVoice.from_conditionals` reads the default voice (`conds.pt`, loaded by `from_local` into
`model.conds`); `clone_voice` runs `ChatterboxTurboTTS.prepare_conditionals` on a reference
(loudness normalised to -27 LUFS; VoiceEncoder -> T3 speaker embedding; S3Tokenizer -> T3's
speech prompt, at most `t3_prompt_tokens_max` tokens from the first `ENC_COND_LEN` samples;
`embed_ref` on the first `DEC_COND_LEN` samples -> S3Gen's prompt tokens, prompt mel and
CAMPPlus x-vector). `weights.load_model` sets both caps from the configuration.

Unlike Chatterbox's, T3 sees no perceiver and no emotion row: its conditioning is the speaker
row and the prompt tokens' embeddings (`t3.host.cond_rows`), so a voice file holds tokens and
vectors only, and `exaggeration` has nothing to act on (the publisher's `generate` ignores it).

The reference is read by the shared S3Gen reader at Turbo's floor: `prepare_conditionals`
asserts a reference longer than 5 s, so anything at or under it is refused before any model
runs, with a line naming the fix.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.s3gen import reference
from conversion.s3gen.reference import ReferenceInfo

from .config import TurboConfig
from .t3.host import TurboCond

if TYPE_CHECKING:
    from chatterbox.tts_turbo import ChatterboxTurboTTS

FORMAT = "voxport-chatterbox_turbo-voice/1"
# prepare_conditionals: `assert len(wav) / sr > 5.0`; a hair over it passes the publisher's
MIN_REFERENCE_SECONDS = 5.01
T3_PROMPT_SECONDS = 15  # ChatterboxTurboTTS.ENC_COND_LEN = 15 * S3_SR
PROMPT_SECONDS = 10  # ChatterboxTurboTTS.DEC_COND_LEN = 10 * S3GEN_SR
_ARRAYS = {
    "t3_speaker_emb": np.float32,  # [1, 256]
    "t3_prompt_tokens": np.int32,  # [1, n]
    "prompt_tokens": np.int32,  # [1, m]
    "prompt_feat": np.float32,  # [1, 2m, 80]
    "xvector": np.float32,  # [1, 192]
}


class VoiceError(UserError):
    """An unreadable or inconsistent voice file, or one too long for a bundle."""


def inspect_reference(path: str | os.PathLike[str], config: TurboConfig) -> ReferenceInfo:
    """The reference decoded as the publisher decodes it, or a one-line ReferenceAudioError."""
    return reference.inspect_reference(
        path,
        config.prompt_samples_max / reference.SAMPLE_RATE,
        min_seconds=MIN_REFERENCE_SECONDS,
        t3_seconds=min(T3_PROMPT_SECONDS, config.t3_prompt_tokens_max / 25),
    )


@dataclass(frozen=True)
class TurboVoice:
    """One speaker: T3's conditioning (speaker embedding, prompt tokens) and S3Gen's reference
    (prompt tokens, prompt mel, x-vector), as `Conditionals` holds them."""

    t3_speaker_emb: np.ndarray
    t3_prompt_tokens: np.ndarray
    prompt_tokens: np.ndarray
    prompt_feat: np.ndarray
    xvector: np.ndarray
    source: str = ""

    def __post_init__(self) -> None:
        for name, dtype in _ARRAYS.items():
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype))
        shapes = {name: getattr(self, name).shape for name in _ARRAYS}
        m = self.prompt_tokens.shape[-1]
        if self.t3_speaker_emb.size != 256 or self.xvector.size != 192:
            raise VoiceError(f"voice {self.source or '(unnamed)'}: bad vector sizes {shapes}")
        if self.prompt_feat.ndim != 3 or self.prompt_feat.shape[1:] != (2 * m, 80):
            raise VoiceError(
                f"voice {self.source or '(unnamed)'}: prompt_feat {shapes['prompt_feat']} does "
                f"not hold 2 mel frames for each of the {m} prompt tokens: clone it again"
            )

    @property
    def prompt_token_len(self) -> int:
        return int(self.prompt_tokens.shape[-1])

    @property
    def t3_prompt_len(self) -> int:
        return int(self.t3_prompt_tokens.shape[-1])

    def t3_cond(self) -> TurboCond:
        return TurboCond(self.t3_speaker_emb, self.t3_prompt_tokens)

    @classmethod
    def from_conditionals(cls, conds: Any, source: str = "") -> TurboVoice:
        """The voice in the publisher's `Conditionals` (`model.conds` or a clone's)."""

        def array(value: Any) -> np.ndarray:
            return value.detach().float().cpu().numpy() if torch.is_tensor(value) else value

        gen = conds.gen
        tokens = conds.t3.cond_prompt_speech_tokens
        return cls(
            t3_speaker_emb=array(conds.t3.speaker_emb).reshape(1, -1),
            t3_prompt_tokens=np.zeros((1, 0)) if tokens is None else array(tokens).reshape(1, -1),
            prompt_tokens=array(gen["prompt_token"]).reshape(1, -1),
            prompt_feat=array(gen["prompt_feat"]),
            xvector=array(gen["embedding"]).reshape(1, -1),
            source=source,
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """The voice as an npz a host loads (written atomically: a temp file, then renamed)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp.npz")
        arrays = {name: getattr(self, name) for name in _ARRAYS}
        np.savez(tmp, format=np.array(FORMAT), source=np.array(self.source), **arrays)
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TurboVoice:
        path = Path(path)
        try:
            with np.load(path) as data:
                found = str(data["format"]) if "format" in data.files else None
                if found != FORMAT:
                    raise VoiceError(
                        f"{path} is not a Chatterbox Turbo voice file (format {found!r}, want "
                        f"{FORMAT!r}): make one with `voxport voice chatterbox_turbo --ref WAV`"
                    )
                missing = [n for n in _ARRAYS if n not in data.files]
                if missing:
                    raise VoiceError(f"{path} lacks {missing}: make it again with voxport voice")
                arrays = {n: data[n] for n in _ARRAYS}
                source = str(data["source"]) if "source" in data.files else path.name
        except (OSError, ValueError) as err:
            raise VoiceError(f"{path} could not be read as a voice file ({err})") from err
        return cls(**arrays, source=source)

    def equal(self, other: TurboVoice) -> bool:
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in _ARRAYS)


@torch.no_grad()
def clone_voice(
    model: ChatterboxTurboTTS, wav_path: str | os.PathLike[str], config: TurboConfig
) -> TurboVoice:
    """A voice from a reference recording by the publisher's own `prepare_conditionals`
    (`model.conds`, the default voice, is left as it was)."""
    inspect_reference(wav_path, config)
    saved = model.conds
    try:
        model.prepare_conditionals(str(wav_path))
        conds = copy.deepcopy(model.conds)
    finally:
        model.conds = saved
    return TurboVoice.from_conditionals(conds, source=Path(wav_path).name)


def write_voice_file(
    model: ChatterboxTurboTTS,
    wav_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: TurboConfig,
) -> Path:
    """What `voxport voice chatterbox_turbo --ref WAV -o OUTPUT` writes."""
    return clone_voice(model, wav_path, config).save(output)
