"""Zero padding written as a concat of zeros, for graphs that run on the Linux runtime.

Core AI's `conv2d` takes no padding: the converter lowers a padded convolution (and `F.pad`)
to a separate `pad` op, and the Linux runtime's `pad` is slow — measured ~5x a concat of
zeros on the same tensor, and ~34 % of Kokoro's vocoder time before this rewrite
(docs/speed.md). The values are the same: the concatenated zeros are the padding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def zero_pad(x: torch.Tensor, left: int, right: int = 0) -> torch.Tensor:
    """`F.pad(x, (left, right))` on the last axis of [B, C, N], as a concat of zeros."""
    if not left and not right:
        return x
    b, c, _ = x.shape
    parts = [x.new_zeros(b, c, left)] if left else []
    parts.append(x)
    if right:
        parts.append(x.new_zeros(b, c, right))
    return torch.cat(parts, dim=-1)


class ConcatPadConv1d(nn.Module):
    """A zero-padded `nn.Conv1d` as `zero_pad` + an unpadded conv (the same weights)."""

    def __init__(self, conv: nn.Conv1d) -> None:
        super().__init__()
        (self.pad,) = conv.padding
        self.weight, self.bias = conv.weight, conv.bias
        (self.stride,), (self.dilation,), self.groups = conv.stride, conv.dilation, conv.groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = zero_pad(x, self.pad, self.pad)
        return F.conv1d(z, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


def concat_padded_convs(module: nn.Module) -> nn.Module:
    """`module`, with every zero-padded `nn.Conv1d` inside it made a `ConcatPadConv1d` (in
    place; `padding="same"` and other padding modes are left as they are)."""
    for name, child in list(module.named_children()):
        if (
            type(child) is nn.Conv1d
            and child.padding_mode == "zeros"
            and isinstance(child.padding, tuple)
            and child.padding[0] > 0
        ):
            setattr(module, name, ConcatPadConv1d(child))
        else:
            concat_padded_convs(child)
    return module
