"""STFT / iSTFT twice over: on the host (numpy FFT) and in-graph (convolutions only).

Both halves follow ``torch.stft(..., return_complex=True)`` / ``torch.istft`` conventions
exactly (window centred and zero-padded to ``n_fft``, reflect padding for ``center``,
``1/sqrt(n_fft)`` for ``normalized``, window-square (NOLA) normalisation and the same
``length`` trimming), so a publisher's vocoder code can swap its torch calls for these.

The in-graph modules exist because the Core AI converter has no ``stft``/``istft``/``fft``
or complex ops: a DFT over a fixed frame size is a matrix, so it becomes a conv1d with a
windowed DFT basis, and the inverse's overlap-add becomes a (transposed) convolution.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

PadMode = Literal["reflect", "constant", "replicate"]
OverlapAdd = Literal["zero_insert", "polyphase", "conv_transpose"]

# numpy's names for torch's pad modes ("replicate" repeats the edge sample).
_NP_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}
# torch.istft refuses windows whose overlap-added square drops below this.
_NOLA_EPS = 1e-11


# ----------------------------------------------------------------------------- windows


def hann_window(n: int, periodic: bool = True) -> np.ndarray:
    """``torch.hann_window(n, periodic)`` in float64 (periodic = scipy's ``fftbins=True``)."""
    if n <= 0:
        return np.zeros(0)
    if n == 1:
        return np.ones(1)
    denom = n if periodic else n - 1
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(n) / denom)


def full_window(
    n_fft: int, win_length: int | None = None, window: np.ndarray | torch.Tensor | None = None
) -> np.ndarray:
    """The length-``n_fft`` float64 analysis window torch uses internally.

    ``window=None`` means rectangular (torch's default, not Hann); a window shorter than
    ``n_fft`` is zero-padded on both sides with the extra zero on the right, like torch.
    """
    win_length = n_fft if win_length is None else win_length
    if not 0 < win_length <= n_fft:
        raise ValueError(f"win_length must be in (0, n_fft={n_fft}], got {win_length}")
    if window is None:
        w = np.ones(win_length)
    else:
        w = _as_numpy(window).astype(np.float64).reshape(-1)
        if w.shape[0] != win_length:
            raise ValueError(f"window has {w.shape[0]} samples, expected win_length={win_length}")
    left = (n_fft - win_length) // 2
    return np.pad(w, (left, n_fft - win_length - left))


def _as_numpy(a: np.ndarray | torch.Tensor) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def _resolve_window(
    n_fft: int, win_length: int | None, window: str | np.ndarray | torch.Tensor | None
) -> np.ndarray:
    """Module-side window spec: ``"hann"`` (periodic, as torch and scipy's fftbins), an
    array of ``win_length`` samples, or ``None`` for rectangular."""
    if isinstance(window, str):
        if window != "hann":
            raise ValueError(f"unknown window {window!r}; pass the samples instead")
        window = hann_window(n_fft if win_length is None else win_length)
    return full_window(n_fft, win_length, window)


def window_envelope(window: np.ndarray, hop_length: int, frames: int) -> np.ndarray:
    """Overlap-added ``window**2`` over ``frames`` frames: iSTFT's normaliser (untrimmed)."""
    return _overlap_add(np.broadcast_to(window**2, (frames, window.shape[0])), hop_length)


def _overlap_add(frames: np.ndarray, hop: int) -> np.ndarray:
    """Sum frames [..., T, N] placed every ``hop`` samples -> [..., (T-1)*hop + N].

    Frames are cut into ``hop``-long blocks so the loop runs over the few blocks per frame,
    not the thousands of frames.
    """
    *lead, t, n = frames.shape
    k = -(-n // hop)
    padded = np.zeros((*lead, t, k * hop), dtype=frames.dtype)
    padded[..., :n] = frames
    blocks = padded.reshape(*lead, t, k, hop)
    out = np.zeros((*lead, t + k - 1, hop), dtype=frames.dtype)
    for j in range(k):
        out[..., j : j + t, :] += blocks[..., :, j, :]
    return out.reshape(*lead, (t + k - 1) * hop)[..., : (t - 1) * hop + n]


# ----------------------------------------------------------------------------- host


def stft(
    x: np.ndarray,
    n_fft: int,
    hop_length: int,
    win_length: int | None = None,
    window: np.ndarray | torch.Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool = True,
) -> np.ndarray:
    """``torch.stft(..., return_complex=True)`` on the host: [..., N] -> [..., bins, frames].

    Computed in float64 for accuracy, returned as complex64 for float32 (or narrower) input
    and complex128 for float64 input, as torch does.
    """
    x = np.asarray(x)
    out_dtype = np.complex128 if x.dtype == np.float64 else np.complex64
    xd = x.astype(np.float64)
    w = full_window(n_fft, win_length, window)
    if center:
        if pad_mode not in _NP_PAD:
            raise ValueError(f"unknown pad_mode {pad_mode!r}")
        pad = n_fft // 2
        widths = [(0, 0)] * (xd.ndim - 1) + [(pad, pad)]
        xd = np.pad(xd, widths, mode=_NP_PAD[pad_mode])
    if xd.shape[-1] < n_fft:
        raise ValueError(f"signal of {xd.shape[-1]} samples is shorter than n_fft={n_fft}")
    frames = np.lib.stride_tricks.sliding_window_view(xd, n_fft, axis=-1)[..., ::hop_length, :]
    frames = frames * w
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spec = spec / math.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2).astype(out_dtype)


