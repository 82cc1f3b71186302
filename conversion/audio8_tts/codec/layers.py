"""The codec's building blocks in plain torch under the publisher's parameter names: weight-norm
conv parameters, causal convs and transposed convs, Snake, residual units, the windowed causal
transformer (bf16-rounded RoPE, band mask) and the ConvNeXt block; model.py and quantizer.py
assemble them (the architecture and its facts: model.py's docstring)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.export.rewrites import zero_pad

from .config import CodecConfig

# -- building blocks ---------------------------------------------------------------------------


class _WeightNormParam(nn.Module):
    """Holds g (`original0`) and v (`original1`) under the parametrization's key names."""

    def __init__(self, g_shape: tuple[int, ...], v_shape: tuple[int, ...]) -> None:
        super().__init__()
        self.original0 = nn.Parameter(torch.ones(g_shape))
        self.original1 = nn.Parameter(torch.zeros(v_shape))


class _Parametrizations(nn.Module):
    def __init__(self, g_shape, v_shape) -> None:
        super().__init__()
        self.weight = _WeightNormParam(g_shape, v_shape)


def _norm_except_dim0(v: torch.Tensor) -> torch.Tensor:
    return v.pow(2).sum(dim=tuple(range(1, v.dim())), keepdim=True).sqrt()


class ConvParams(nn.Module):
    """A conv's weight and bias under the publisher's names: plain (`weight`), weight norm
    through parametrizations (`parametrizations.weight.original0/1`) or legacy weight norm
    (`weight_g`, `weight_v`). `effective_weight()` is the weight the conv uses; `fold()`
    freezes it into a non-persistent buffer (export: no norm arithmetic in the graph)."""

    def __init__(self, shape: tuple[int, ...], norm: str, bias_dim: int | None = None) -> None:
        super().__init__()
        self.norm = norm
        g_shape = (shape[0],) + (1,) * (len(shape) - 1)
        if norm == "none":
            self.weight = nn.Parameter(torch.zeros(shape))
        elif norm == "param":
            self.parametrizations = _Parametrizations(g_shape, shape)
        elif norm == "legacy":
            self.weight_g = nn.Parameter(torch.ones(g_shape))
            self.weight_v = nn.Parameter(torch.zeros(shape))
        else:
            raise ValueError(norm)
        self.bias = nn.Parameter(torch.zeros(shape[0] if bias_dim is None else bias_dim))
        self.register_buffer("_folded", None, persistent=False)
        self.folded = False

    def effective_weight(self) -> torch.Tensor:
        if self._folded is not None:
            return self._folded
        if self.norm == "none":
            return self.weight
        if self.norm == "param":
            g, v = self.parametrizations.weight.original0, self.parametrizations.weight.original1
        else:
            g, v = self.weight_g, self.weight_v
        return g * (v / _norm_except_dim0(v))

    def fold(self) -> None:
        """Freeze the effective weight and drop g/v (export copies only: the state dict no
        longer has the publisher's keys afterwards)."""
        w = self.effective_weight().detach().clone()
        for name in ("parametrizations", "weight_g", "weight_v", "weight"):
            if hasattr(self, name):
                delattr(self, name)
        self.register_buffer("_folded", w, persistent=False)
        self.folded = True


