"""The spectral front end shared by the audio metrics and the plots.

Kept in plain numpy (no librosa/torchaudio in the toolchain) so a gate never depends on
the framework under test. Conventions follow the usual TTS ones so numbers are
comparable with published figures: periodic Hann window, centred frames with reflect
padding, magnitude (not power) spectra.
"""

from __future__ import annotations

import numpy as np

from conversion.core.host import dsp


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
