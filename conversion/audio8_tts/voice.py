"""Audio8 voices: a reference clip's codec codes and its transcript (the publisher needs both).

Registration runs the bundle's `encoder` graph once per voice: the clip is decoded and
resampled to 44.1 kHz mono (librosa), checked (0.5–30 s, not silent), cut to the encoder's
bucket (10 s published; the rest is dropped, and said so) and zero-padded into it; the codes of
its real frames go into the prompt's reference segment.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import ReferenceAudioError, UserError
from conversion.core.host.audio_io import check_reference_rate

from .codec.graphs import ENCODER_GRAPH, FUNCTION

MIN_SECONDS, MAX_SECONDS = 0.5, 30.0
SILENCE_PEAK = 1e-4
FORMAT = "voxport-audio8-voice/1"


@dataclass
class Voice:
    codes: np.ndarray  # [10, T] int32
    text: str  # the clip's transcript
    source: str = ""
    # the transcript's prompt segment as ids (`format_reference_text`, encoded alone): what a
    # host without a tokenizer (the Swift one) puts in the prompt; None in older voice files
    text_ids: np.ndarray | None = None

    @property
    def frames(self) -> int:
        return int(self.codes.shape[1])

    def save(self, path: Path | str) -> Path:
        path = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".npz", dir=path.parent)
        os.close(fd)
        try:
            extra = {} if self.text_ids is None else {"text_ids": self.text_ids.astype(np.int32)}
            np.savez(
                tmp,
                format=FORMAT,
                codes=np.asarray(self.codes, np.int32),
                text=self.text,
                source=self.source,
                **extra,
            )
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: Path | str) -> Voice:
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["format"]) != FORMAT:
                    raise ValueError("not a voice file")
                ids = z["text_ids"].astype(np.int32) if "text_ids" in z.files else None
                return cls(z["codes"].astype(np.int32), str(z["text"]), str(z["source"]), ids)
        except (OSError, KeyError, ValueError) as err:
            raise UserError(f"voice file {path} cannot be read ({err}): register it again") from err


def _check_seconds(path: Path, seconds: float) -> None:
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise ReferenceAudioError(
            f"reference audio {path} is {seconds:.2f} s long; a voice needs "
            f"{MIN_SECONDS}-{MAX_SECONDS:.0f} s of speech: pick another clip"
        )


def _header_seconds(path: Path) -> float | None:
    """The clip's length from its header (libsndfile formats), without decoding a sample;
    None when libsndfile cannot read the header (librosa's other decoders then try)."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception:  # noqa: BLE001 - not a libsndfile format: the decoder decides
        return None
    if info.samplerate <= 0 or info.frames < 0:
        return None
    check_reference_rate(path, int(info.samplerate))  # before the decoder resamples it
    return info.frames / info.samplerate


def load_reference(path: Path | str, sample_rate: int) -> np.ndarray:
    """The clip as float32 mono at `sample_rate` (any rate, any channel count: downmixed and
    resampled), or ReferenceAudioError naming the problem. An empty file, or a clip whose
    header says it is outside 0.5-30 s, is refused before anything is decoded or resampled."""
    path = Path(path)
    if not path.is_file():
        raise ReferenceAudioError(f"reference audio {path} does not exist")
    if path.stat().st_size == 0:
        raise ReferenceAudioError(f"reference audio {path} is an empty file (0 bytes)")
    header = _header_seconds(path)
    if header is not None:
        _check_seconds(path, header)
    import librosa

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wav, _ = librosa.load(str(path), sr=sample_rate, mono=True)
    except Exception as err:  # noqa: BLE001 - any decoder failure is the same user problem
        raise ReferenceAudioError(
            f"reference audio {path} could not be read as audio ({type(err).__name__}): "
            "convert it to WAV or FLAC"
        ) from err
    _check_seconds(path, wav.size / sample_rate)
    if not np.isfinite(wav).all() or float(np.abs(wav).max()) < SILENCE_PEAK:
        raise ReferenceAudioError(f"reference audio {path} is silent or has NaN samples")
    return np.asarray(wav, np.float32)


def transcript_ids(tokenizer, text: str) -> np.ndarray:
    """The reference transcript's prompt segment as the pipeline encodes it (int32)."""
    from .prompt import _encode, format_reference_text

    return np.asarray(_encode(tokenizer, [format_reference_text(text)]), np.int32)


def register(session, path: Path | str, text: str, codec_config, tokenizer=None) -> Voice:
    """Encode the clip through the bundle's encoder graph (one call); with `tokenizer`, the
    voice also carries its transcript's ids (for hosts with no tokenizer)."""
    from .codec.host import encode_reference

    if not text or not text.strip():
        raise UserError(
            "a reference voice needs its transcript (the publisher's prompt carries it): "
            "pass --ref-text 'what the clip says'"
        )
    wav = load_reference(path, codec_config.sample_rate)
    capacity = int(session.manifest.function(ENCODER_GRAPH, FUNCTION)["inputs"][0]["shape"][-1])
    if wav.size > capacity:
        print(
            f"audio8_tts: reference {path} is {wav.size / codec_config.sample_rate:.1f} s; the "
            f"encoder's bucket holds {capacity / codec_config.sample_rate:.1f} s: using the "
            "first part",
            file=sys.stderr,
        )
        wav = wav[:capacity]
    codes = encode_reference(session, wav, codec_config)
    clean = " ".join(text.split())
    ids = None if tokenizer is None else transcript_ids(tokenizer, clean)
    return Voice(codes.astype(np.int32), clean, Path(path).name, ids)
