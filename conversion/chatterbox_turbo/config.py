"""Chatterbox Turbo sizes: the published configuration and the reduced one the tests use.

`ChatterboxTurboTTS.from_local` builds its models with hard-coded sizes: T3 from
`T3Config(text_tokens_dict_size=50276)` with `llama_config_name = "GPT2_medium"` (24 layers,
1024 wide, 16 heads, 8196 learned positions), a speech vocabulary of 6563, a T3 voice prompt of
up to 375 tokens (15 s of reference at 25 Hz), no perceiver, no emotion input; and
`S3Gen(meanflow=True)`, whose encoder, estimator and vocoder are Chatterbox's with a time mixer
for the mean-flow `r` input, run in 2 steps. A reduced model is built by the same code with a
few sizes overridden (`sizes_patched`; S3Gen's by the shared `constructors_patched`). Unlike
Chatterbox's T3, Turbo's can shrink its width: nothing outside GPT-2 is fixed at 1024 (no
perceiver; the speaker projection follows the width). What does not shrink: the text
vocabulary (from_local hard-codes it, and the GPT-2 tokenizer fills it) and the S3Gen
encoder's width (512).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from conversion.s3gen.sizes import SAMPLE_RATE as SAMPLE_RATE  # the S3Gen rates, re-exported
from conversion.s3gen.sizes import TOKEN_HOP as TOKEN_HOP
from conversion.s3gen.sizes import constructors_patched, speech_budget_fit_problems

CONFIG_FILE = "voxport-config.json"  # only in snapshots we write; absent = published sizes
T3_PROMPT_HOP = 640  # 16 kHz samples per speech token: T3's voice prompt is tokenized at 16 kHz
TEXT_VOCAB = 50_276  # from_local: T3Config(text_tokens_dict_size=50276); len(tokenizer) too
SPEECH_VOCAB_SIZE = 6_563  # from_local: hp.speech_tokens_dict_size (6561 tokens + start + stop)
N_CFM_TIMESTEPS = 2  # generate(): s3gen.inference(n_cfm_timesteps=2), the mean-flow steps


@dataclass(frozen=True)
class TurboConfig:
    name: str
    # T3 (GPT2_medium backbone)
    t3_layers: int = 24
    t3_hidden: int = 1024
    t3_heads: int = 16
    t3_positions: int = 8196  # GPT-2's learned position table (n_positions)
    # GPT-2's own token table: from_local deletes it after loading (T3 feeds embeddings), but
    # the checkpoint carries it
    t3_wte_rows: int = 50_276
    # T3's voice prompt: from_local fixes speech_cond_prompt_len at 375; the reference is cut
    # to ENC_COND_LEN (15 s) before tokenizing, so this many tokens at most
    t3_prompt_tokens_max: int = 375
    # S3Gen flow encoder: its blocks before the upsample (the 4 after it are hard-coded)
    encoder_blocks: int = 6
    encoder_linear_units: int = 2048
    # the mean-flow estimator (ConditionalDecoder(meanflow=True))
    estimator_blocks: int = 4
    estimator_mid_blocks: int = 12
    # HiFT vocoder
    hift_base_channels: int = 512
    f0_cond_channels: int = 512
    # budgets: text tokens per chunk, speech tokens per chunk (inference_turbo's max_gen_len is
    # 1000), S3Gen's prompt (DEC_COND_LEN: 10 s, 250 tokens)
    text_budget: int = 256
    speech_budget: int = 1000
    prompt_tokens_max: int = 250
    # graph shapes. T3: its prefill buckets hold the longest prefix (t3_prefix_max), its KV
    # cache that prefix plus a full speech budget. S3Gen (the shared `S3GenBuckets`): the
    # encoder sees prompt + generated tokens, the estimator 2 mel frames per token, the
    # vocoder only the generated frames.
    prefill_buckets: tuple[int, ...] = (128, 256, 640)
    kv_length: int = 1664
    encoder_tokens: tuple[int, ...] = (256, 512, 1280)
    estimator_frames: tuple[int, ...] = (512, 1024, 2560)
    vocoder_frames: tuple[int, ...] = (256, 512, 2048)

    @property
    def is_published(self) -> bool:
        return self.name == "published"

    @property
    def t3_prompt_samples_max(self) -> int:
        """ENC_COND_LEN: the 16 kHz reference samples T3's voice prompt is tokenized from."""
        return self.t3_prompt_tokens_max * T3_PROMPT_HOP

    @property
    def prompt_samples_max(self) -> int:
        """DEC_COND_LEN: the 24 kHz reference samples S3Gen's prompt is cut to."""
        return self.prompt_tokens_max * TOKEN_HOP

    @property
    def t3_prefix_max(self) -> int:
        """T3's longest prefill: speaker row, voice prompt, text, start-of-speech."""
        return 1 + self.t3_prompt_tokens_max + self.text_budget + 1

    def fit_problems(self) -> list[str]:
        """Why the longest prefix and a full chunk would not fit the graphs' buckets."""
        problems = []
        if self.t3_prefix_max > max(self.prefill_buckets):
            problems.append(
                f"T3 prefix {self.t3_prefix_max} rows > the largest prefill bucket "
                f"{max(self.prefill_buckets)}"
            )
        if self.t3_prefix_max + self.speech_budget > self.kv_length:
            problems.append(
                f"T3 prefix {self.t3_prefix_max} + speech {self.speech_budget} rows > the KV "
                f"length {self.kv_length}"
            )
        if self.kv_length > self.t3_positions:
            problems.append(f"KV length {self.kv_length} > GPT-2's {self.t3_positions} positions")
        problems += speech_budget_fit_problems(self, self.prompt_tokens_max, self.speech_budget)
        return problems

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, as a snapshot's marker file and a bundle manifest read it back."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurboConfig:
        tuples = {k: tuple(v) for k, v in data.items() if isinstance(v, list)}
        return cls(**{**data, **tuples})


