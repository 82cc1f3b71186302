"""Spectral front ends shared by the audio metrics and the plots.

Kept in plain numpy (no librosa/torchaudio in the toolchain) so a gate never depends on
the framework under test. Conventions follow the usual TTS ones so numbers are
comparable with published figures: periodic Hann window, centred frames with reflect
padding, magnitude (not power) spectra.

Mel scale: the **Slaney** scale (linear below 1 kHz, logarithmic above; the Auditory
Toolbox / librosa default, ``htk=False``) with Slaney-style triangular filters that are
area-normalised (each filter's peak is ``2 / (f_right - f_left)``).
"""

from __future__ import annotations

import numpy as np

from conversion.core import dsp

# Slaney mel scale constants: 200/3 Hz per mel below 1 kHz, then 27 mels per factor 6.4.
_F_SP = 200.0 / 3.0
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def stft_magnitude(x: np.ndarray, n_fft: int = 1024, hop: int = 256) -> np.ndarray:
    """|STFT| of a 1-D signal, shape (n_fft // 2 + 1, frames), float64.

    The project's host STFT (torch.stft conventions: centred frames, reflect padding,
    periodic Hann). Signals too short to reflect are zero padded instead.
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    pad = n_fft // 2
    if x.size + 2 * pad < n_fft:
        x = np.pad(x, (0, n_fft - x.size - 2 * pad))
    mode = "reflect" if x.size > pad else "constant"
    spec = dsp.stft(x, n_fft, hop, window=dsp.hann_window(n_fft), pad_mode=mode)
    return np.abs(spec)


def hz_to_mel(f: np.ndarray | float) -> np.ndarray:
    """Hz -> Slaney mel."""
    f = np.asarray(f, dtype=np.float64)
    lin = f / _F_SP
    log = _MIN_LOG_MEL + np.log(np.maximum(f, _MIN_LOG_HZ) / _MIN_LOG_HZ) / _LOGSTEP
    return np.where(f >= _MIN_LOG_HZ, log, lin)


def mel_to_hz(m: np.ndarray | float) -> np.ndarray:
    """Slaney mel -> Hz (inverse of ``hz_to_mel``)."""
    m = np.asarray(m, dtype=np.float64)
    lin = m * _F_SP
    log = _MIN_LOG_HZ * np.exp(_LOGSTEP * (np.maximum(m, _MIN_LOG_MEL) - _MIN_LOG_MEL))
    return np.where(m >= _MIN_LOG_MEL, log, lin)


def mel_filterbank(
    sr: int, n_fft: int, n_mels: int, fmin: float = 0.0, fmax: float | None = None
) -> np.ndarray:
    """Slaney-normalised triangular mel filters, shape (n_mels, n_fft // 2 + 1)."""
    fmax = sr / 2.0 if fmax is None else fmax
    fft_freqs = np.linspace(0.0, sr / 2.0, n_fft // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    left, centre, right = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (fft_freqs[None, :] - left) / (centre - left)
    falling = (right - fft_freqs[None, :]) / (right - centre)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return weights * (2.0 / (right - left))


def log_mel(
    x: np.ndarray, sr: int, n_mels: int = 80, n_fft: int = 1024, hop: int = 256
) -> np.ndarray:
    """log(mel magnitude + 1e-5), shape (n_mels, frames)."""
    mel = mel_filterbank(sr, n_fft, n_mels) @ stft_magnitude(x, n_fft, hop)
    return np.log(mel + 1e-5)
