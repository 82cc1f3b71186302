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
"""

from __future__ import annotations

import torch
from torch import nn

from conversion.core.export.rewrites import zero_pad

from .config import PUBLISHED, CodecConfig
from .layers import CausalConv1d, CausalConvTranspose1d, ResidualUnit, Snake1d, WindowTransformer
from .quantizer import DownsampleQuantizer

# -- encoder / decoder ---------------------------------------------------------------------------


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