def istft(
    spec: np.ndarray,
    n_fft: int,
    hop_length: int,
    win_length: int | None = None,
    window: np.ndarray | torch.Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    length: int | None = None,
) -> np.ndarray:
    """``torch.istft`` on the host for a onesided spectrum [..., n_fft//2+1, frames].

    Overlap-adds the windowed inverse frames, divides by the overlap-added window square
    and trims the ``center`` padding; ``length`` trims or zero-pads the end like torch.
    Raises ValueError where torch raises its NOLA error (the envelope vanishes).
    """
    spec = np.asarray(spec)
    bins = n_fft // 2 + 1
    if spec.shape[-2] != bins:
        raise ValueError(f"expected {bins} onesided bins, got {spec.shape[-2]}")
    out_dtype = np.float64 if spec.dtype == np.complex128 else np.float32
    s = spec.astype(np.complex128)
    if normalized:
        s = s * math.sqrt(n_fft)
    w = full_window(n_fft, win_length, window)
    n_frames = s.shape[-1]
    frames = np.fft.irfft(np.swapaxes(s, -1, -2), n=n_fft, axis=-1) * w
    y = _overlap_add(frames, hop_length)
    env = window_envelope(w, hop_length, n_frames)
    start, end = _istft_span(n_fft, hop_length, n_frames, center, length)
    y, env = y[..., start:end], env[start:end]
    if env.size and np.abs(env).min() < _NOLA_EPS:
        raise ValueError("istft: window overlap-add envelope vanishes (NOLA fails)")
    y = y / env
    if length is not None and y.shape[-1] < length:
        widths = [(0, 0)] * (y.ndim - 1) + [(0, length - y.shape[-1])]
        y = np.pad(y, widths)
    return y.astype(out_dtype)


def _istft_span(
    n_fft: int, hop: int, frames: int, center: bool, length: int | None
) -> tuple[int, int]:
    """torch.istft's [start, end) of the overlap-added signal, end clamped to what exists."""
    full = n_fft + hop * (frames - 1)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = full - n_fft // 2
    else:
        end = full
    return start, min(end, full)


def magnitude_phase(spec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|spec|, angle(spec)) as Kokoro's TorchSTFT.transform returns them."""
    return np.abs(spec), np.angle(spec)


