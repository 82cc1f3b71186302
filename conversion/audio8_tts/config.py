"""Audio8-TTS-Preview-0.6b sizes: the publisher's `config.json` fields, published and reduced.

Field names are the publisher's config.json keys (`model/audio8_tts_0_6B_preview/`), so a
snapshot's config.json loads into `Audio8Config.from_json` unchanged. The reduced configuration
(tests) keeps the published structure — DualAR, 10 codebooks of 4,096 semantic / 1,024 residual
entries, GQA, tied embeddings, interleaved bf16-rounded RoPE — and shrinks depth, width and the
text vocabulary (its semantic ids then start right after a small tokenizer's tokens).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conversion.core.json_file import load_json_object


@dataclass(frozen=True)
class BlockShape:
    """One AR's transformer blocks (the slow AR's config fields, or the fast AR's `fast_*`)."""

    dim: int
    hidden: int  # the SwiGLU's width
    heads: int
    kv_heads: int
    head_dim: int
    qkv_bias: bool
    o_bias: bool
    qk_norm: bool
    layers: int


@dataclass(frozen=True)
class Audio8Config:
    name: str = "published"
    vocab_size: int = 155_776
    dim: int = 896
    n_layer: int = 24
    n_head: int = 14
    n_local_heads: int = 2
    head_dim: int = 64
    intermediate_size: int = 4_864
    max_seq_len: int = 2_048
    rope_base: float = 1_000_000.0
    norm_eps: float = 1e-6
    attention_qkv_bias: bool = True
    attention_qk_norm: bool = False
    attention_o_bias: bool = False
    tie_word_embeddings: bool = True
    codebook_size: int = 4_096
    num_codebooks: int = 10
    semantic_begin_id: int = 151_678
    semantic_end_id: int = 155_773
    n_fast_layer: int = 4
    fast_dim: int = 896
    fast_n_head: int = 14
    fast_n_local_heads: int = 2
    fast_head_dim: int = 64
    fast_intermediate_size: int = 4_864
    fast_attention_qkv_bias: bool = False
    fast_attention_qk_norm: bool = False
    fast_attention_o_bias: bool = False
    norm_fastlayer_input: bool = True
    codec_filename: str = "codec.pth"
    codec_sample_rate: int = 44_100
    codec_frame_size: int = 2_048
    ras_window_size: int = 10
    ras_temperature: float = 1.0
    ras_top_p: float = 0.9
    eos_token_id: int = 151_645
    pad_token_id: int = 151_643

    @property
    def semantic_count(self) -> int:
        return self.semantic_end_id - self.semantic_begin_id + 1

    def block_shape(self, fast: bool = False) -> BlockShape:
        """The slow AR's blocks, or with `fast` the fast AR's."""
        if fast:
            return BlockShape(
                self.fast_dim,
                self.fast_intermediate_size,
                self.fast_n_head,
                self.fast_n_local_heads,
                self.fast_head_dim,
                self.fast_attention_qkv_bias,
                self.fast_attention_o_bias,
                self.fast_attention_qk_norm,
                self.n_fast_layer,
            )
        return BlockShape(
            self.dim,
            self.intermediate_size,
            self.n_head,
            self.n_local_heads,
            self.head_dim,
            self.attention_qkv_bias,
            self.attention_o_bias,
            self.attention_qk_norm,
            self.n_layer,
        )

    def to_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str | None = None) -> Audio8Config:
        """From a publisher config.json (unknown keys ignored) or our own to_json()."""
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in known}
        if name is not None:
            fields["name"] = name
        return cls(**fields)

    @classmethod
    def read(cls, path: Path) -> Audio8Config:
        data = load_json_object(path)  # a JsonFileError (ValueError) when it is not an object
        return cls.from_json(data, name=data.get("voxport_config", "published"))


@dataclass(frozen=True)
class GenerationDefaults:
    """The publisher's generation_config.json (RAS has its own: config.ras_*)."""

    temperature: float = 0.7
    top_k: int = 50
    top_p: float = 0.9
    max_new_frames: int = 512


GENERATION = GenerationDefaults()
PUBLISHED = Audio8Config()
# Small tokenizer: ids 0..255 bytes/specials, then the 4,096 semantic ids, then eos and pad.
REDUCED = Audio8Config(
    name="reduced",
    vocab_size=4_416,
    dim=128,
    n_layer=2,
    n_head=4,
    n_local_heads=2,
    head_dim=32,
    intermediate_size=256,
    max_seq_len=512,
    semantic_begin_id=300,
    semantic_end_id=300 + 4_095,
    n_fast_layer=2,
    fast_dim=128,
    fast_n_head=4,
    fast_n_local_heads=2,
    fast_head_dim=32,
    fast_intermediate_size=256,
    eos_token_id=4_400,
    pad_token_id=4_401,
)
CONFIGS = {c.name: c for c in (PUBLISHED, REDUCED)}


def by_name(name: str) -> Audio8Config:
    return CONFIGS[name]
