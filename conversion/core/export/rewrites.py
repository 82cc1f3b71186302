"""Graph rewrites that make the Linux Core AI runtime faster and leave the values alone.

- Zero padding as a concat of zeros. Core AI's `conv2d` takes no padding: the converter lowers
  a padded convolution (and `F.pad`) to a separate `pad` op, and the Linux runtime's `pad` is
  slow — measured ~5x a concat of zeros on the same tensor, and ~34 % of Kokoro's vocoder time
  before this rewrite.
- `nn.Linear` with its weight stored transposed ([in, out]) and applied as a matmul. A Linear
  converts to `transpose(weight)` + matmul, and the Linux runtime does not fold the constant
  transpose: it transposes the weight on every call (79 % of T3's decode step). fp32 only:
  with int8 weights the pre-transposed form ran slower here.

Each rewrite's before / after, and why it should not cost a device: docs/speed.md.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def replace_modules(module: nn.Module, rule: Callable[[nn.Module], nn.Module | None]) -> nn.Module:
    """`module` with every submodule for which `rule` gives a replacement replaced by it (in
    place; a replaced submodule's own children are not visited), the rest searched through."""
    for name, child in list(module.named_children()):
        new = rule(child)
        if new is not None:
            setattr(module, name, new)
        else:
            replace_modules(child, rule)
    return module


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
    """A zero-padded `nn.Conv1d` as `zero_pad` + an unpadded conv (the same weights): its own
    padding on both sides, or `left` / `right` for a conv padded in its caller (a causal one)."""

    def __init__(self, conv: nn.Conv1d, left: int | None = None, right: int | None = None) -> None:
        super().__init__()
        if isinstance(conv.padding, str) or (left is not None and conv.padding[0]):
            raise ValueError(f"a conv with padding={conv.padding!r} is not rewritten")
        (pad,) = conv.padding
        self.left = pad if left is None else left
        self.right = pad if right is None else right
        self.weight, self.bias = conv.weight, conv.bias
        (self.stride,), (self.dilation,), self.groups = conv.stride, conv.dilation, conv.groups

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = zero_pad(x, self.left, self.right)
        return F.conv1d(z, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


def concat_padded_convs(module: nn.Module) -> nn.Module:
    """`module`, with every zero-padded `nn.Conv1d` inside it made a `ConcatPadConv1d` (in
    place; `padding="same"` and other padding modes are left as they are)."""
    return replace_modules(module, concat_padded_conv)


def concat_padded_conv(child: nn.Module) -> ConcatPadConv1d | None:
    """`child` as a `ConcatPadConv1d` when it is a plain zero-padded `nn.Conv1d`, else None."""
    if (
        type(child) is nn.Conv1d
        and child.padding_mode == "zeros"
        and isinstance(child.padding, tuple)
        and child.padding[0] > 0
    ):
        return ConcatPadConv1d(child)
    return None


class PretransposedLinear(nn.Module):
    """`nn.Linear` as `x @ weight_t + bias`, the weight stored [in, out] (the same values)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        w = linear.weight.detach().t().contiguous()
        self.weight_t = nn.Parameter(w, requires_grad=False)
        b = linear.bias
        self.bias = nn.Parameter(b.detach().clone(), requires_grad=False) if b is not None else None

    @property
    def weight(self) -> torch.Tensor:
        """[out, in], for code that reads a Linear's weight (it costs a transpose there)."""
        return self.weight_t.t()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.weight_t)
        return y + self.bias if self.bias is not None else y


def pretransposed_linears(module: nn.Module) -> nn.Module:
    """`module` with every plain `nn.Linear` inside it (in place) a `PretransposedLinear`
    (subclasses such as attention's out_proj, whose weight is read directly, are left)."""
    return replace_modules(
        module, lambda child: PretransposedLinear(child) if type(child) is nn.Linear else None
    )
