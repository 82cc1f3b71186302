"""Convolution pieces of the re-authored Kokoro graphs: weight-norm folding, device-safe
transposed convolutions and the ×2 nearest upsample.

Kokoro wraps most convolutions in the old hook-based `torch.nn.utils.weight_norm`, whose
`.weight` attribute is only refreshed when a forward runs: code that reads `.weight` before
folding reads a stale (random-init) tensor. Everything here folds first, on a copy.
"""

from __future__ import annotations

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.weight_norm import WeightNorm

from conversion.core.export.rewrites import zero_pad


def folded_copy(module: nn.Module) -> nn.Module:
    """A deep copy of `module` in eval mode with every weight norm folded into `.weight`.

    The caller's module is left untouched (it keeps its hooks and its `weight_g`/`weight_v`).
    """
    # The hook-based weight norm keeps `.weight` as a non-leaf tensor computed at wrap time,
    # which deepcopy refuses; it is recomputed from weight_g / weight_v on folding anyway, so
    # the copy gets a detached placeholder for it.
    memo: dict[int, torch.Tensor] = {}
    for sub in module.modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm):
                stale = getattr(sub, hook.name)
                memo[id(stale)] = stale.detach().clone()
    m = copy.deepcopy(module, memo).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for sub in m.modules():
            try:
                torch.nn.utils.remove_weight_norm(sub)
            except ValueError:  # no weight norm on this module
                pass
    for p in m.parameters():
        p.requires_grad_(False)
    return m


class ZeroInsertConvTranspose1d(nn.Module):
    """`nn.ConvTranspose1d` (any padding / output_padding / groups) as zero insertion + conv1d.

    Insert stride-1 zeros between input samples, add K-1-p zeros on the left and
    K-1-p+output_padding on the right, and correlate with the flipped kernel. Exact in exact
    arithmetic; the Kokoro port found strided conv_transpose returning zeros on a device and
    output_padding giving a symbolic length, while this form is plain conv1d and static.
    Margins are `zero_pad`'s concatenated zeros: pad ops are slow on the Linux runtime.
    """

    def __init__(self, ct: nn.ConvTranspose1d) -> None:
        super().__init__()
        if ct.dilation[0] != 1:
            raise ValueError("dilated transposed convolutions are not supported")
        if ct.padding_mode != "zeros":
            raise ValueError(f"padding_mode {ct.padding_mode!r} is not supported")
        (k,), (s,), (p,), (op,) = ct.kernel_size, ct.stride, ct.padding, ct.output_padding
        g = ct.groups
        w = ct.weight.detach()  # [C_in, C_out/g, K]
        c_in, c_out_g, _ = w.shape
        # Regroup to a conv weight [C_out, C_in/g, K] and flip the taps (conv1d correlates).
        w = w.reshape(g, c_in // g, c_out_g, k).transpose(1, 2).reshape(g * c_out_g, c_in // g, k)
        self.weight = nn.Parameter(w.flip(-1).contiguous(), requires_grad=False)
        b = ct.bias.detach().clone() if ct.bias is not None else None
        self.bias = nn.Parameter(b, requires_grad=False) if b is not None else None
        self.stride, self.groups = s, g
        self.left = k - 1 - p
        # The s-1 zeros inserted after the last sample already count towards the right margin.
        self.right = k - 1 - p + op - (s - 1)
        if self.left < 0:
            raise ValueError(f"padding {p} >= kernel size {k} is not supported")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, t = x.shape
        z = x
        if self.stride > 1:
            gap = x.new_zeros(b, c, t, self.stride - 1)
            z = torch.cat([x.unsqueeze(-1), gap], dim=-1).reshape(b, c, t * self.stride)
        right = self.right
        if right < 0:
            z = z[..., : z.shape[-1] + right]
            right = 0
        return F.conv1d(zero_pad(z, self.left, right), self.weight, self.bias, groups=self.groups)


def upsample2x(x: torch.Tensor) -> torch.Tensor:
    """Nearest ×2 along time, [B, C, N] -> [B, C, 2N], as expand + reshape.

    Same values as `F.interpolate(scale_factor=2, mode="nearest")`, without relying on the
    engine's nearest-index rounding.
    """
    b, c, n = x.shape
    return x.unsqueeze(-1).expand(b, c, n, 2).reshape(b, c, 2 * n)


def reflect_left1(x: torch.Tensor) -> torch.Tensor:
    """`nn.ReflectionPad1d((1, 0))`: prepend x[..., 1] (a concat, not a pad op)."""
    return torch.cat([x[..., 1:2], x], dim=-1)
