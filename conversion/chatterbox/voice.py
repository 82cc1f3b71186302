"""Chatterbox voices: what the graphs' host needs for one speaker, from conds.pt or a reference wav.

A voice is computed once, in eager torch on the host, by the publisher's own code (it is per
voice, not per utterance): `Voice.from_conditionals` reads the default voice (the snapshot's
`conds.pt`, loaded by `from_local` into `model.conds`); `clone_voice` runs the publisher's
`ChatterboxTTS.prepare_conditionals` on a reference recording (VoiceEncoder -> T3 speaker
embedding, S3Tokenizer -> T3 speech prompt and S3Gen prompt tokens, the 24 kHz mel -> S3Gen prompt
features, CAMPPlus -> S3Gen x-vector).

What T3 sees of a voice is `cond_emb` [1, 34, 1024], `T3.prepare_conditioning`'s output: one
speaker row (`spkr_enc`), 32 perceiver rows (the speech prompt resampled), and one emotion row,
`cond_enc.emotion_adv_fc(exaggeration)`, a bias-free Linear(1, 1024): the row is exactly
`exaggeration * W[:, 0]` (one float32 product per element, no sum), so `Voice.cond_emb` swaps it
on the host for any exaggeration and matches what the publisher computes after its exaggeration
update in `generate`, bit for bit.

Reference input (`inspect_reference` / `load_reference`): decoded like the publisher decodes it,
`librosa.load(path, sr=24000)` (any sample rate is resampled, channels are averaged to mono).
Refused with a `ReferenceAudioError` naming the fix: a missing or unreadable file, no samples,
non-finite samples, digital silence, and anything shorter than `MIN_REFERENCE_SECONDS`. The
publisher's own pieces crash below 0.03 s (the S3 tokenizer's STFT reflect-pads 720 samples at
16 kHz) and CAMPPlus's x-vector is NaN at 0.04 s (measured on chatterbox-tts 0.1.7); the 1.0 s
floor leaves a wide margin and is still far below the 5-10 s a usable clone wants. Longer than
the prompt cap is cut exactly as the publisher cuts (we only say so): S3Gen's prompt uses the
first `DEC_COND_LEN` samples (10 s published; `prompt_tokens_max` tokens' worth, 1.6 s, at the
reduced sizes, so prompt + a full T3 chunk fits the flow encoder's largest bucket), T3's speech
prompt the first 6 s (`ENC_COND_LEN`), the voice encoder all of it.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.s3gen import reference
from conversion.s3gen.reference import ReferenceInfo

from .config import SAMPLE_RATE, TOKEN_HOP

if TYPE_CHECKING:
    from chatterbox.tts import ChatterboxTTS, Conditionals

log = logging.getLogger(__name__)

FORMAT = "voxport-chatterbox-voice/1"
MIN_REFERENCE_SECONDS = 1.0
S3_SAMPLE_RATE = 16_000
DEC_COND_SECONDS = 10  # ChatterboxTTS.DEC_COND_LEN = 10 * S3GEN_SR
ENC_COND_SECONDS = 6  # ChatterboxTTS.ENC_COND_LEN = 6 * S3_SR
EXAGGERATION_RANGE = (0.0, 2.0)
_ARRAYS = {
    "t3_speaker_emb": np.float32,
    "t3_prompt_tokens": np.int32,
    "cond_emb_base": np.float32,
    "emotion_adv_weight": np.float32,
    "exaggeration": np.float32,
    "prompt_tokens": np.int32,
    "prompt_feat": np.float32,
    "xvector": np.float32,
}


class VoiceError(UserError):
    """A bad voice parameter (exaggeration) or an unreadable voice file."""


def check_exaggeration(exaggeration: float) -> float:
    """The exaggeration as a float, or VoiceError when outside [0, 2]."""
    lo, hi = EXAGGERATION_RANGE
    try:
        value = float(exaggeration)
    except (TypeError, ValueError) as err:
        raise VoiceError(
            f"exaggeration must be a number in [{lo}, {hi}], got {exaggeration!r}"
        ) from err
    if not math.isfinite(value) or not lo <= value <= hi:
        raise VoiceError(
            f"exaggeration must be in [{lo}, {hi}] (0.5 is neutral; the publisher's examples use "
            f"0.25..2.0), got {exaggeration!r}"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Reference audio
# ---------------------------------------------------------------------------------------------


def inspect_reference(
    path: str | os.PathLike[str], prompt_seconds: float = DEC_COND_SECONDS
) -> ReferenceInfo:
    """Decode `path` as the publisher does and check that it can make a voice (the shared
    S3Gen reference reader, at Chatterbox's floor and T3 prompt length).

    `prompt_seconds` is the cap S3Gen's prompt is cut to (the publisher's 10 s; less at the
    reduced sizes): a longer reference is noted, not refused.
    """
    return reference.inspect_reference(
        path, prompt_seconds, min_seconds=MIN_REFERENCE_SECONDS, t3_seconds=ENC_COND_SECONDS
    )


def load_reference(path: str | os.PathLike[str]) -> tuple[np.ndarray, int]:
    """(mono float32 wav at 24 kHz, 24000) as the publisher decodes it; ReferenceAudioError if
    the file cannot make a voice (see the module docstring)."""
    info = inspect_reference(path)
    return info.wav, info.sample_rate


# ---------------------------------------------------------------------------------------------
# Voice
# ---------------------------------------------------------------------------------------------


@dataclass
class Voice:
    """One voice, as the graphs' host needs it (arrays as the publisher computed them).

    t3_speaker_emb [1, 256]      VoiceEncoder embedding (T3's speaker row comes from it)
    t3_prompt_tokens [1, <=150]  S3 tokens of the first 6 s (T3's perceiver prompt)
    cond_emb_base [1, 34, 1024]  T3.prepare_conditioning at `exaggeration`
    emotion_adv_weight [1024]    cond_enc.emotion_adv_fc.weight[:, 0] (the emotion row's slope)
    exaggeration                 the exaggeration cond_emb_base was computed at
    prompt_tokens [1, Tp]        S3Gen prompt tokens (first 10 s, 25 Hz)
    prompt_feat [1, Tf, 80]      S3Gen prompt mel (24 kHz, 50 Hz); Tf is 2 Tp or 2 Tp + 1
    xvector [1, 192]             CAMPPlus speaker embedding (S3Gen normalizes and projects it)
    """

    t3_speaker_emb: np.ndarray
    t3_prompt_tokens: np.ndarray
    cond_emb_base: np.ndarray
    emotion_adv_weight: np.ndarray
    exaggeration: float
    prompt_tokens: np.ndarray
    prompt_feat: np.ndarray
    xvector: np.ndarray
    source: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for name, dtype in _ARRAYS.items():
            if name != "exaggeration":
                setattr(self, name, np.ascontiguousarray(getattr(self, name), dtype=dtype))
        self.exaggeration = float(np.float32(self.exaggeration))
        self.notes = tuple(self.notes)
        self._check()

    def _check(self) -> None:
        def bad(what: str) -> VoiceError:
            return VoiceError(f"voice {self.source or '(unnamed)'}: {what}")

        e = self.cond_emb_base
        if e.ndim != 3 or e.shape[0] != 1 or e.shape[2] != self.emotion_adv_weight.shape[-1]:
            raise bad(f"cond_emb_base is {list(e.shape)}, expected [1, rows, dim]")
        if self.t3_speaker_emb.ndim != 2 or self.xvector.ndim != 2:
            raise bad("t3_speaker_emb and xvector must be [1, n]")
        if self.t3_prompt_tokens.ndim != 2 or self.prompt_tokens.ndim != 2:
            raise bad("t3_prompt_tokens and prompt_tokens must be [1, n]")
        tf, tp = self.prompt_feat.shape[1], self.prompt_tokens.shape[1]
        if self.prompt_feat.ndim != 3 or not 2 * tp <= tf <= 2 * tp + 1:
            raise bad(f"prompt_feat {list(self.prompt_feat.shape)} does not fit {tp} tokens")

    # -- conditioning -------------------------------------------------------------------------

    def cond_emb(self, exaggeration: float | None = None) -> np.ndarray:
        """T3's conditioning [1, rows, dim] at `exaggeration` (default: the voice's own).

        The last row is the emotion row, `exaggeration * W`; the others do not depend on it.
        """
        e = self.exaggeration if exaggeration is None else check_exaggeration(exaggeration)
        out = self.cond_emb_base.copy()
        out[0, -1] = np.float32(e) * self.emotion_adv_weight
        return out

    @property
    def prompt_token_len(self) -> int:
        return int(self.prompt_tokens.shape[1])

    def to_conditionals(self, exaggeration: float | None = None) -> Conditionals:
        """The publisher's `Conditionals` for this voice (what `model.conds` holds)."""
        from chatterbox.models.t3.modules.cond_enc import T3Cond
        from chatterbox.tts import Conditionals

        e = self.exaggeration if exaggeration is None else check_exaggeration(exaggeration)
        t3 = T3Cond(
            speaker_emb=torch.from_numpy(self.t3_speaker_emb.copy()),
            cond_prompt_speech_tokens=torch.from_numpy(self.t3_prompt_tokens.astype(np.int64)),
            emotion_adv=e * torch.ones(1, 1, 1),
        )
        gen = {
            "prompt_token": torch.from_numpy(self.prompt_tokens.astype(np.int64)),
            "prompt_token_len": torch.tensor([self.prompt_token_len], dtype=torch.long),
            "prompt_feat": torch.from_numpy(self.prompt_feat.copy()),
            "prompt_feat_len": None,
            "embedding": torch.from_numpy(self.xvector.copy()),
        }
        return Conditionals(t3, gen)

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    @torch.no_grad()
    def from_conditionals(
        cls,
        model: ChatterboxTTS,
        conds: Conditionals | None = None,
        *,
        source: str = "conds.pt",
        notes: tuple[str, ...] = (),
    ) -> Voice:
        """The voice in `conds` (default: `model.conds`, the snapshot's conds.pt).

        `cond_emb_base` is `model.t3.prepare_conditioning` on a copy of `conds.t3` (the
        publisher caches the prompt embedding on the T3Cond it is given; the copy keeps
        `conds` as it was).
        """
        conds = model.conds if conds is None else conds
        if conds is None:
            raise VoiceError(
                "this chatterbox snapshot has no default voice (conds.pt is missing): "
                "clone one from a reference recording"
            )
        t3c = copy.copy(conds.t3)
        emotion = t3c.emotion_adv
        if not torch.is_tensor(emotion):
            emotion = float(emotion) * torch.ones(1, 1, 1)
            t3c.emotion_adv = emotion
        cond_emb = model.t3.prepare_conditioning(t3c)
        gen = conds.gen
        return cls(
            t3_speaker_emb=_np(conds.t3.speaker_emb).reshape(1, -1),
            t3_prompt_tokens=_np(conds.t3.cond_prompt_speech_tokens).reshape(1, -1),
            cond_emb_base=_np(cond_emb),
            emotion_adv_weight=_np(model.t3.cond_enc.emotion_adv_fc.weight)[:, 0],
            exaggeration=float(emotion.reshape(-1)[0]),
            # the publisher's S3Token2Mel.forward casts prompt_token to float in place
            prompt_tokens=np.rint(_np(gen["prompt_token"])).reshape(1, -1),
            prompt_feat=_np(gen["prompt_feat"]),
            xvector=_np(gen["embedding"]).reshape(1, -1),
            source=source,
            notes=tuple(notes),
        )

    # -- files --------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the voice as one .npz, atomically (a temp file beside it, then os.replace)."""
        path = Path(path)
        arrays: dict[str, Any] = {name: getattr(self, name) for name in _ARRAYS}
        arrays["exaggeration"] = np.asarray(self.exaggeration, np.float32)
        arrays["format"] = np.asarray(FORMAT)
        arrays["source"] = np.asarray(self.source)
        arrays["notes"] = np.asarray(list(self.notes), dtype=np.str_).reshape(-1)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        tmp = Path(name)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Voice:
        path = Path(path)
        if not path.is_file():
            raise VoiceError(f"voice file {path} does not exist: save one with Voice.save")
        try:
            with np.load(path, allow_pickle=False) as npz:
                data = {key: npz[key] for key in npz.files}
        except Exception as err:  # noqa: BLE001 - a truncated or foreign file
            raise VoiceError(f"voice file {path} cannot be read ({err}): re-create it") from err
        if str(data.get("format", "")) != FORMAT:
            raise VoiceError(f"voice file {path} is not a {FORMAT} file: re-create it")
        missing = [k for k in _ARRAYS if k not in data]
        if missing:
            raise VoiceError(f"voice file {path} lacks {', '.join(missing)}: re-create it")
        kwargs = {k: data[k] for k in _ARRAYS}
        kwargs["exaggeration"] = float(data["exaggeration"])
        return cls(
            **kwargs,
            source=str(data.get("source", "")),
            notes=tuple(str(n) for n in data.get("notes", np.zeros(0, np.str_))),
        )

    def equal(self, other: Voice) -> bool:
        """Same arrays and exaggeration, bit for bit (source and notes not compared)."""
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name))
            for f in dataclasses.fields(self)
            if f.name in _ARRAYS
        )


