"""Audio8-TTS's 44.1 kHz codec, re-authored in plain torch (fp32 reference) with the
publisher's `codec.pth` parameter names.

Facts taken from the publisher's `modeling_arktts_codec.py` / `modeling_arktts.py`
(`Audio8-AI/Audio8_TTS`, `model/audio8_tts_0_6B_preview/`); the code below is our own.

    encode  audio [B,1,N] (N padded right to a multiple of 2,048)
            encoder: causal WN conv 1->64 k7; 4 blocks (channels 128/256/512/1024, strides
                2/4/8/8: 3 residual units (dilation 1/3/9) on C/2, Snake, causal WN conv
                C/2->C k=2s stride s; the last block ends in a 4-layer window-512
                transformer); Snake, causal WN conv 1024->1024 k3            [B,1024,N/512]
            quantizer.downsample: 2 x (causal conv k2 s2, ConvNeXt)          [B,1024,N/2048]
            quantizer.pre_module: 8-layer window-128 causal transformer
            semantic RVQ (1 book 4,096 x 8), residual RVQ on z - semantic (9 books 1,024 x 8):
                nearest code by cosine (both sides L2-normalised), in/out 1x1 WN projections
    decode  codes [B,10,T] -> clamp (book 0 to 0..4095, books 1..9 to 0..1023)
            sum of out_proj(codebook[code]) over the ten books                [B,1024,T]
            quantizer.post_module: 8-layer window-128 causal transformer
            quantizer.upsample: 2 x (causal transposed conv k2 s2, ConvNeXt)  [B,1024,4T]
            decoder: causal WN conv 1024->1536 k7; 4 blocks (strides 8/8/4/2, channels
                768/384/192/96: Snake, causal WN transposed conv k=2s (crop k-s on the right),
                3 residual units); Snake, causal WN conv 96->1 k7, tanh       [B,1,2048T]

Every layer is causal: convs pad k-s on the left only, transposed convs crop on the right,
attention is causal within a window. A stream can therefore be decoded in windows; only the
transformers' reach (window 128 x 8 layers) makes a window's output depend on more than a few
frames of left context.

Transformers: RMSNorm (eps 1e-5), wqkv without bias (n_local_heads = n_head = dim/64,
head_dim 64), interleaved-pair RoPE (base 1e4) whose cos/sin tables are rounded to bfloat16
and restart at position 0 on every call, SDPA with a causal band mask, LayerScale (gamma) on
both branches, SwiGLU feed-forward (3 x dim). The final RMSNorm is applied; input/output
projections are identities (input dim == model dim).

Weight norm: the convolutions use `torch.nn.utils.parametrizations.weight_norm` (keys
`conv.parametrizations.weight.original0` = g, `original1` = v; dim 0, which is the
*input* channel of a ConvTranspose1d); the VQ projections use the legacy `weight_norm`
(`weight_g`, `weight_v`). The quantizer's down/upsampling convs carry no weight norm.

Size at the published config (this module's key set): 391,430,530 parameters in 535 tensors
(encoder 76.9M, quantizer 260.4M of which pre/post transformers 109.1M each, decoder 54.1M);
everything but the decoder is 337.3M. Neither count is checked against the real codec.pth,
which is not reachable here.

Checkpoint (`ArkttsModel.load_codec`): `torch.load(codec.pth)`; if it has a `state_dict`
key, that; if any key contains `generator.`, only those keys with `generator.` removed; keys
ending in `freqs_cis` / `causal_mask` dropped; `load_state_dict(strict=True)`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from conversion.core.errors import WeightsError
from conversion.core.export.rewrites import zero_pad

CODEC_FILENAME = "codec.pth"


@dataclass(frozen=True)
class CodecConfig:
    name: str = "published"
    sample_rate: int = 44_100
    encoder_dim: int = 64  # first conv's width; doubled by each encoder block
    encoder_strides: tuple[int, ...] = (2, 4, 8, 8)
    encoder_transformer_layers: tuple[int, ...] = (0, 0, 0, 4)
    encoder_window: int = 512
    latent_dim: int = 1_024
    quant_strides: tuple[int, ...] = (2, 2)  # downsample / upsample factors (k = s = 2)
    quant_layers: int = 8  # pre_module and post_module depth
    window: int = 128  # pre/post transformers' attention window (frames)
    head_dim: int = 64  # every codec transformer: n_head = dim // head_dim
    ffn_mult: int = 3  # intermediate = ffn_mult * dim
    rope_base: float = 10_000.0
    norm_eps: float = 1e-5
    semantic_books: int = 1
    semantic_size: int = 4_096
    residual_books: int = 9
    residual_size: int = 1_024
    codebook_dim: int = 8
    decoder_channels: int = 1_536
    decoder_strides: tuple[int, ...] = (8, 8, 4, 2)
    # graph buckets (frames): the codec window and the encoder's 10 s bucket
    graph_frames: int = 160
    encoder_frames: int = 216

    @property
    def num_books(self) -> int:
        return self.semantic_books + self.residual_books

    @property
    def hop_length(self) -> int:
        return math.prod(self.encoder_strides)

    @property
    def frame_size(self) -> int:
        return self.hop_length * math.prod(self.quant_strides)

    @property
    def decoder_output_dim(self) -> int:
        return self.decoder_channels // (2 ** len(self.decoder_strides))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


PUBLISHED = CodecConfig()
# Same structure (every layer kind, the 10 books of 4,096/1,024 x 8, 2,048 samples a frame,
# the window-128 pre/post transformers, strides), small widths and depths.
REDUCED = CodecConfig(
    name="reduced",
    encoder_dim=8,  # 16/32/64/128
    encoder_transformer_layers=(0, 0, 0, 1),
    latent_dim=128,
    quant_layers=2,
    decoder_channels=64,  # 32/16/8/4
    graph_frames=32,
    encoder_frames=8,
)
CONFIGS = {c.name: c for c in (PUBLISHED, REDUCED)}


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


# -- encoder / quantizer / decoder ---------------------------------------------------------------


class EncoderBlock(nn.Module):
    def __init__(self, dim: int, stride: int, n_layer: int, cfg: CodecConfig) -> None:
        super().__init__()
        half = dim // 2
        mods: list[nn.Module] = [ResidualUnit(half, d) for d in (1, 3, 9)]
        mods += [Snake1d(half), CausalConv1d(half, dim, 2 * stride, stride=stride)]
        mods.append(
            WindowTransformer(dim, n_layer, cfg.encoder_window, cfg) if n_layer else nn.Identity()
        )
        self.block = nn.Sequential(*mods)

    def forward(self, x):
        return self.block(x)


class Encoder(nn.Module):
    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        dim = cfg.encoder_dim
        mods: list[nn.Module] = [CausalConv1d(1, dim, 7)]
        for stride, layers in zip(cfg.encoder_strides, cfg.encoder_transformer_layers, strict=True):
            dim *= 2
            mods.append(EncoderBlock(dim, stride, layers, cfg))
        mods += [Snake1d(dim), CausalConv1d(dim, cfg.latent_dim, 3)]
        self.block = nn.Sequential(*mods)

    def forward(self, x):
        return self.block(x)


class DecoderBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.block = nn.Sequential(
            Snake1d(cin),
            CausalConvTranspose1d(cin, cout, 2 * stride, stride),
            ResidualUnit(cout, 1),
            ResidualUnit(cout, 3),
            ResidualUnit(cout, 9),
        )

    def forward(self, x):
        return self.block(x)


class Decoder(nn.Module):
    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        ch = cfg.decoder_channels
        mods: list[nn.Module] = [CausalConv1d(cfg.latent_dim, ch, 7)]
        for i, stride in enumerate(cfg.decoder_strides):
            mods.append(DecoderBlock(ch // 2**i, ch // 2 ** (i + 1), stride))
        out = cfg.decoder_output_dim
        mods += [Snake1d(out), CausalConv1d(out, 1, 7), nn.Tanh()]
        self.model = nn.Sequential(*mods)

    def forward(self, x):
        return self.model(x)


class VectorQuantizer(nn.Module):
    def __init__(self, dim: int, size: int, code_dim: int) -> None:
        super().__init__()
        self.size = size
        self.in_proj = ConvParams((code_dim, dim, 1), "legacy")
        self.out_proj = ConvParams((dim, code_dim, 1), "legacy")
        self.codebook = nn.Embedding(size, code_dim)

    def project_out(self, vectors: torch.Tensor) -> torch.Tensor:
        """[B, code_dim, T] -> [B, dim, T] (the 1x1 out_proj)."""
        return F.conv1d(vectors, self.out_proj.effective_weight(), self.out_proj.bias)

    def decode_code(self, idx: torch.Tensor) -> torch.Tensor:
        return self.project_out(self.codebook(idx).transpose(1, 2))

    def nearest(self, projected: torch.Tensor) -> torch.Tensor:
        """[B, code_dim, T] -> indices [B, T]: the publisher's distance form on unit vectors."""
        b, _, length = projected.shape
        # F.normalize written out (x / max(||x||, 1e-12)): the converter may drop its eps clamp.
        flat = projected.transpose(1, 2).reshape(b * length, -1)
        flat = flat / torch.linalg.vector_norm(flat, dim=1, keepdim=True).clamp_min(1e-12)
        book = self.codebook.weight
        book = book / torch.linalg.vector_norm(book, dim=1, keepdim=True).clamp_min(1e-12)
        dist = (
            flat.pow(2).sum(1, keepdim=True)
            - 2 * flat @ book.t()
            + book.pow(2).sum(1, keepdim=True).t()
        )
        return (-dist).argmax(1).reshape(b, length)

    def forward(self, z: torch.Tensor):
        projected = F.conv1d(z, self.in_proj.effective_weight(), self.in_proj.bias)
        idx = self.nearest(projected)
        quantized = self.codebook(idx).transpose(1, 2)
        quantized = projected + (quantized - projected)  # the straight-through form's values
        return self.project_out(quantized), idx


