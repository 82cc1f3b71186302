"""iSTFTNet's generator (Kokoro's vocoder trunk) re-authored for a padded frame bucket.

The harmonic source (f0 upsampling, SineGen, its STFT) is not here: it is computed on the
host and comes in as `har` [B, n_fft+2, 120·L+1] = cat(magnitude, phase). What is here: the
transposed-conv upsamplers (as zero insertion + conv1d), the noise branch convolutions, the
Snake resblocks with frame-masked AdaIN, conv_post and the in-graph inverse STFT.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import SnakeResBlock
from .conv import ZeroInsertConvTranspose1d, reflect_left1
from .istft import MaskedISTFT
from .norm import Span


class Generator(nn.Module):
    """forward(x [B, C, 2L], s, har, spans) -> waveform [B, 600·L].

    `spans` are the generator's time resolutions, in order: its input (2L), after each
    upsampler (20L, then 120L+1 with the reflection pad), and the waveform (600L).
    """

    def __init__(self, gen: nn.Module) -> None:
        super().__init__()
        self.num_kernels = gen.num_kernels
        self.ups = nn.ModuleList(ZeroInsertConvTranspose1d(u) for u in gen.ups)
        self.noise_convs = gen.noise_convs
        self.noise_res = nn.ModuleList(SnakeResBlock(b) for b in gen.noise_res)
        self.resblocks = nn.ModuleList(SnakeResBlock(b) for b in gen.resblocks)
        self.conv_post = gen.conv_post
        self.bins = gen.post_n_fft // 2 + 1
        self.istft = MaskedISTFT(gen.post_n_fft, gen.stft.hop_length)

    @staticmethod
    def upsample_factors(gen: nn.Module) -> list[int]:
        return [u.stride[0] for u in gen.ups]

    def forward(self, x: torch.Tensor, s: torch.Tensor, har: torch.Tensor, spans: list[Span]):
        n_up = len(self.ups)
        for i in range(n_up):
            # The upsampler mixes neighbours: its pad inputs must be zero.
            x = F.leaky_relu(x, 0.1) * spans[i].mask
            source = self.noise_res[i](self.noise_convs[i](har), s, spans[i + 1])
            x = self.ups[i](x)
            if i == n_up - 1:
                x = reflect_left1(x)
            x = x + source
            blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
            xs = None
            for blk in blocks:
                y = blk(x, s, spans[i + 1])
                xs = y if xs is None else xs + y
            x = xs / self.num_kernels
        x = self.conv_post(F.leaky_relu(x) * spans[n_up].mask)
        magnitude = torch.exp(x[:, : self.bins])
        phase = torch.sin(x[:, self.bins :])
        return self.istft(magnitude, phase, spans[n_up], spans[n_up + 1])
