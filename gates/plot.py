"""Diagnostic plot of an audio rung: where in time and frequency the port differs.

Uses matplotlib's object API with the Agg canvas directly rather than pyplot, so it works
headless and never changes the process-wide backend of whoever imports it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gates.metrics import as_array
from gates.spectral import stft_magnitude


def plot_waveforms(
    ref: np.ndarray,
    cand: np.ndarray,
    sr: int,
    path: str | Path,
    title: str = "",
    n_fft: int = 1024,
    hop: int = 256,
) -> Path:
    """Write a PNG: both waveforms overlaid, and |log S_ref - log S_cand| over time/frequency.

    Signals of different lengths are overlaid as they are; the difference image covers
    the common prefix (as the audio metrics do).
    """
    r = np.squeeze(as_array(ref).astype(np.float64))
    c = np.squeeze(as_array(cand).astype(np.float64))
    n = min(r.size, c.size)
    eps = 1e-5
    diff = np.abs(
        np.log(stft_magnitude(r[:n], n_fft, hop) + eps)
        - np.log(stft_magnitude(c[:n], n_fft, hop) + eps)
    )

    fig = Figure(figsize=(10, 6), constrained_layout=True)
    FigureCanvasAgg(fig)
    ax_wave, ax_spec = fig.subplots(2, 1)
    ax_wave.plot(np.arange(r.size) / sr, r, lw=0.6, label="reference")
    ax_wave.plot(np.arange(c.size) / sr, c, lw=0.6, alpha=0.7, label="candidate")
    ax_wave.set_xlabel("time (s)")
    ax_wave.set_ylabel("amplitude")
    ax_wave.legend(loc="upper right")
    ax_wave.set_title(title or "waveforms")

    extent = (0.0, diff.shape[1] * hop / sr, 0.0, sr / 2.0)
    image = ax_spec.imshow(diff, origin="lower", aspect="auto", extent=extent, cmap="magma")
    ax_spec.set_xlabel("time (s)")
    ax_spec.set_ylabel("frequency (Hz)")
    ax_spec.set_title("|log S_ref - log S_cand|")
    fig.colorbar(image, ax=ax_spec, label="abs log-magnitude difference")

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    return path
