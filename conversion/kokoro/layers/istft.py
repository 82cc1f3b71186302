"""iSTFTNet's inverse STFT over the real frames of a padded frame bucket.

`torch.istft` divides the overlap-added frames by the overlap-added window square of the
frames it was given. Unpadded, the last real samples see a partial envelope (no frame after
the last one); padded, a frame after the last real one would add to both sum and envelope.
So the pad frames' spectrum is zeroed, and the envelope is rescaled to the real frames':
y = istft_all(X·mask) · env_all / env_real, which is exact on the real samples.
The inverse itself is `conversion.core.host.dsp.ConvISTFT` (convolutions only, zero insertion).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.host.dsp import ConvISTFT, hann_window

from .norm import Span


class MaskedISTFT(nn.Module):
    """forward(magnitude, phase [B, n_fft//2+1, F], frame span, sample span) -> [B, hop·(F-1)].

    Matches `torch.istft(magnitude * exp(1j * phase), n_fft, hop, n_fft, hann)` run on the
    first `real` frames only, zero past its end.
    """

    def __init__(self, n_fft: int, hop: int) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.istft = ConvISTFT(n_fft, hop, window="hann", center=True, mag_phase=True)
        w2 = hann_window(n_fft) ** 2
        # Two channels (all frames, real frames) overlap-added with the same window square.
        kernel = np.broadcast_to(w2[::-1], (2, 1, n_fft)).copy()
        self.register_buffer("w2_kernel", torch.from_numpy(kernel).float())

    def forward(
        self, magnitude: torch.Tensor, phase: torch.Tensor, frames: Span, samples: Span
    ) -> torch.Tensor:
        y = self.istft(magnitude * frames.mask, phase)
        env = self._envelopes(frames.mask, y.shape[-1])
        # Only the last hop-ish samples before the end differ; past it env_real is ~0.
        scale = env[:, 0] / env[:, 1].clamp_min(1e-3)
        return y * scale * samples.mask[:, 0]

    def _envelopes(self, mask: torch.Tensor, length: int) -> torch.Tensor:
        """[B, 2, length]: overlap-added window square of all frames / of the real frames."""
        bsz, _, n = mask.shape
        frames = torch.cat([torch.ones_like(mask), mask], dim=1)  # [B, 2, F]
        gap = frames.new_zeros(bsz, 2, n, self.hop - 1)
        z = torch.cat([frames.unsqueeze(-1), gap], dim=-1).reshape(bsz, 2, n * self.hop)
        # Margins as in a full transposed convolution: n_fft-1 on the left, and n_fft-hop on
        # the right (the last frame's hop-1 inserted zeros already count).
        left = frames.new_zeros(bsz, 2, self.n_fft - 1)
        right = frames.new_zeros(bsz, 2, max(self.n_fft - self.hop, 0))
        env = F.conv1d(torch.cat([left, z, right], dim=-1), self.w2_kernel, groups=2)
        start = self.n_fft // 2  # `center=True` trims n_fft//2 samples at the start
        return env[..., start : start + length]
