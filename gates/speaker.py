"""Speaker-similarity gate: resemblyzer's GE2E speaker encoder, offline.

The PyPI package ``resemblyzer`` (0.1.4) ships its pretrained encoder (``pretrained.pt``)
inside the package, so nothing is downloaded. An embedding is the encoder's unit-norm
speaker vector (256-d) of one or more utterances (``embed_speaker`` averages the utterances'
embeddings); similarity is the cosine of two such vectors. A cosine alone has no scale —
two different speakers of the same gender can still reach ~0.8 — so a gate prints the
cosine between two different voices beside it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from gates.errors import GateError

_PACKAGE = "resemblyzer"


class SpeakerModelMissing(GateError):
    """The speaker encoder's package is not installed."""


@functools.cache
def _encoder() -> Any:
    try:
        from resemblyzer import VoiceEncoder
    except ImportError as exc:
        raise SpeakerModelMissing(
            f"the offline speaker encoder comes from the PyPI package {_PACKAGE!r}, "
            f"which is not installed (pip install --no-deps {_PACKAGE}==0.1.4)"
        ) from exc
    return VoiceEncoder(device="cpu", verbose=False)


def _as_list(wavs: np.ndarray | Sequence[np.ndarray]) -> list[np.ndarray]:
    if isinstance(wavs, np.ndarray) and wavs.ndim == 1:
        return [wavs]
    return [np.asarray(w, np.float32).reshape(-1) for w in wavs]


def embed(wavs: np.ndarray | Sequence[np.ndarray], sr: int) -> np.ndarray:
    """The unit-norm speaker embedding [256] of one waveform or several (same speaker)."""
    from resemblyzer import preprocess_wav

    items = _as_list(wavs)
    if not items or any(w.size == 0 for w in items):
        raise ValueError("speaker embedding needs non-empty audio")
    pre = [preprocess_wav(np.asarray(w, np.float32), source_sr=sr) for w in items]
    enc = _encoder()
    emb = enc.embed_utterance(pre[0]) if len(pre) == 1 else enc.embed_speaker(pre)
    return np.asarray(emb, np.float64)


def speaker_cosine(
    a: np.ndarray | Sequence[np.ndarray], b: np.ndarray | Sequence[np.ndarray], sr: int
) -> float:
    """Cosine of the speaker embeddings of ``a`` and ``b`` (1 = the same voice)."""
    ea, eb = embed(a, sr), embed(b, sr)
    return float(ea @ eb / (np.linalg.norm(ea) * np.linalg.norm(eb)))
