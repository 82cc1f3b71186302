"""Audio8's codec written from the architecture: plain torch functions over the checkpoint's
state dict, the reference the exported `codec` and `encoder` graphs are gated against.

Written from the publisher's `modeling_arktts_codec.py` (`Audio8-AI/Audio8_TTS`,
`model/audio8_tts_0_6B_preview/`), read for facts. It shares nothing with the port's codec
(`codec/model.py` and its `layers.py` / `quantizer.py`, `codec/graphs.py`): no module, no
helper, no weight folding. It reads the weights under the publisher's key names straight from
the file (`read_state`), computes every weight-norm weight where it is used, runs the transposed
convolutions as transposed convolutions (the graph uses a polyphase conv1d), writes attention
out as a masked softmax (the port uses SDPA with a boolean mask) and builds RoPE from angles
each call. So a bug in the port's modules or in its export rewrites moves only the graph side of
a rung.

Only the config's numbers are taken from `CodecConfig` (strides, windows, head size, book
counts); layer counts come from the state dict's keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import torch
import torch.nn.functional as F

from .config import CodecConfig

State = Mapping[str, torch.Tensor]
DILATIONS = (1, 3, 9)  # every residual unit stack: kernel 7 at these dilations, then 1x1


def read_state(path: Path | str) -> dict[str, torch.Tensor]:
    """codec.pth as the publisher's `load_codec` unwraps it: a `state_dict` entry if any, the
    `generator.` keys (prefix removed) if any key has one, rope/mask buffers dropped; fp32."""
    raw = torch.load(Path(path), map_location="cpu", weights_only=True)
    if "state_dict" in raw:
        raw = raw["state_dict"]
    if any("generator." in k for k in raw):
        raw = {k.replace("generator.", ""): v for k, v in raw.items() if "generator." in k}
    return {k: v.float() for k, v in raw.items() if not k.endswith(("freqs_cis", "causal_mask"))}


# -- layers --------------------------------------------------------------------------------------


def _weight(w: State, conv: str) -> torch.Tensor:
    """The weight a conv uses: g * v / ||v|| (norm over every dim but 0) for both weight-norm
    forms, else the plain weight."""
    if f"{conv}.parametrizations.weight.original1" in w:
        g = w[f"{conv}.parametrizations.weight.original0"]
        v = w[f"{conv}.parametrizations.weight.original1"]
    elif f"{conv}.weight_v" in w:
        g, v = w[f"{conv}.weight_g"], w[f"{conv}.weight_v"]
    else:
        return w[f"{conv}.weight"]
    norm = torch.sqrt((v * v).sum(dim=tuple(range(1, v.dim())), keepdim=True))
    return v * (g / norm)


def _snake(x: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    return x + torch.sin(alpha * x) ** 2 / (alpha + 1e-9)


def _causal_conv(
    x: torch.Tensor, w: State, p: str, stride: int = 1, dilation: int = 1, groups: int = 1
) -> torch.Tensor:
    """Pad (k-1)*d + 1 - s zeros on the left, and on the right what completes the last stride."""
    weight = _weight(w, f"{p}.conv")
    span = (weight.shape[-1] - 1) * dilation + 1
    left = span - stride
    length = x.shape[-1]
    n_out = math.ceil((length - span + left) / stride + 1)
    right = (n_out - 1) * stride + span - left - length
    x = F.pad(x, (left, right))
    return F.conv1d(x, weight, w[f"{p}.conv.bias"], stride, 0, dilation, groups)


def _conv_transpose(x: torch.Tensor, w: State, p: str, stride: int) -> torch.Tensor:
    """A transposed conv, its last k - s samples cropped (causal)."""
    weight = _weight(w, f"{p}.conv")
    y = F.conv_transpose1d(x, weight, w[f"{p}.conv.bias"], stride=stride)
    crop = weight.shape[-1] - stride
    return y[..., : y.shape[-1] - crop] if crop else y


def _residual_unit(x: torch.Tensor, w: State, p: str, dilation: int) -> torch.Tensor:
    y = _snake(x, w[f"{p}.block.0.alpha"])
    y = _causal_conv(y, w, f"{p}.block.1", dilation=dilation)
    y = _snake(y, w[f"{p}.block.2.alpha"])
    y = _causal_conv(y, w, f"{p}.block.3")
    return x[..., : y.shape[-1]] + y


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def _rope(length: int, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [L, head_dim/2]: angles pos / base^(2i/d), the values rounded to bfloat16 as
    the publisher's table is (also in fp32), restarting at position 0 on every call."""
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.arange(length).float()[:, None] * inv[None, :]
    return (
        torch.cos(angles).to(torch.bfloat16).float(),
        torch.sin(angles).to(torch.bfloat16).float(),
    )