class ResidualQuantizer(nn.Module):
    def __init__(self, dim: int, books: int, size: int, code_dim: int) -> None:
        super().__init__()
        self.size = size
        self.quantizers = nn.ModuleList(VectorQuantizer(dim, size, code_dim) for _ in range(books))

    def forward(self, z):
        total, residual, codes = 0.0, z, []
        for q in self.quantizers:
            quantized, idx = q(residual)
            total = total + quantized
            residual = residual - quantized
            codes.append(idx)
        return total, torch.stack(codes, dim=1)

    def from_codes(self, codes: torch.Tensor) -> torch.Tensor:
        out = 0.0
        for i, q in enumerate(self.quantizers):
            out = out + q.decode_code(codes[:, i])
        return out


class DownsampleQuantizer(nn.Module):
    def __init__(self, cfg: CodecConfig) -> None:
        super().__init__()
        d = cfg.latent_dim
        self.semantic_quantizer = ResidualQuantizer(
            d, cfg.semantic_books, cfg.semantic_size, cfg.codebook_dim
        )
        self.quantizer = ResidualQuantizer(
            d, cfg.residual_books, cfg.residual_size, cfg.codebook_dim
        )
        self.downsample = nn.Sequential(
            *(
                nn.Sequential(CausalConv1d(d, d, s, stride=s, norm="none"), ConvNeXtBlock(d))
                for s in cfg.quant_strides
            )
        )
        self.upsample = nn.Sequential(
            *(
                nn.Sequential(CausalConvTranspose1d(d, d, s, s, norm="none"), ConvNeXtBlock(d))
                for s in cfg.quant_strides
            )
        )
        self.pre_module = WindowTransformer(d, cfg.quant_layers, cfg.window, cfg)
        self.post_module = WindowTransformer(d, cfg.quant_layers, cfg.window, cfg)
        self.semantic_books = cfg.semantic_books

    def encode(self, z: torch.Tensor) -> torch.Tensor:
        z = self.pre_module(self.downsample(z))
        semantic, semantic_codes = self.semantic_quantizer(z)
        _, residual_codes = self.quantizer(z - semantic)
        return torch.cat((semantic_codes, residual_codes), dim=1)

    def clamp(self, codes: torch.Tensor) -> torch.Tensor:
        n = self.semantic_books
        return torch.cat(
            (
                codes[:, :n].clamp(0, self.semantic_quantizer.size - 1),
                codes[:, n:].clamp(0, self.quantizer.size - 1),
            ),
            dim=1,
        )

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        codes = self.clamp(codes)
        n = self.semantic_books
        z = self.semantic_quantizer.from_codes(codes[:, :n]) + self.quantizer.from_codes(
            codes[:, n:]
        )
        return self.upsample(self.post_module(z))


