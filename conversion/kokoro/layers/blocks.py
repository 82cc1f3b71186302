"""Kokoro's style-conditioned residual blocks, frame-masked.

`AdainResBlock` is StyleTTS2's AdainResBlk1d (prosody F0/N stacks, decoder encode/decode),
with its optional ×2 upsample; `SnakeResBlock` is iSTFTNet's AdaINResBlock1 (generator).
Every convolution input is zero on the pad frames: each block starts with a masked AdaIN
(which zeroes them), the Snake activation keeps 0 at 0, and the ×2 pool's bias is re-masked.
A block's own output is not masked: its consumer either normalises it (masked statistics)
or applies a pointwise op.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .conv import ZeroInsertConvTranspose1d, upsample2x
from .norm import MaskedAdaIN1d, Span

# Publisher: `torch.rsqrt(torch.tensor(2))`, an int rsqrt the converter refuses.
RSQRT2 = 1.0 / math.sqrt(2.0)


class AdainResBlock(nn.Module):
    """forward(x [B, Cin, N], s, span at N, span at the output rate) -> [B, Cout, N or 2N]."""

    def __init__(self, blk: nn.Module) -> None:
        super().__init__()
        self.upsample = blk.upsample_type != "none"
        self.slope = float(blk.actv.negative_slope)
        self.norm1 = MaskedAdaIN1d(blk.norm1)
        self.norm2 = MaskedAdaIN1d(blk.norm2)
        self.conv1, self.conv2 = blk.conv1, blk.conv2
        self.conv1x1 = blk.conv1x1 if blk.learned_sc else None
        self.pool = ZeroInsertConvTranspose1d(blk.pool) if self.upsample else None

    def forward(self, x: torch.Tensor, s: torch.Tensor, span_in: Span, span_out: Span):
        r = F.leaky_relu(self.norm1(x, s, span_in), self.slope)
        if self.pool is not None:
            r = self.pool(r) * span_out.mask  # the pool's bias lands on pad frames too
        r = F.leaky_relu(self.norm2(self.conv1(r), s, span_out), self.slope)
        r = self.conv2(r)
        sc = upsample2x(x) if self.upsample else x
        if self.conv1x1 is not None:
            sc = self.conv1x1(sc)
        return (r + sc) * RSQRT2


class SnakeResBlock(nn.Module):
    """forward(x [B, C, N], s, span) -> [B, C, N]: three (AdaIN, Snake, conv) ×2 residuals."""

    def __init__(self, blk: nn.Module) -> None:
        super().__init__()
        self.convs1, self.convs2 = blk.convs1, blk.convs2
        self.adain1 = nn.ModuleList(MaskedAdaIN1d(n) for n in blk.adain1)
        self.adain2 = nn.ModuleList(MaskedAdaIN1d(n) for n in blk.adain2)
        self.alpha1, self.alpha2 = blk.alpha1, blk.alpha2

    @staticmethod
    def snake(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        s = torch.sin(alpha * x)
        return x + (1 / alpha) * (s * s)  # x * x, not pow: docs/speed.md

    def forward(self, x: torch.Tensor, s: torch.Tensor, span: Span) -> torch.Tensor:
        for c1, c2, n1, n2, a1, a2 in zip(
            self.convs1,
            self.convs2,
            self.adain1,
            self.adain2,
            self.alpha1,
            self.alpha2,
            strict=True,
        ):
            xt = c1(self.snake(n1(x, s, span), a1))
            xt = c2(self.snake(n2(xt, s, span), a2))
            x = xt + x
        return x
