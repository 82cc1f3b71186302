"""A reference recording for cloning a voice, read as the publishers' `prepare_conditionals`
read it (`librosa.load(path, sr=24000)`: any rate resampled, channels averaged), and refused
with a `ReferenceAudioError` naming the fix when it cannot make a voice: a missing or
unreadable file, no samples, non-finite samples, digital silence, or shorter than the model's
floor (`min_seconds`: Chatterbox's is 1 s, Turbo's publisher asserts more than 5 s). Longer
than the prompt caps is cut as the publisher cuts (only noted here).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import ReferenceAudioError
from conversion.core.host.audio_io import check_reference_rate

from .sizes import SAMPLE_RATE

SILENCE_PEAK = 1e-4  # ~ -80 dBFS: below this the reference is treated as silence


@dataclass(frozen=True)
class ReferenceInfo:
    """A decoded reference: mono float32 at 24 kHz, plus what was done to it."""

    wav: np.ndarray
    sample_rate: int
    source_rate: int | None
    channels: int | None
    notes: tuple[str, ...]

    @property
    def seconds(self) -> float:
        return self.wav.size / self.sample_rate


def inspect_reference(
    path: str | os.PathLike[str],
    prompt_seconds: float,
    *,
    min_seconds: float,
    t3_seconds: float,
) -> ReferenceInfo:
    """Decode `path` as the publisher does and check that it can make a voice.

    `prompt_seconds` is the cap S3Gen's prompt is cut to (the publisher's 10 s; less at the
    reduced sizes): a longer reference is noted, not refused.
    """
    path = Path(path)
    if not path.is_file():
        raise ReferenceAudioError(
            f"reference audio {path} does not exist (or is not a file): pass the path of a "
            "recording of the voice to clone (WAV or FLAC, 5-10 s of clean speech)"
        )
    source_rate, channels = _header(path)
    check_reference_rate(path, source_rate)  # before the decoder resamples it
    import librosa

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # librosa's audioread fallback warns before failing
            wav, sr = librosa.load(str(path), sr=SAMPLE_RATE, mono=True)
    except Exception as err:  # noqa: BLE001 - any decoder failure is the same user problem
        raise ReferenceAudioError(
            f"reference audio {path} could not be read as audio ({type(err).__name__}: "
            f"{str(err).strip()[:200] or 'no detail'}): convert it to WAV or FLAC "
            "(e.g. `ffmpeg -i in.mp3 out.wav`)"
        ) from err
    wav = np.asarray(wav, dtype=np.float32)
    if wav.size == 0:
        raise ReferenceAudioError(
            f"reference audio {path} has no samples: record or pick a clip with 5-10 s of speech"
        )
    if not np.isfinite(wav).all():
        raise ReferenceAudioError(
            f"reference audio {path} contains NaN or infinite samples: re-export it as PCM WAV"
        )
    seconds = wav.size / sr
    if seconds < min_seconds:
        raise ReferenceAudioError(
            f"reference audio {path} is {seconds:.2f} s long; cloning needs at least "
            f"{min_seconds:.1f} s (5-10 s of clean speech is best): use a longer clip"
        )
    if float(np.max(np.abs(wav))) < SILENCE_PEAK:
        raise ReferenceAudioError(
            f"reference audio {path} is silent (peak below {SILENCE_PEAK:g}): check the "
            "recording level or pick another clip"
        )
    notes = []
    if channels is not None and channels > 1:
        notes.append(f"downmixed {channels} channels to mono")
    if source_rate is not None and source_rate != SAMPLE_RATE:
        notes.append(f"resampled from {source_rate} Hz to {SAMPLE_RATE} Hz")
    if seconds > prompt_seconds:
        t3 = f", T3's speech prompt the first {t3_seconds} s" if seconds > t3_seconds else ""
        notes.append(
            f"reference is {seconds:.1f} s: as in the publisher's prepare_conditionals, S3Gen's "
            f"prompt uses the first {prompt_seconds:g} s{t3}, and the voice encoder all of it"
        )
    return ReferenceInfo(wav, int(sr), source_rate, channels, tuple(notes))


def _header(path: Path) -> tuple[int | None, int | None]:
    """(sample rate, channels) from the file header when soundfile can read it."""
    try:
        import soundfile as sf

        info = sf.info(str(path))
        return int(info.samplerate), int(info.channels)
    except Exception:  # noqa: BLE001 - not a soundfile format; librosa may still decode it
        return None, None