def _np(value: Any) -> np.ndarray:
    if torch.is_tensor(value):
        return value.detach().cpu().numpy().copy()
    return np.array(value, copy=True)


@torch.no_grad()
def clone_voice(
    model: ChatterboxTTS,
    wav_path: str | os.PathLike[str],
    exaggeration: float = 0.5,
    prompt_tokens_max: int | None = None,
) -> Voice:
    """A voice from a reference recording, by the publisher's own `prepare_conditionals`.

    The reference is checked first (`inspect_reference`); the publisher's function then decodes
    the same file the same way. S3Gen's prompt is cut the way the publisher cuts it, the first
    `DEC_COND_LEN` samples of the 24 kHz reference before `embed_ref` (which makes the prompt
    tokens and the prompt mel from the same cut samples and trims the tokens to half the mel
    frames): here at most `prompt_tokens_max` tokens' worth of samples (`TOKEN_HOP` each), so
    that prompt + a full chunk fits the flow encoder's largest bucket (full attention: it
    cannot be chunked exactly). `model.conds` (the default voice) is left as it was.
    """
    exaggeration = check_exaggeration(exaggeration)
    cap = int(model.DEC_COND_LEN)
    if prompt_tokens_max is not None:
        if prompt_tokens_max < 1:
            raise VoiceError(f"prompt_tokens_max must be >= 1, got {prompt_tokens_max}")
        cap = min(cap, int(prompt_tokens_max) * TOKEN_HOP)
    info = inspect_reference(wav_path, prompt_seconds=cap / SAMPLE_RATE)
    for note in info.notes:
        log.warning("reference %s: %s", wav_path, note)
    saved, own_cap = model.conds, vars(model).get("DEC_COND_LEN")
    try:
        model.DEC_COND_LEN = cap
        model.prepare_conditionals(str(wav_path), exaggeration=exaggeration)
        voice = Voice.from_conditionals(
            model, model.conds, source=Path(wav_path).name, notes=info.notes
        )
    finally:
        model.conds = saved
        if own_cap is None:
            del model.DEC_COND_LEN
        else:
            model.DEC_COND_LEN = own_cap
    return cap_prompt(voice, cap // TOKEN_HOP)


def write_voice_file(
    model: ChatterboxTTS,
    wav_path: str | os.PathLike[str],
    output: str | os.PathLike[str],
    exaggeration: float = 0.5,
    prompt_tokens_max: int | None = None,
) -> Path:
    """What `voxport voice chatterbox --ref WAV -o OUTPUT` writes: the clone of `wav_path`
    saved as the voice file a host loads (`Voice.load`, the Swift `ChatterboxVoice.load`)."""
    voice = clone_voice(
        model, wav_path, exaggeration=exaggeration, prompt_tokens_max=prompt_tokens_max
    )
    return voice.save(output)


def cap_prompt(voice: Voice, tokens_max: int) -> Voice:
    """`voice` with at most `tokens_max` S3Gen prompt tokens and their 2 mel frames each.

    A clone from `tokens_max * TOKEN_HOP` samples already holds at most that many (embed_ref
    keeps half the mel frames' worth); this guards the bucket bound, cutting tokens and
    frames together as embed_ref pairs them.
    """
    if voice.prompt_token_len <= tokens_max:
        return voice
    log.warning(
        "voice %s: S3Gen prompt cut from %d to %d tokens",
        voice.source,
        voice.prompt_token_len,
        tokens_max,
    )
    return dataclasses.replace(
        voice,
        prompt_tokens=voice.prompt_tokens[:, :tokens_max],
        prompt_feat=voice.prompt_feat[:, : 2 * tokens_max],
    )
