"""Kokoro's host side: everything that runs between and around the three graphs.

    text ──text_to_chunks──▶ Chunk(ids) ── padded_ids ──▶ predictor graph ─▶ durations
    voice ──load_voice / ref_s_for(pack, chunk.n_phonemes)──▶ ref_s
    durations ──alignment / padded_alignment──▶ aln, frame_mask ──▶ prosody graph ─▶ F0
    F0 (real frames) ──harmonic_source (draw_source_noise)──▶ har ── pad_har ──▶ vocoder
    waveform ──trim_audio──▶ per chunk ──join_audio──▶ write_wav

The pieces live in their own modules (text_*, voices, alignment, source); this module
re-exports them and adds the bucket padding of graph inputs and the audio output.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from conversion.core.errors import BucketOverflowError
from conversion.core.host import audio_io
from conversion.core.host.buckets import pad_to

from .alignment import alignment, alignment_matrix, padded_alignment, pred_durations
from .source import (
    PUBLISHED,
    SourceConfig,
    draw_source_noise,
    excitation,
    harmonic_source,
    replay_keys,
)
from .text.chunks import Chunk, NothingToSayError, chunk_from_phonemes, text_to_chunks
from .text.g2p import english_g2p, offline_spacy_model
from .text.ids import MAX_IDS, load_vocab, phonemes_to_ids
from .voice import VOICE_NAMES, UnknownVoiceError, load_voice, ref_s_for

__all__ = [
    "MAX_IDS",
    "PUBLISHED",
    "SAMPLES_PER_FRAME",
    "SAMPLE_RATE",
    "VOICE_NAMES",
    "Chunk",
    "NothingToSayError",
    "SourceConfig",
    "UnknownVoiceError",
    "alignment",
    "alignment_matrix",
    "chunk_from_phonemes",
    "draw_source_noise",
    "english_g2p",
    "excitation",
    "harmonic_source",
    "join_audio",
    "load_vocab",
    "load_voice",
    "offline_spacy_model",
    "pad_har",
    "padded_alignment",
    "padded_ids",
    "phonemes_to_ids",
    "pred_durations",
    "ref_s_for",
    "replay_keys",
    "text_to_chunks",
    "trim_audio",
    "write_wav",
]

SAMPLE_RATE = 24000
# Audio samples per alignment frame: F0 runs at 2 per frame, each upsampled x300.
SAMPLES_PER_FRAME = 600
DEFAULT_PAUSE_S = 0.2


def padded_ids(ids: Sequence[int], tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """ids (pads included) in a ``tokens`` bucket, as the predictor graph takes them:
    int32 [1, tokens] right-padded with 0 (Core AI rejects int64), and n_tokens int32 [1]."""
    real = len(ids)
    if real > tokens:
        raise BucketOverflowError(
            f"{real} ids do not fit the {tokens}-token bucket: split the text further"
        )
    arr = pad_to(np.asarray(ids, dtype=np.int32), tokens)
    return arr[None], np.array([real], dtype=np.int32)


def pad_har(har: np.ndarray, frames: int, config: SourceConfig = PUBLISHED) -> np.ndarray:
    """``har`` [1, 2*bins, n] of the real frames padded with zeros to a ``frames`` bucket's
    STFT length (``frames * 600 / hop + 1``)."""
    size = frames * SAMPLES_PER_FRAME // config.hop + 1
    return pad_to(np.asarray(har, dtype=np.float32), size, axis=-1)


def trim_audio(waveform: np.ndarray, frames: int) -> np.ndarray:
    """The real part of a bucket's waveform: ``frames * 600`` samples, float32 1-D."""
    return np.asarray(waveform, dtype=np.float32).reshape(-1)[: frames * SAMPLES_PER_FRAME]


def pause(sr: int = SAMPLE_RATE, pause_s: float = DEFAULT_PAUSE_S) -> np.ndarray:
    """The silence `join_audio` leaves between chunks."""
    return np.zeros(int(round(pause_s * sr)), dtype=np.float32)


def join_audio(
    chunks: Sequence[np.ndarray], sr: int = SAMPLE_RATE, pause_s: float = DEFAULT_PAUSE_S
) -> np.ndarray:
    """The chunks' audio in order, ``pause_s`` of silence between consecutive chunks (none
    at the ends): chunks are sentences, or clauses of a long one, and the model ends each
    one on its own, so the pause is what a reader would leave there."""
    if pause_s < 0:
        raise ValueError(f"pause_s must be >= 0, got {pause_s}")
    pieces = [np.asarray(c, dtype=np.float32).reshape(-1) for c in chunks]
    if not pieces:
        return np.zeros(0, dtype=np.float32)
    gap = pause(sr, pause_s)
    out: list[np.ndarray] = []
    for i, piece in enumerate(pieces):
        if i:
            out.append(gap)
        out.append(piece)
    return np.concatenate(out)


def write_wav(path: str | Path, audio: np.ndarray, sr: int = SAMPLE_RATE) -> Path:
    """Kokoro audio (24 kHz) to a 16-bit wav, atomically (see conversion.core.host.audio_io)."""
    return audio_io.write_wav(path, audio, sr)
