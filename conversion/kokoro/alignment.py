"""Durations to the token-to-frame alignment: Kokoro's one data-dependent length.

The publisher (``KModel.forward_with_tokens``) turns the duration head into whole frames

    duration = sigmoid(logits).sum(-1) / speed
    pred_dur = round(duration).clamp(min=1)

and expands tokens to frames with a one-hot matrix ``aln[i, j] = 1`` when frame ``j``
belongs to token ``i`` (built with ``repeat_interleave``, which the converter cannot take).
So the graph is cut here: the predictor graph returns the per-token sums of sigmoids
(``durations``, before the speed division), and the host finishes the arithmetic.

The division and the rounding run in torch float32, as in the publisher, rather than in
numpy: a duration landing on .5 is rounded half-to-even, and whether it lands there at all
depends on float32 division by the speed; reproducing the ops keeps ``pred_dur`` (hence
the audio length) identical to the oracle's.
"""

from __future__ import annotations

import numpy as np
import torch

from conversion.core.errors import BucketOverflowError, UserError
from conversion.core.host.buckets import length_mask, pad_to


def pred_durations(durations: np.ndarray, speed: float = 1.0) -> np.ndarray:
    """Whole frames per token, int64 [T]: ``round(durations / speed)``, at least 1.

    ``durations`` [T] (or [1, T]) is ``sigmoid(logits).sum(-1)`` as float32.
    """
    if not (np.isfinite(speed) and speed > 0):
        raise UserError(f"speed must be a positive number, got {speed}")
    d = torch.from_numpy(np.ascontiguousarray(durations, dtype=np.float32)).reshape(-1)
    return torch.round(d / speed).clamp(min=1).long().numpy()


def alignment_matrix(pred_dur: np.ndarray) -> np.ndarray:
    """float32 [1, T, L] one-hot, L = sum(pred_dur): frame j belongs to token i."""
    pred_dur = np.asarray(pred_dur, dtype=np.int64).reshape(-1)
    if pred_dur.size and pred_dur.min() < 0:
        raise ValueError("durations must be non-negative")
    owner = np.repeat(np.arange(pred_dur.size), pred_dur)
    aln = np.zeros((pred_dur.size, owner.size), dtype=np.float32)
    aln[owner, np.arange(owner.size)] = 1.0
    return aln[None]


def alignment(durations: np.ndarray, speed: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(pred_dur int64 [T], aln float32 [1, T, L]) from the predictor's duration sums."""
    pred_dur = pred_durations(durations, speed)
    return pred_dur, alignment_matrix(pred_dur)


def padded_alignment(
    pred_dur: np.ndarray, tokens: int, frames: int
) -> tuple[np.ndarray, np.ndarray]:
    """The alignment inside a (``tokens``, ``frames``) bucket, and its frame mask.

    Returns aln float32 [1, tokens, frames] (pad tokens own no frame, pad frames belong to
    no token, so they are zero columns) and frame_mask float32 [frames] (1 on the L real
    frames). Raises BucketOverflowError when the utterance does not fit.
    """
    pred_dur = np.asarray(pred_dur, dtype=np.int64).reshape(-1)
    real_frames = int(pred_dur.sum())
    if pred_dur.size > tokens or real_frames > frames:
        raise BucketOverflowError(
            f"alignment of {pred_dur.size} tokens x {real_frames} frames does not fit the "
            f"bucket ({tokens} tokens x {frames} frames): split the text or slow it less"
        )
    aln = alignment_matrix(pred_dur)
    aln = pad_to(pad_to(aln, tokens, axis=1), frames, axis=2)
    return aln, length_mask(real_frames, frames)