def _apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, L, D]: dims (2i, 2i+1) rotate together by angle i (GPT-J pairs)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = odd * cos + even * sin
    return out


def _visible(length: int, window: int) -> torch.Tensor:
    """bool [L, L]: query i sees key j when j <= i and i - j < window."""
    i = torch.arange(length)[:, None]
    j = torch.arange(length)[None, :]
    return (j <= i) & (i - j < window)


def _attention(x: torch.Tensor, w: State, p: str, head_dim: int, rope, visible) -> torch.Tensor:
    b, length, dim = x.shape
    heads = dim // head_dim
    qkv = x @ w[f"{p}.wqkv.weight"].T
    q, k, v = (t.reshape(b, length, heads, head_dim).transpose(1, 2) for t in qkv.chunk(3, -1))
    q, k = _apply_rope(q, *rope), _apply_rope(k, *rope)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(1, 2).reshape(b, length, dim) @ w[f"{p}.wo.weight"].T


def _layers(w: State, p: str) -> int:
    """How many transformer blocks the state holds under `p`."""
    n = 0
    while f"{p}.layers.{n}.attention_norm.weight" in w:
        n += 1
    return n


def _transformer(x: torch.Tensor, w: State, p: str, window: int, cfg: CodecConfig) -> torch.Tensor:
    """Channels-first in and out: pre-norm blocks with LayerScale on both branches, SwiGLU,
    causal attention inside `window`; the final RMSNorm."""
    h = x.transpose(1, 2)
    length = h.shape[1]
    rope, visible = _rope(length, cfg.head_dim, cfg.rope_base), _visible(length, window)
    for i in range(_layers(w, p)):
        q = f"{p}.layers.{i}"
        a = _attention(
            _rms_norm(h, w[f"{q}.attention_norm.weight"], cfg.norm_eps),
            w,
            f"{q}.attention",
            cfg.head_dim,
            rope,
            visible,
        )
        h = h + a * w[f"{q}.attention_layer_scale.gamma"]
        n = _rms_norm(h, w[f"{q}.ffn_norm.weight"], cfg.norm_eps)
        ff = f"{q}.feed_forward"
        gate = F.silu(n @ w[f"{ff}.w1.weight"].T) * (n @ w[f"{ff}.w3.weight"].T)
        h = h + (gate @ w[f"{ff}.w2.weight"].T) * w[f"{q}.ffn_layer_scale.gamma"]
    return _rms_norm(h, w[f"{p}.norm.weight"], cfg.norm_eps).transpose(1, 2)


def _convnext(x: torch.Tensor, w: State, p: str) -> torch.Tensor:
    y = _causal_conv(x, w, f"{p}.dwconv", groups=x.shape[1]).transpose(1, 2)
    y = F.layer_norm(y, (y.shape[-1],), w[f"{p}.norm.weight"], w[f"{p}.norm.bias"], 1e-6)
    y = F.gelu(y @ w[f"{p}.pwconv1.weight"].T + w[f"{p}.pwconv1.bias"])
    y = y @ w[f"{p}.pwconv2.weight"].T + w[f"{p}.pwconv2.bias"]
    return x + (y * w[f"{p}.gamma"]).transpose(1, 2)


def _conv1x1(x: torch.Tensor, w: State, p: str) -> torch.Tensor:
    return F.conv1d(x, _weight(w, p), w[f"{p}.bias"])


# -- decode --------------------------------------------------------------------------------------


def _books(w: State, rvq: str) -> list[str]:
    n = 0
    while f"{rvq}.quantizers.{n}.codebook.weight" in w:
        n += 1
    return [f"{rvq}.quantizers.{i}" for i in range(n)]


def _all_books(w: State) -> list[str]:
    """The semantic book(s), then the residual books: the codes' row order."""
    return _books(w, "quantizer.semantic_quantizer") + _books(w, "quantizer.quantizer")