class CausalConv1d(nn.Module):
    """Left padding (k-1)*d + 1 - s, plus the right padding that completes the last stride."""

    def __init__(self, cin, cout, kernel, dilation=1, stride=1, groups=1, norm="param"):
        super().__init__()
        self.conv = ConvParams((cout, cin // groups, kernel), norm)
        self.stride, self.dilation, self.groups = stride, dilation, groups
        self.span = (kernel - 1) * dilation + 1
        self.padding = self.span - stride

    def extra_right(self, length: int) -> int:
        frames = (length - self.span + self.padding) / self.stride + 1
        return (math.ceil(frames) - 1) * self.stride + self.span - self.padding - length

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = zero_pad(x, self.padding, self.extra_right(x.shape[-1]))
        return F.conv1d(
            x,
            self.conv.effective_weight(),
            self.conv.bias,
            self.stride,
            0,
            self.dilation,
            self.groups,
        )


class CausalConvTranspose1d(nn.Module):
    """ConvTranspose1d (k = m*s) cropped by k - s on the right: output length L*s.

    `polyphase = True` (export) computes the same thing as one conv1d with m taps over the
    input left-padded by m-1 frames, producing s*C_out channels that are interleaved in time:
    y[n*s + r] = b + sum_j W[:, :, r + j*s]^T x[n - j]. No transposed conv, no zero insertion.
    """

    def __init__(self, cin, cout, kernel, stride, norm="param"):
        super().__init__()
        if kernel % stride:
            raise ValueError("kernel must be a multiple of stride")
        # ConvTranspose1d weight: [C_in, C_out, K]; weight norm dim 0 = C_in.
        self.conv = ConvParams((cin, cout, kernel), norm, bias_dim=cout)
        self.register_buffer("_poly", None, persistent=False)
        self.cin, self.cout, self.kernel, self.stride = cin, cout, kernel, stride
        self.polyphase = False

    def polyphase_weight(self) -> torch.Tensor:
        w = self.conv.effective_weight()  # [C_in, C_out, m*s]
        m, s = self.kernel // self.stride, self.stride
        # K[o*s + r, i, t] = W[i, o, r + (m-1-t)*s]
        w = w.reshape(self.cin, self.cout, m, s).flip(2)  # [i, o, t, r]
        return w.permute(1, 3, 0, 2).reshape(self.cout * s, self.cin, m)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.stride
        if not self.polyphase:
            y = F.conv_transpose1d(x, self.conv.effective_weight(), self.conv.bias, stride=s)
            crop = self.kernel - s
            return y[..., : y.shape[-1] - crop] if crop else y
        b, _, length = x.shape
        m = self.kernel // s
        y = F.conv1d(zero_pad(x, m - 1), self._poly_weight())  # [B, C_out*s, L]
        y = y.reshape(b, self.cout, s, length).transpose(2, 3).reshape(b, self.cout, length * s)
        return y + self.conv.bias.reshape(1, -1, 1)

    def _poly_weight(self) -> torch.Tensor:
        return self._poly if self._poly is not None else self.polyphase_weight()

    def to_polyphase(self) -> None:
        """Export form: polyphase conv with the weight computed once."""
        self.polyphase = True
        self.register_buffer("_poly", self.polyphase_weight().detach().clone(), persistent=False)
        self.conv.fold()
        self.conv._folded = None  # the polyphase weight is the only copy the graph needs


class Snake1d(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, channels, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sin(self.alpha * x)
        return x + (self.alpha + 1e-9).reciprocal() * (s * s)  # x * x, not pow: docs/speed.md


class ResidualUnit(nn.Module):
    def __init__(self, dim: int, dilation: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            Snake1d(dim),
            CausalConv1d(dim, dim, 7, dilation=dilation),
            Snake1d(dim),
            CausalConv1d(dim, dim, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x)  # lengths match: every conv here has stride 1


# -- transformer -------------------------------------------------------------------------------


def rope_table(length: int, head_dim: int, base: float) -> torch.Tensor:
    """[L, head_dim/2, 2] (cos, sin), rounded to bfloat16 like the publisher's, kept fp32."""
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    phases = torch.outer(torch.arange(length).float(), freqs)
    table = torch.stack((torch.cos(phases), torch.sin(phases)), dim=-1)
    return table.to(torch.bfloat16).float()


def band_mask(length: int, window: int | None) -> torch.Tensor:
    """bool [1,1,L,L]: key j visible from query i iff i - window < j <= i."""
    row = torch.arange(length)[:, None]
    col = torch.arange(length)[None, :]
    mask = col <= row
    if window is not None:
        mask &= col >= (row - window + 1).clamp_min(0)
    return mask[None, None]


def apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """x [B, L, H, D] with interleaved pairs; table [L, D/2, 2]."""
    b, length, h, d = x.shape
    pairs = x.reshape(b, length, h, d // 2, 2)
    t = table.reshape(1, length, 1, d // 2, 2)
    x0, x1 = pairs[..., 0], pairs[..., 1]
    c, s = t[..., 0], t[..., 1]
    return torch.stack((x0 * c - x1 * s, x1 * c + x0 * s), dim=-1).reshape(b, length, h, d)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x * x, not pow: docs/speed.md
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class LayerScale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), 1e-2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class Attention(nn.Module):
    def __init__(self, dim: int, head_dim: int) -> None:
        super().__init__()
        self.n_head, self.head_dim = dim // head_dim, head_dim
        self.wqkv = nn.Linear(dim, 3 * self.n_head * head_dim, bias=False)
        self.wo = nn.Linear(self.n_head * head_dim, dim, bias=False)

    def forward(self, x, rope, mask):
        b, length, _ = x.shape
        q, k, v = self.wqkv(x).reshape(b, length, 3, self.n_head, self.head_dim).unbind(2)
        q = apply_rope(q, rope).transpose(1, 2)
        k = apply_rope(k, rope).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), attn_mask=mask)
        return self.wo(out.transpose(1, 2).reshape(b, length, self.n_head * self.head_dim))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, cfg: CodecConfig) -> None:
        super().__init__()
        self.attention = Attention(dim, cfg.head_dim)
        self.feed_forward = FeedForward(dim, cfg.ffn_mult * dim)
        self.ffn_norm = RMSNorm(dim, cfg.norm_eps)
        self.attention_norm = RMSNorm(dim, cfg.norm_eps)
        self.attention_layer_scale = LayerScale(dim)
        self.ffn_layer_scale = LayerScale(dim)

    def forward(self, x, rope, mask):
        h = x + self.attention_layer_scale(self.attention(self.attention_norm(x), rope, mask))
        return h + self.ffn_layer_scale(self.feed_forward(self.ffn_norm(h)))


class WindowTransformer(nn.Module):
    """Channels-first in and out; causal band attention; RoPE restarting at 0 each call.

    `set_static_length(L)` stores the mask and RoPE table for length L as non-persistent
    buffers (export: constants instead of arange/cos/sin arithmetic in the graph)."""

    def __init__(self, dim: int, n_layer: int, window: int | None, cfg: CodecConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(TransformerBlock(dim, cfg) for _ in range(n_layer))
        self.norm = RMSNorm(dim, cfg.norm_eps)
        self.window, self.head_dim, self.rope_base = window, cfg.head_dim, cfg.rope_base
        self._static_len: int | None = None
        self.register_buffer("_mask", None, persistent=False)
        self.register_buffer("_rope", None, persistent=False)

    def set_static_length(self, length: int) -> None:
        self._static_len = length
        self.register_buffer("_mask", band_mask(length, self.window), persistent=False)
        self.register_buffer(
            "_rope", rope_table(length, self.head_dim, self.rope_base), persistent=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.transpose(1, 2)
        length = x.shape[1]
        if self._static_len == length:
            mask, rope = self._mask, self._rope
        else:
            mask, rope = (
                band_mask(length, self.window),
                rope_table(length, self.head_dim, self.rope_base),
            )
        for layer in self.layers:
            x = layer(x, rope, mask)
        return self.norm(x).transpose(1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = CausalConv1d(dim, dim, 7, groups=dim, norm="none")
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x):
        y = self.dwconv(x).transpose(1, 2)
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).transpose(1, 2)
