"""The codec's sizes: `CodecConfig` (widths, strides, books, graph buckets) at the published
size and a reduced one of the same structure; every other codec module reads its numbers here."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass


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