def decode(w: State, cfg: CodecConfig, codes: torch.Tensor) -> torch.Tensor:
    """codes [B, books, T] (any integers) -> wav [B, 1, T * frame_size]."""
    codes = codes.long()
    z = 0.0
    for row, book in enumerate(_all_books(w)):
        table = w[f"{book}.codebook.weight"]
        idx = codes[:, row].clamp(0, table.shape[0] - 1)  # the publisher's decode clamps
        z = z + _conv1x1(F.embedding(idx, table).transpose(1, 2), w, f"{book}.out_proj")
    z = _transformer(z, w, "quantizer.post_module", cfg.window, cfg)
    for i, s in enumerate(cfg.quant_strides):
        z = _conv_transpose(z, w, f"quantizer.upsample.{i}.0", s)
        z = _convnext(z, w, f"quantizer.upsample.{i}.1")
    x = _causal_conv(z, w, "decoder.model.0")
    for i, s in enumerate(cfg.decoder_strides):
        p = f"decoder.model.{i + 1}.block"
        x = _snake(x, w[f"{p}.0.alpha"])
        x = _conv_transpose(x, w, f"{p}.1", s)
        for j, d in enumerate(DILATIONS):
            x = _residual_unit(x, w, f"{p}.{j + 2}", d)
    last = len(cfg.decoder_strides) + 1
    x = _snake(x, w[f"decoder.model.{last}.alpha"])
    return torch.tanh(_causal_conv(x, w, f"decoder.model.{last + 1}"))


# -- encode --------------------------------------------------------------------------------------


def _nearest(projected: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """[B, code_dim, T] -> [B, T]: the codebook row at the least distance, both sides scaled to
    unit length (the publisher's squared-distance form)."""
    b, _, length = projected.shape
    x = projected.transpose(1, 2).reshape(b * length, -1)
    x = x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)
    t = table / table.norm(dim=1, keepdim=True).clamp_min(1e-12)
    dist = (x * x).sum(1, keepdim=True) - 2 * x @ t.T + (t * t).sum(1)[None]
    return dist.argmin(1).reshape(b, length)


def _quantize(z: torch.Tensor, w: State, books: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Residual VQ over `books`: (sum of the quantized vectors, codes [B, books, T])."""
    total, residual, codes = torch.zeros_like(z), z, []
    for book in books:
        idx = _nearest(_conv1x1(residual, w, f"{book}.in_proj"), w[f"{book}.codebook.weight"])
        vectors = F.embedding(idx, w[f"{book}.codebook.weight"]).transpose(1, 2)
        q = _conv1x1(vectors, w, f"{book}.out_proj")
        total, residual = total + q, residual - q
        codes.append(idx)
    return total, torch.stack(codes, dim=1)


def encode(w: State, cfg: CodecConfig, audio: torch.Tensor) -> torch.Tensor:
    """audio [B, 1, N] -> codes [B, books, ceil(N / frame_size)] (right-padded with zeros)."""
    right = -audio.shape[-1] % cfg.frame_size
    x = _causal_conv(F.pad(audio, (0, right)), w, "encoder.block.0")
    for i, s in enumerate(cfg.encoder_strides):
        p = f"encoder.block.{i + 1}.block"
        for j, d in enumerate(DILATIONS):
            x = _residual_unit(x, w, f"{p}.{j}", d)
        x = _snake(x, w[f"{p}.3.alpha"])
        x = _causal_conv(x, w, f"{p}.4", stride=s)
        if _layers(w, f"{p}.5"):
            x = _transformer(x, w, f"{p}.5", cfg.encoder_window, cfg)
    last = len(cfg.encoder_strides) + 1
    x = _snake(x, w[f"encoder.block.{last}.alpha"])
    z = _causal_conv(x, w, f"encoder.block.{last + 1}")
    for i, s in enumerate(cfg.quant_strides):
        z = _causal_conv(z, w, f"quantizer.downsample.{i}.0", stride=s)
        z = _convnext(z, w, f"quantizer.downsample.{i}.1")
    z = _transformer(z, w, "quantizer.pre_module", cfg.window, cfg)
    semantic, semantic_codes = _quantize(z, w, _books(w, "quantizer.semantic_quantizer"))
    _, residual_codes = _quantize(z - semantic, w, _books(w, "quantizer.quantizer"))
    return torch.cat((semantic_codes, residual_codes), dim=1)


__all__ = ["read_state", "decode", "encode"]
