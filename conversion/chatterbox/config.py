"""Chatterbox sizes: the published configuration and the reduced one the tests use.

The publisher's constructors hard-code their sizes (`T3()` reads `LLAMA_CONFIGS["Llama_520M"]`,
`S3Gen()` builds its encoder, estimator and vocoder with literal arguments), so a reduced model
is built by the same constructors with a few arguments overridden (`sizes_patched`; S3Gen's
through `conversion.s3gen.sizes.constructors_patched`). What must not shrink: T3's hidden size
(1024: the perceiver and the conditioning encoder are fixed at it) and the S3Gen encoder's width
(512: the token embedding and `encoder_proj` are fixed at it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conversion.core.errors import WeightsError
from conversion.core.json_file import JsonFileError, load_json_object
from conversion.s3gen.sizes import MEL_HOP as MEL_HOP  # the S3Gen rates, re-exported
from conversion.s3gen.sizes import SAMPLE_RATE as SAMPLE_RATE
from conversion.s3gen.sizes import TOKEN_HOP, constructors_patched, speech_budget_fit_problems

CONFIG_FILE = "voxport-config.json"  # only in snapshots we write; absent = published sizes


@dataclass(frozen=True)
class ChatterboxConfig:
    name: str
    # T3 (Llama backbone); None = the published value
    t3_layers: int = 30
    t3_intermediate: int = 4096
    # S3Gen flow encoder (UpsampleConformerEncoder): its 6 blocks before the upsample; the 4
    # after it are hard-coded in the publisher's class
    encoder_blocks: int = 6
    encoder_linear_units: int = 2048
    # CFM estimator (ConditionalDecoder)
    estimator_blocks: int = 4
    estimator_mid_blocks: int = 12
    # HiFT vocoder
    hift_base_channels: int = 512
    f0_cond_channels: int = 512
    # graph shapes: T3's KV length, prefill buckets, text budget (tokens incl. SOT/EOT)
    # (prefill = conditioning 34 + text + 2 start-of-speech rows; then one row per token)
    kv_length: int = 1024
    prefill_buckets: tuple[int, ...] = (128, 256, 384)
    text_budget: int = 300
    speech_budget: int = 600  # tokens per text chunk (24 s); the publisher allows 1000
    # S3Gen buckets. The encoder sees prompt + generated tokens (prompt <= 250 tokens, the
    # publisher's 10 s reference cap), the estimator 2 mel frames per token, the vocoder only
    # the generated frames.
    encoder_tokens: tuple[int, ...] = (256, 512, 896)
    estimator_frames: tuple[int, ...] = (512, 1024, 1792)
    vocoder_frames: tuple[int, ...] = (256, 512, 1200)
    prompt_tokens_max: int = 250
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_published(self) -> bool:
        return self.name == "published"

    @property
    def prompt_samples_max(self) -> int:
        """The longest S3Gen reference (24 kHz samples) a voice is cloned from: the publisher's
        `ChatterboxTTS.DEC_COND_LEN` (10 s, 250 tokens) at the published sizes, shorter at the
        reduced ones so that prompt + a full chunk fits the largest encoder bucket."""
        return self.prompt_tokens_max * TOKEN_HOP

    def flow_fit_problems(self) -> list[str]:
        """Why the longest allowed prompt + a full T3 chunk would not fit the S3Gen buckets
        (empty when it fits)."""
        return speech_budget_fit_problems(self, self.prompt_tokens_max, self.speech_budget)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (tuples as lists), as a bundle manifest reads back."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChatterboxConfig:
        tuples = {k: tuple(v) for k, v in data.items() if isinstance(v, list)}
        return cls(**{**data, **tuples})


PUBLISHED = ChatterboxConfig(name="published")
REDUCED = ChatterboxConfig(
    name="reduced",
    t3_layers=2,
    t3_intermediate=1024,
    encoder_blocks=1,
    encoder_linear_units=512,
    estimator_blocks=1,
    estimator_mid_blocks=1,
    hift_base_channels=64,
    f0_cond_channels=64,
    kv_length=256,
    prefill_buckets=(96,),
    text_budget=60,
    speech_budget=48,
    encoder_tokens=(64, 96),
    estimator_frames=(128, 192),
    vocoder_frames=(64, 96),
    prompt_tokens_max=40,
)
CONFIGS = {c.name: c for c in (PUBLISHED, REDUCED)}


def by_name(name: str) -> ChatterboxConfig:
    return CONFIGS[name]


def read_snapshot_config(folder: Path) -> ChatterboxConfig:
    """The sizes a snapshot was written at: our marker file, or the published ones."""
    marker = Path(folder) / CONFIG_FILE
    if not marker.exists():
        return PUBLISHED
    try:
        data = load_json_object(marker)
        return ChatterboxConfig.from_json(data)
    except (OSError, JsonFileError, TypeError, KeyError) as e:
        raise WeightsError(f"{marker} cannot be read as the snapshot's sizes ({e})") from None


def sizes_patched(config: ChatterboxConfig) -> contextlib.AbstractContextManager[None]:
    """Make the publisher's argument-less constructors build `config`'s sizes."""
    t3_sizes = {"num_hidden_layers": config.t3_layers, "intermediate_size": config.t3_intermediate}
    return constructors_patched(config, "Llama_520M", t3_sizes)