class Codec(nn.Module):
    """encode(audio [B,1,N]) -> codes [B,10,ceil(N/2048)]; decode(codes) -> wav [B,1,2048T]."""

    def __init__(self, cfg: CodecConfig = PUBLISHED) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.quantizer = DownsampleQuantizer(cfg)
        self.decoder = Decoder(cfg)

    def encode(self, audio: torch.Tensor) -> torch.Tensor:
        if audio.dim() == 2:
            audio = audio[:, None]
        right = -audio.shape[-1] % self.cfg.frame_size
        audio = zero_pad(audio, 0, right)
        return self.quantizer.encode(self.encoder(audio))

    def decode(self, codes: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.quantizer.decode(codes.long()))


# -- state dicts ---------------------------------------------------------------------------------


def codec_state_shapes(cfg: CodecConfig) -> dict[str, tuple[int, ...]]:
    """Every key of the publisher's codec state dict at `cfg`, with its shape."""
    with torch.device("meta"):
        model = Codec(cfg)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def parameter_count(cfg: CodecConfig) -> int:
    return sum(math.prod(s) for s in codec_state_shapes(cfg).values())


def _gain(key: str, cfg: CodecConfig) -> float:
    """Extra scale that keeps random activations O(1): residual branches add 0.3 x, and the
    last conv lands tanh's input at std ~0.5 (not saturated, so parity checks see signal)."""
    if re.search(r"block\.3\.conv\.parametrizations", key):
        return 0.3
    if key.startswith(f"decoder.model.{len(cfg.decoder_strides) + 2}."):
        return 0.3
    return 1.0