def polar(magnitude: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """``magnitude * exp(1j * phase)``: the inverse of :func:`magnitude_phase`."""
    return magnitude * np.exp(1j * phase)


# ----------------------------------------------------------------------------- in-graph


def _dft_bins(n_fft: int) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin of 2*pi*k*n/N for the onesided bins, [bins, N] float64, exact zeros where
    sin vanishes analytically (so DC/Nyquist imaginary parts are +0, as an FFT gives)."""
    k = np.arange(n_fft // 2 + 1)[:, None]
    n = np.arange(n_fft)[None, :]
    # Reduce k*n mod N in integers first: keeps the angle small and the basis accurate.
    ang = 2.0 * np.pi * ((k * n) % n_fft) / n_fft
    cos, sin = np.cos(ang), np.sin(ang)
    sin[0] = 0.0
    if n_fft % 2 == 0:
        sin[-1] = 0.0
    return cos, sin


class ConvSTFT(nn.Module):
    """``torch.stft(x, ..., return_complex=True)`` as pad + one strided conv1d.

    forward(x [B, N]) -> (real, imag), each [B, n_fft//2+1, frames]; with ``mag_phase`` it
    returns (magnitude, phase) like ``abs``/``angle`` of the complex STFT (phase via atan2).
    The imaginary DC (and Nyquist, even n_fft) rows are not convolved but concatenated as
    exact zeros: atan2(+0, negative) = +pi, which is what ``torch.angle`` gives there, and a
    -0 from a convolution would flip it to -pi.

    ``center`` pads in-graph with ``F.pad`` (reflect pad converts and is exact). The Linux
    runtime's ``pad`` op is slow (``docs/tools/op_table.py --only reflection_pad1d
    cat_zeros_pad``; docs/core-ai-on-linux.md section 3): at 24,000 samples it is roughly
    half of this graph's ~8 ms there (slice + flip + cat measured ~5 ms), which is not worth
    a hand-rolled pad whose device behaviour is unproven.
    """

    def __init__(
        self,
        n_fft: int,
        hop_length: int,
        win_length: int | None = None,
        window: str | np.ndarray | torch.Tensor | None = "hann",
        center: bool = True,
        pad_mode: PadMode = "reflect",
        mag_phase: bool = False,
    ) -> None:
        super().__init__()
        if pad_mode not in ("reflect", "constant", "replicate"):
            raise ValueError(f"unknown pad_mode {pad_mode!r}")
        self.n_fft, self.hop_length = n_fft, hop_length
        self.center, self.pad_mode, self.mag_phase = center, pad_mode, mag_phase
        w = _resolve_window(n_fft, win_length, window)
        cos, sin = _dft_bins(n_fft)
        self.bins = n_fft // 2 + 1
        # Imag rows whose sine is identically zero are left out of the conv (see docstring).
        self.imag_lo = 1
        self.imag_hi = self.bins - 1 if n_fft % 2 == 0 else self.bins
        basis = np.concatenate([cos * w, -sin[self.imag_lo : self.imag_hi] * w], axis=0)
        self.register_buffer("basis", torch.from_numpy(basis[:, None, :]).float())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.unsqueeze(1)
        if self.center:
            p = self.n_fft // 2
            x = F.pad(x, (p, p), mode=self.pad_mode)
        y = F.conv1d(x, self.basis, stride=self.hop_length)
        real = y[:, : self.bins]
        mid = y[:, self.bins :]
        b, _, t = y.shape
        lo = y.new_zeros(b, self.imag_lo, t)
        hi = y.new_zeros(b, self.bins - self.imag_hi, t)
        imag = torch.cat([lo, mid, hi], dim=1)
        if not self.mag_phase:
            return real, imag
        return torch.sqrt(real * real + imag * imag), torch.atan2(imag, real)


class ConvISTFT(nn.Module):
    """``torch.istft`` (onesided, not normalized) as an inverse-DFT basis + overlap-add.

    forward(real, imag) -> waveform [B, N]; with ``mag_phase`` the inputs are (magnitude,
    phase) and the spectrum is ``magnitude * (cos, sin)(phase)`` as in Kokoro's inverse.

    The inverse DFT, the synthesis window and the overlap-add fold into one transposed
    convolution of the 2*bins spectrum channels with stride ``hop``. How it is lowered:

    * ``"zero_insert"`` (default): insert hop-1 zeros between frames and run a plain conv1d
      with the flipped kernel. The Kokoro port found strided ``conv_transpose1d`` returning
      all zeros on the device, and this form bit-exact there; it is the device-safe choice.
    * ``"polyphase"``: the same sum split by output phase (hop convs of ceil(N/hop) taps,
      then interleaved by transpose + reshape): plain conv1d too, ~hop x fewer MACs, but
      not yet checked on a device.
    * ``"conv_transpose"``: ``conv_transpose1d``; exact on the Linux runtime only.

    The window-square envelope depends on the frame count. Graphs are static-shape, so with
    ``frames`` given its reciprocal is a precomputed buffer (cheapest at run time, and the
    NOLA condition is checked here); with ``frames=None`` it is overlap-added in-graph from
    the input's (static) frame count with the same lowering, at the cost of one
    single-channel convolution. ``length`` trims or zero-pads the output like torch.
    """

    def __init__(
        self,
        n_fft: int,
        hop_length: int,
        win_length: int | None = None,
        window: str | np.ndarray | torch.Tensor | None = "hann",
        center: bool = True,
        mag_phase: bool = False,
        frames: int | None = None,
        length: int | None = None,
        overlap_add: OverlapAdd = "zero_insert",
    ) -> None:
        super().__init__()
        if hop_length > n_fft:
            raise ValueError(f"hop_length {hop_length} > n_fft {n_fft} leaves gaps")
        if overlap_add not in ("zero_insert", "polyphase", "conv_transpose"):
            raise ValueError(f"unknown overlap_add {overlap_add!r}")
        self.n_fft, self.hop_length, self.center = n_fft, hop_length, center
        self.mag_phase, self.frames, self.length = mag_phase, frames, length
        self.overlap_add = overlap_add
        w = _resolve_window(n_fft, win_length, window)
        cos, sin = _dft_bins(n_fft)
        # irfft weights: bins other than DC and Nyquist stand for a conjugate pair.
        scale = np.full((cos.shape[0], 1), 2.0 / n_fft)
        scale[0] = 1.0 / n_fft
        if n_fft % 2 == 0:
            scale[-1] = 1.0 / n_fft
        kernel = np.concatenate([cos * scale * w, -sin * scale * w], axis=0)  # [2*bins, N]
        # Weights are stored already in the chosen lowering's layout, so the graph holds
        # constants rather than flip/reshape ops on them.
        self.register_buffer("ola_weight", _ola_weight(kernel, hop_length, overlap_add))
        if frames is not None:
            env = window_envelope(w, hop_length, frames)
            start, end = _istft_span(n_fft, hop_length, frames, center, length)
            env = env[start:end]
            if env.size and np.abs(env).min() < _NOLA_EPS:
                raise ValueError("window overlap-add envelope vanishes (NOLA fails)")
            self.register_buffer("inv_envelope", torch.from_numpy(1.0 / env).float())
        else:
            self.inv_envelope = None
            self.register_buffer("env_weight", _ola_weight((w**2)[None], hop_length, overlap_add))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.mag_phase:
            a, b = a * torch.cos(b), a * torch.sin(b)
        spec = torch.cat([a, b], dim=1)  # [B, 2*bins, T]
        t = spec.shape[-1]
        if self.frames is not None and t != self.frames:
            raise ValueError(f"built for {self.frames} frames, got {t}")
        y = _ola(spec, self.ola_weight, self.hop_length, self.n_fft, self.overlap_add)[:, 0]
        start, end = _istft_span(self.n_fft, self.hop_length, t, self.center, self.length)
        y = y[:, start:end]
        if self.inv_envelope is not None:
            y = y * self.inv_envelope
        else:
            ones = spec.new_ones(1, 1, t)
            env = _ola(ones, self.env_weight, self.hop_length, self.n_fft, self.overlap_add)
            y = y / env[:, 0, start:end]
        if self.length is not None and y.shape[-1] < self.length:
            y = torch.cat([y, y.new_zeros(y.shape[0], self.length - y.shape[-1])], dim=-1)
        return y


def _ola_weight(kernel: np.ndarray, hop: int, mode: OverlapAdd) -> torch.Tensor:
    """Kernel [C, N] of a stride-``hop`` transposed conv, laid out for ``_ola``'s ``mode``."""
    ch, n = kernel.shape
    if mode == "conv_transpose":
        w = kernel[:, None, :]  # [C, 1, N]
    elif mode == "zero_insert":
        w = kernel[None, :, ::-1]  # [1, C, N], flipped: conv1d correlates
    else:
        k = -(-n // hop)
        kp = np.concatenate([kernel, np.zeros((ch, k * hop - n))], axis=-1)
        w = kp.reshape(ch, k, hop).transpose(2, 0, 1)[..., ::-1]  # [hop, C, k], taps flipped
    return torch.from_numpy(np.ascontiguousarray(w)).float()


def _ola(c: torch.Tensor, weight: torch.Tensor, hop: int, n: int, mode: OverlapAdd) -> torch.Tensor:
    """Stride-``hop`` transposed conv of c [B, C, T], kernel length n -> [B, 1, (T-1)*hop+n]."""
    if mode == "conv_transpose":
        return F.conv_transpose1d(c, weight, stride=hop)
    bsz, ch, t = c.shape
    if mode == "zero_insert":
        z = c
        if hop > 1:
            gap = c.new_zeros(bsz, ch, t, hop - 1)
            z = torch.cat([c.unsqueeze(-1), gap], dim=-1).reshape(bsz, ch, t * hop)
        # Zero margins by concatenation, not F.pad: pad ops are slow on the Linux runtime.
        # The last hop-1 inserted zeros already count towards the right margin of n-1.
        parts = [c.new_zeros(bsz, ch, n - 1), z]
        if n > hop:
            parts.append(c.new_zeros(bsz, ch, n - hop))
        return F.conv1d(torch.cat(parts, dim=-1), weight)
    # polyphase: out[q*hop + r] = sum_s c[q - s] . kernel[s*hop + r] over k = ceil(n/hop) taps.
    k = weight.shape[-1]
    if k > 1:
        margin = c.new_zeros(bsz, ch, k - 1)
        c = torch.cat([margin, c, margin], dim=-1)
    out = F.conv1d(c, weight)  # [B, hop, T+k-1]
    out = out.transpose(1, 2).reshape(bsz, 1, (t + k - 1) * hop)
    return out[..., : (t - 1) * hop + n]
