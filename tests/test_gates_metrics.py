"""gates.metrics and gates.spectral checked against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gates import metrics
from gates.errors import GateError, ShapeMismatch
from gates.spectral import stft_magnitude

SR = 24000


def _tone(freq: float, seconds: float = 1.0, phase: float = 0.0, sr: int = SR) -> np.ndarray:
    t = np.arange(int(seconds * sr)) / sr
    return np.sin(2 * np.pi * freq * t + phase)


# --- tensor metrics -----------------------------------------------------------------------


def test_cosine_matches_torch():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 7, 5))
    b = a + rng.normal(scale=0.5, size=a.shape)
    expected = torch.nn.functional.cosine_similarity(
        torch.from_numpy(a).reshape(1, -1), torch.from_numpy(b).reshape(1, -1)
    ).item()
    assert metrics.cosine(a, b) == pytest.approx(expected, abs=1e-12)
    assert metrics.cosine(a, -a) == pytest.approx(-1.0, abs=1e-12)


def test_cosine_zero_conventions():
    z = np.zeros((4, 4))
    assert metrics.cosine(z, z) == 1.0
    assert metrics.cosine(z, np.ones((4, 4))) == 0.0
    assert metrics.cosine(np.ones((4, 4)), z) == 0.0


def test_max_abs_finds_planted_error():
    a = np.zeros((5, 6), dtype=np.float32)
    b = a.copy()
    b[2, 3] = -0.25
    b[4, 1] = 0.125
    assert metrics.max_abs(a, b) == 0.25


def test_psnr_on_known_noise_level():
    amplitude, sigma = 0.8, 0.01
    ref = amplitude * _tone(440.0)
    # +-sigma alternating noise has mean square exactly sigma**2.
    noise = sigma * np.where(np.arange(ref.size) % 2 == 0, 1.0, -1.0)
    peak = np.max(np.abs(ref))
    assert metrics.psnr(ref, ref + noise) == pytest.approx(20 * math.log10(peak / sigma), abs=1e-9)
    assert metrics.psnr(ref, ref) == math.inf


def test_tensor_metrics_reject_shape_mismatch():
    for fn in (metrics.max_abs, metrics.cosine, metrics.psnr):
        with pytest.raises(ShapeMismatch):
            fn(np.zeros((2, 3)), np.zeros((3, 2)))
    assert issubclass(ShapeMismatch, GateError)


def test_metrics_accept_torch_bfloat16():
    t = torch.linspace(-1, 1, 64, dtype=torch.bfloat16)
    assert metrics.max_abs(t, t.float().numpy()) == 0.0
    assert isinstance(metrics.cosine(t, t), float)


# --- audio metrics ------------------------------------------------------------------------


def test_waveform_corr_matches_numpy_and_trims():
    rng = np.random.default_rng(1)
    a = rng.normal(size=5000)
    b = 0.5 * a + rng.normal(size=5000)
    assert metrics.waveform_corr(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)
    longer = np.concatenate([b, rng.normal(size=300)])
    assert metrics.waveform_corr(a, longer) == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)


def test_stft_magnitude_matches_torch_stft():
    x = np.random.default_rng(2).normal(size=6000)
    n_fft, hop = 512, 128
    expected = torch.stft(
        torch.from_numpy(x),
        n_fft=n_fft,
        hop_length=hop,
        window=torch.hann_window(n_fft, dtype=torch.float64),
        center=True,
        pad_mode="reflect",
        return_complex=True,
    ).abs()
    ours = stft_magnitude(x, n_fft, hop)
    assert ours.shape == tuple(expected.shape)
    np.testing.assert_allclose(ours, expected.numpy(), atol=1e-9)


def test_magspec_corr_ignores_phase_but_not_noise():
    ref = _tone(440.0) + 0.5 * _tone(1250.0)
    shifted = _tone(440.0, phase=np.pi / 2) + 0.5 * _tone(1250.0, phase=1.0)
    noisy = ref + np.random.default_rng(3).normal(scale=1.0, size=ref.size)
    assert metrics.magnitude_spectrogram_corr(ref, ref) == pytest.approx(1.0, abs=1e-12)
    # Phase shift: the waveforms barely correlate but the magnitudes agree.
    assert abs(metrics.waveform_corr(_tone(440.0), _tone(440.0, phase=np.pi / 2))) < 0.01
    assert metrics.magnitude_spectrogram_corr(ref, shifted) > 0.99
    assert metrics.magnitude_spectrogram_corr(ref, noisy) < 0.9


# --- tokens and stats ---------------------------------------------------------------------


def test_token_agreement():
    assert metrics.token_agreement([1, 2, 3, 4], [1, 2, 0, 4]) == 0.75
    assert metrics.token_agreement([1, 2, 3], [1, 2, 3, 4, 5]) == pytest.approx(3 / 5)
    assert metrics.token_agreement(np.array([7, 8]), [9, 8]) == 0.5
    assert metrics.token_agreement([], []) == 1.0
    assert metrics.token_agreement(["a", "b"], ["a", "c"]) == 0.5


def test_tensor_stats():
    x = np.array([[1.0, -2.0, np.nan], [np.inf, 3.0, 0.0]], dtype=np.float32)
    s = metrics.tensor_stats(x)
    finite = np.array([1.0, -2.0, 3.0, 0.0])
    assert s["shape"] == [2, 3] and s["dtype"] == "float32"
    assert (s["min"], s["max"], s["nan"], s["inf"]) == (-2.0, 3.0, 1, 1)
    assert s["mean"] == pytest.approx(finite.mean())
    assert s["std"] == pytest.approx(finite.std())
    bf = metrics.tensor_stats(torch.ones(2, 2, dtype=torch.bfloat16))
    assert bf["dtype"] == "torch.bfloat16" and bf["mean"] == 1.0