_WEIGHT_V = ("parametrizations.weight.original1", "weight_v")
_WEIGHT_G = ("original0", "weight_g")


def _random_weight_norm(
    key: str, shape: tuple[int, ...], cfg: CodecConfig, gen: torch.Generator
) -> dict[str, torch.Tensor]:
    """A weight-norm pair: v (`key`) and its g, the effective weight at 1/sqrt(fan-in) scale."""
    transposed = re.match(r"decoder\.model\.\d+\.block\.1\.conv\.", key) is not None
    if transposed:  # [C_in, C_out, K]: each output sees C_in * (K/s) = 2 C_in taps
        fan_in = shape[0] * 2
    else:
        fan_in = shape[1] * shape[2]
    w = torch.randn(shape, generator=gen) / math.sqrt(fan_in) * _gain(key, cfg)
    g = _norm_except_dim0(w)
    v = w * (0.5 + torch.rand((shape[0], *([1] * (len(shape) - 1))), generator=gen))
    g_key = (
        key[: -len("original1")] + "original0"
        if key.endswith("original1")
        else (key[: -len("weight_v")] + "weight_g")
    )
    return {key: v, g_key: g}


def _random_tensor(key: str, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    """Any other parameter, by what its key names."""

    def randn() -> torch.Tensor:
        return torch.randn(shape, generator=gen)

    def rand() -> torch.Tensor:
        return torch.rand(shape, generator=gen)

    if key.endswith("alpha"):
        return 0.5 + rand()
    if key.endswith("gamma"):
        return 0.1 + 0.2 * rand()
    if key.endswith("codebook.weight"):
        return randn()
    if key.endswith("norm.weight"):
        return 1.0 + 0.1 * randn()
    if key.endswith("bias"):
        return 0.05 * randn()
    if key.startswith("quantizer.upsample.") and key.endswith(".0.conv.weight"):
        return randn() / math.sqrt(shape[0])  # transposed: fan-in C_in
    if len(shape) >= 2:  # linears, plain convs
        return randn() / math.sqrt(math.prod(shape[1:]))
    return 0.1 * randn()


def random_codec_state(
    cfg: CodecConfig, seed: int = 0, only: tuple[str, ...] | None = None
) -> dict[str, torch.Tensor]:
    """Seeded weights that keep activations O(1) through every layer and give every parameter
    signal: weight-norm g/v chosen so the effective weight has 1/sqrt(fan-in) scale (v a
    randomly rescaled copy, so the normalisation is exercised), LayerScale / ConvNeXt gammas
    ~0.1-0.3 (the publisher's inits 1e-2 / 1e-6 would hide the transformers), biases and
    Snake alphas perturbed. `only`: just the keys under those key prefixes."""
    gen = torch.Generator().manual_seed(seed)
    shapes = codec_state_shapes(cfg)
    if only is not None:  # a subset by key prefix (e.g. the decode path of the published size)
        shapes = {k: v for k, v in shapes.items() if k.startswith(only)}
    state: dict[str, torch.Tensor] = {}
    for key, shape in shapes.items():
        if key in state or key.endswith(_WEIGHT_G):  # g is written with its v
            continue
        if key.endswith(_WEIGHT_V):
            state.update(_random_weight_norm(key, shape, cfg, gen))
        else:
            state[key] = _random_tensor(key, shape, gen)
    return {k: state[k] for k in shapes}


def write_random_codec(
    path: Path | str, cfg: CodecConfig = REDUCED, seed: int = 0, nested: bool = False
) -> Path:
    """`codec.pth` with seeded random weights; `nested` writes the training layout
    ({"state_dict": {"generator.<key>": ..., "discriminator.<key>": ...}})."""
    state = random_codec_state(cfg, seed)
    if nested:
        state = {
            "state_dict": {f"generator.{k}": v for k, v in state.items()}
            | {"discriminator.dummy.weight": torch.zeros(2)}
        }
    path = Path(path)
    if path.is_dir():
        path = path / CODEC_FILENAME
    torch.save(state, path)
    return path


def publisher_state(raw: Mapping) -> dict[str, torch.Tensor]:
    """The publisher's unwrapping: `state_dict`, `generator.` nesting, rope/mask buffers."""
    state = dict(raw)
    if "state_dict" in state:
        state = dict(state["state_dict"])
    if any("generator." in k for k in state):
        state = {k.replace("generator.", ""): v for k, v in state.items() if "generator." in k}
    return {k: v for k, v in state.items() if not k.endswith(("freqs_cis", "causal_mask"))}


def load_codec(path: Path | str, cfg: CodecConfig = PUBLISHED) -> Codec:
    """A `Codec` from a `codec.pth` (or a folder holding one); WeightsError names the file and
    the first missing / unexpected / mis-shaped key."""
    path = Path(path)
    if path.is_dir():
        path = path / CODEC_FILENAME
    if not path.is_file():
        raise WeightsError(f"codec weights not found: {path} (expected the snapshot's codec.pth)")
    try:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise WeightsError(f"{path}: not a readable torch checkpoint ({e})") from e
    if not isinstance(raw, Mapping):
        raise WeightsError(f"{path}: expected a state dict, found {type(raw).__name__}")
    state = publisher_state(raw)
    shapes = codec_state_shapes(cfg)
    missing = [k for k in shapes if k not in state]
    if missing:
        raise WeightsError(
            f"{path}: {len(missing)} codec key(s) missing at config '{cfg.name}', first: "
            f"'{missing[0]}'"
        )
    extra = [k for k in state if k not in shapes]
    if extra:
        raise WeightsError(
            f"{path}: {len(extra)} unexpected key(s) for config '{cfg.name}', first: '{extra[0]}'"
        )
    for k, shape in shapes.items():
        if tuple(state[k].shape) != shape:
            raise WeightsError(
                f"{path}: key '{k}' has shape {list(state[k].shape)}, config '{cfg.name}' "
                f"wants {list(shape)}"
            )
    model = Codec(cfg)
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model.eval().requires_grad_(False)
