"""Masks over right-padded buckets, and the norms that must ignore the pad.

A graph runs at a static bucket size; the real length arrives as an int32 input. Each time
resolution of a graph (frames, 2×frames, 20×frames, ...) gets its own `Span`, built from the
real length with integer arithmetic (`arange(N) < real * scale + offset`) rather than by
resizing a mask with nearest interpolation, whose rounding on the engine can shift the edge.

InstanceNorm over a padded tensor would take its mean and variance over the pad too; the
masked form takes them over the real frames only and zeroes the pad frames of its output,
so the convolution that follows sees zeros there, as it would see its own zero padding at the
end of an unpadded tensor.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn


class Span(NamedTuple):
    """The real part of one time resolution: mask [B, 1, N] (1 real, 0 pad) in the graph's
    dtype, count [B, 1, 1] in float32 (up to 245,761 frames: beyond float16's range)."""

    mask: torch.Tensor
    count: torch.Tensor


def length_mask(real: torch.Tensor, size: int, scale: int = 1, offset: int = 0) -> torch.Tensor:
    """Bool [B, size]: position i is real when i < real * scale + offset (integer arithmetic)."""
    n = real.to(torch.int32).reshape(-1, 1) * scale + offset
    return torch.arange(size, dtype=torch.int32).reshape(1, -1) < n


def make_span(
    real: torch.Tensor,
    size: int,
    dtype: torch.dtype,
    scale: int = 1,
    offset: int = 0,
) -> Span:
    """The `Span` of a resolution holding `real * scale + offset` real positions of `size`."""
    n = real.to(torch.int32).reshape(-1, 1, 1) * scale + offset
    mask = length_mask(real, size, scale, offset).unsqueeze(1).to(dtype)
    count = n.clamp(1, size).float()  # clamped: a zero or oversized length must not divide
    return Span(mask, count)


def masked_instance_norm(x: torch.Tensor, span: Span, eps: float) -> torch.Tensor:
    """InstanceNorm1d (no affine, biased variance) over the real frames; pad frames -> 0.

    Statistics are taken in float32 whatever the graph's dtype: a float16 sum over a few
    hundred thousand frames overflows.
    """
    xf, mask = x.float(), span.mask.float()  # no-ops in a float32 graph
    mean = (xf * mask).sum(-1, keepdim=True) / span.count
    centred = (xf - mean) * mask
    var = (centred * centred).sum(-1, keepdim=True) / span.count
    return (centred * torch.rsqrt(var + eps)).to(x.dtype)


class MaskedAdaIN1d(nn.Module):
    """Kokoro's AdaIN1d (InstanceNorm1d with affine, then style scale and shift), frame-masked.

    Built from the publisher's module; the output is zero on pad frames.
    """

    def __init__(self, adain: nn.Module) -> None:
        super().__init__()
        norm: nn.InstanceNorm1d = adain.norm
        if norm.track_running_stats:
            raise ValueError("AdaIN1d with running statistics is not an instance norm")
        self.eps = norm.eps
        self.fc = adain.fc
        c = norm.num_features
        w = norm.weight.detach().clone() if norm.affine else torch.ones(c)
        b = norm.bias.detach().clone() if norm.affine else torch.zeros(c)
        # InstanceNorm's own affine (1 and 0 in the published weights, kept for generality).
        self.register_buffer("norm_weight", w.reshape(1, c, 1))
        self.register_buffer("norm_bias", b.reshape(1, c, 1))

    def forward(self, x: torch.Tensor, s: torch.Tensor, span: Span) -> torch.Tensor:
        h = self.fc(s).unsqueeze(-1)  # [B, 2C, 1]
        gamma, beta = h.chunk(2, dim=1)
        y = masked_instance_norm(x, span, self.eps) * self.norm_weight + self.norm_bias
        return ((1 + gamma) * y + beta) * span.mask


class AdaLayerNorm(nn.Module):
    """StyleTTS2's AdaLayerNorm: LayerNorm over channels of [B, T, C], style scale and shift.

    Per position, so the pad needs no masking here.
    """

    def __init__(self, ada: nn.Module) -> None:
        super().__init__()
        self.channels, self.eps, self.fc = ada.channels, ada.eps, ada.fc

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.fc(s).unsqueeze(1).chunk(2, dim=-1)  # [B, 1, C] each
        return (1 + gamma) * F.layer_norm(x, (self.channels,), eps=self.eps) + beta


class ChannelLayerNorm(nn.Module):
    """StyleTTS2's LayerNorm over the channels of a [B, C, T] tensor (with gamma and beta)."""

    def __init__(self, ln: nn.Module) -> None:
        super().__init__()
        self.channels, self.eps = ln.channels, ln.eps
        self.gamma, self.beta = ln.gamma, ln.beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x.transpose(1, -1), (self.channels,), self.gamma, self.beta, self.eps)
        return y.transpose(1, -1)
