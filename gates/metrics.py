"""Parity metrics: each takes (reference, candidate) and returns a Python float.

Tensor metrics (``max_abs``, ``cosine``, ``psnr``) demand identical shapes and raise
``ShapeMismatch`` otherwise: a shape difference is a porting bug, never something to
paper over. Audio metrics (``waveform_corr``, ``magnitude_spectrogram_corr``) take mono
signals (size-1 axes are squeezed away) and **trim both to the shorter length**, because a
vocoder port may legitimately emit a few samples more or less than the reference. All
arithmetic is float64 so the metric never adds its own rounding to what it measures. NaN in
an input propagates to a NaN result, which fails every threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from gates.errors import ShapeMismatch
from gates.spectral import stft_magnitude


def as_array(x: Any) -> np.ndarray:
    """numpy view of an array-like, including torch tensors (any device, bf16 included)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        t = x.detach().cpu()
        if not t.dtype.is_floating_point or t.dtype.itemsize >= 4:
            return t.numpy()
        return t.float().numpy()  # numpy has no bfloat16; float32 holds it exactly
    return np.asarray(x)


def _float64(x: Any) -> np.ndarray:
    return as_array(x).astype(np.float64, copy=False)


def _same_shape(reference: Any, candidate: Any) -> tuple[np.ndarray, np.ndarray]:
    ref = _float64(reference)
    cand = _float64(candidate)
    if ref.shape != cand.shape:
        raise ShapeMismatch(ref.shape, cand.shape)
    return ref, cand


def _audio_pair(reference: Any, candidate: Any) -> tuple[np.ndarray, np.ndarray]:
    ref = np.squeeze(_float64(reference))
    cand = np.squeeze(_float64(candidate))
    if ref.ndim != 1 or cand.ndim != 1:
        raise ShapeMismatch(ref.shape, cand.shape)
    n = min(ref.size, cand.size)
    return ref[:n], cand[:n]


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of flattened arrays.

    A constant input has no defined correlation; we return 1.0 when both inputs are
    identical (silence vs silence is a perfect port) and 0.0 otherwise.
    """
    a = a.reshape(-1)
    b = b.reshape(-1)
    da = a - a.mean() if a.size else a
    db = b - b.mean() if b.size else b
    denom = math.sqrt(float(np.dot(da, da)) * float(np.dot(db, db)))
    if denom == 0.0:
        if np.isnan(a).any() or np.isnan(b).any():
            return float("nan")
        return 1.0 if np.array_equal(a, b) else 0.0
    return float(np.dot(da, db) / denom)


def max_abs(reference: Any, candidate: Any) -> float:
    """Largest absolute element-wise difference (lower is better; 0.0 for empty arrays)."""
    ref, cand = _same_shape(reference, candidate)
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ref - cand)))


def cosine(reference: Any, candidate: Any) -> float:
    """Cosine similarity of the flattened arrays.

    Both all-zero -> 1.0 (identical); exactly one all-zero -> 0.0 (no direction shared).
    """
    ref, cand = _same_shape(reference, candidate)
    a, b = ref.reshape(-1), cand.reshape(-1)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def psnr(reference: Any, candidate: Any) -> float:
    """Peak signal-to-noise ratio in dB with peak = max|reference|.

    ``10 * log10(peak**2 / mean((ref - cand)**2))``; identical inputs give +inf, an
    all-zero reference against a different candidate gives -inf.
    """
    ref, cand = _same_shape(reference, candidate)
    mse = float(np.mean((ref - cand) ** 2)) if ref.size else 0.0
    if mse == 0.0:
        return float("inf")
    peak = float(np.max(np.abs(ref)))
    if peak == 0.0:
        return float("-inf")
    return float(10.0 * math.log10(peak * peak / mse))


def waveform_corr(reference: Any, candidate: Any) -> float:
    """Pearson correlation of two waveforms, trimmed to the shorter one."""
    ref, cand = _audio_pair(reference, candidate)
    return _pearson(ref, cand)


def magnitude_spectrogram_corr(
    reference: Any, candidate: Any, n_fft: int = 1024, hop: int = 256
) -> float:
    """Pearson correlation of |STFT| (Hann window, centred frames), trimmed to the shorter.

    Insensitive to phase, which is what a vocoder port should be judged on when the
    reference and candidate draw different noise.
    """
    ref, cand = _audio_pair(reference, candidate)
    return _pearson(stft_magnitude(ref, n_fft, hop), stft_magnitude(cand, n_fft, hop))


def token_agreement(ref_tokens: Sequence[Any], cand_tokens: Sequence[Any]) -> float:
    """Fraction of positions where the token ids agree.

    Compared over the shorter sequence; every position of the longer one beyond it counts
    as a disagreement, so the denominator is the longer length. Two empty sequences -> 1.0.
    """
    ref = as_array(ref_tokens).reshape(-1).tolist()
    cand = as_array(cand_tokens).reshape(-1).tolist()
    total = max(len(ref), len(cand))
    if total == 0:
        return 1.0
    same = sum(1 for r, c in zip(ref, cand, strict=False) if r == c)
    return same / total


def tensor_stats(x: Any) -> dict[str, Any]:
    """JSON-safe summary of a tensor for failure reports.

    min/max/mean/std are over the finite elements only (None when there are none), so one
    stray inf does not hide the scale of everything else; nan/inf are counted separately.
    """
    dtype = str(x.dtype) if hasattr(x, "dtype") else None
    arr = as_array(x)
    out: dict[str, Any] = {"shape": list(arr.shape), "dtype": dtype or str(arr.dtype)}
    if arr.dtype.kind in "biuf":
        values = arr.astype(np.float64).reshape(-1)
        finite = values[np.isfinite(values)]
        nan_count = int(np.isnan(values).sum())
        inf_count = int(np.isinf(values).sum())
    else:
        finite, nan_count, inf_count = np.empty(0), 0, 0
    has = finite.size > 0
    out["min"] = float(finite.min()) if has else None
    out["max"] = float(finite.max()) if has else None
    out["mean"] = float(finite.mean()) if has else None
    out["std"] = float(finite.std()) if has else None
    out["nan"] = nan_count
    out["inf"] = inf_count
    return out