PUBLISHED = TurboConfig(name="published")
REDUCED = TurboConfig(
    name="reduced",
    t3_layers=2,
    t3_hidden=256,
    t3_heads=4,  # head size 64, as published
    t3_positions=1024,
    t3_wte_rows=8,  # deleted after loading: kept tiny
    t3_prompt_tokens_max=50,  # 2 s of reference
    encoder_blocks=1,
    encoder_linear_units=512,
    estimator_blocks=1,
    estimator_mid_blocks=1,
    hift_base_channels=64,
    f0_cond_channels=64,
    text_budget=24,
    speech_budget=64,
    prompt_tokens_max=40,
    prefill_buckets=(96,),
    kv_length=160,
    encoder_tokens=(64, 112),
    estimator_frames=(128, 224),
    vocoder_frames=(64, 128),
)
CONFIGS = {c.name: c for c in (PUBLISHED, REDUCED)}


def by_name(name: str) -> TurboConfig:
    return CONFIGS[name]


def sizes_patched(config: TurboConfig) -> contextlib.AbstractContextManager[None]:
    """Make the publisher's hard-coded constructors build `config`'s sizes for the block."""
    # GPT2Config reads n_embd and hidden_size (an alias of n_embd): both, or they disagree
    gpt2 = {
        "n_layer": config.t3_layers,
        "n_embd": config.t3_hidden,
        "hidden_size": config.t3_hidden,
        "n_head": config.t3_heads,
        "n_positions": config.t3_positions,
        "n_ctx": config.t3_positions,
        "vocab_size": config.t3_wte_rows,
        # GPT-2's <|endoftext|> id (50256) lies past a shrunk token table; unused by T3
        "bos_token_id": None,
        "eos_token_id": None,
    }
    return constructors_patched(config, "GPT2_medium", gpt2)
