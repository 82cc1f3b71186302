"""Text to speech over a Chatterbox bundle: the host steps between the five graphs.

    text ─▶ punc_norm + tokenizer (host) ─▶ chunks of ≤ text_budget ids
    chunk ─▶ T3 prefill + decode loop (graph; CFG, sampling on the host) ─▶ speech tokens
    tokens ─▶ flow encoder (graph) ─▶ mu ─▶ 10 Euler steps of the estimator (graph) ─▶ mel
    mel ─▶ f0 (graph) ─▶ harmonic source + STFT (host) ─▶ trunk (graph) ─▶ iSTFT (host) ─▶ wav

The S3Gen half and the chunk loop are the shared `S3GenPipeline` (`conversion/s3gen/`); here
are Chatterbox's T3 step, its voice check and its speech-token filter. Everything random is
an input: T3's draws are exponential races over host uniforms (one [8194] vector per step),
the CFM starts from a noise array, the HiFT source takes its phase and noise draws.
`ChunkDraws` carries them, so a run replays the oracle's draws exactly; otherwise they are
drawn from the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from conversion.chatterbox.sampling import CHATTERBOX_ORDER
from conversion.core.host.sampling import SamplingConfig
from conversion.s3gen import pipeline as s3gen_pipeline
from conversion.s3gen.pipeline import ChunkResult as ChunkResult  # re-exported

from .config import SAMPLE_RATE, TOKEN_HOP, ChatterboxConfig
from .t3 import host as host_t3
from .t3.graphs import START_SPEECH, T3_VOCAB
from .text import TextTokenizer
from .voice import Voice, VoiceError


@dataclass(frozen=True)
class SpeakOptions:
    """The publisher's `generate` defaults (chatterbox-tts 0.1.7)."""

    exaggeration: float = 0.5
    cfg_weight: float = 0.5
    temperature: float = 0.8
    repetition_penalty: float = 1.2
    min_p: float = 0.05
    top_p: float = 1.0
    n_steps: int = 10
    max_new_tokens: int | None = None  # None: the bundle's speech budget
    # Who speaks and how the draws go (the speak half's options; `synthesize` takes its voice
    # and seed as arguments): `voice` None is the bundle's default voice, cloned from `ref`
    # (a wav) by `ChatterboxPort.options_for_pipeline` when given.
    seed: int = 0
    voice: Voice | None = None
    ref: str | None = None

    def sampling(self) -> SamplingConfig:
        return SamplingConfig(
            temperature=self.temperature,
            top_p=self.top_p,
            min_p=self.min_p,
            repetition_penalty=self.repetition_penalty,
            cfg_weight=self.cfg_weight,
            order=CHATTERBOX_ORDER,
        )


class ChunkDraws(s3gen_pipeline.ChunkDraws):
    """One chunk's randomness; any part left None is drawn from the seed."""

    t3_vocab = T3_VOCAB  # uniforms: [steps, 8194]


def speech_tokens_for_s3gen(tokens: np.ndarray) -> np.ndarray:
    """What `generate` hands S3Gen: tokens after a drawn start-of-speech, ids < 6561 only.

    (T3Result.tokens already ends before the stop token.) The publisher's drop_invalid_tokens
    fails on a second start-of-speech; here the tokens after the last one are kept.
    """
    tokens = np.asarray(tokens, np.int64).reshape(-1)
    starts = np.flatnonzero(tokens == START_SPEECH)
    if starts.size:
        tokens = tokens[starts[-1] + 1 :]
    return tokens[tokens < s3gen_pipeline.SPEECH_VOCAB]


class ChatterboxPipeline(s3gen_pipeline.S3GenPipeline):
    """A loaded Chatterbox bundle: one Session over the graphs, the host tables and voice."""

    model = "chatterbox"
    config_type = ChatterboxConfig
    voice_type = Voice
    tokenizer_type = TextTokenizer
    draws_type = ChunkDraws
    flow_steps = 10
    speech_tokens_for_s3gen = staticmethod(speech_tokens_for_s3gen)

    def t3(
        self,
        text_ids: np.ndarray,
        voice: Voice,
        options: SpeakOptions,
        uniforms: Any = None,
        forced_tokens: np.ndarray | None = None,
        on_step: Callable[[int, int], None] | None = None,
    ) -> host_t3.T3Result:
        self._require("t3")
        return host_t3.generate(
            self.session,
            self.arrays["t3"],
            voice.cond_emb(options.exaggeration),
            text_ids,
            options.sampling(),
            uniforms,
            options.max_new_tokens or self.config.speech_budget,
            self.config,
            forced_tokens=forced_tokens,
            on_step=on_step,
        )

    def check_voice(self, voice: Voice) -> None:
        """VoiceError when `voice`'s S3Gen prompt is longer than this bundle's cap (prompt +
        a full chunk must fit the flow encoder's largest bucket), before any graph runs."""
        cap = self.config.prompt_tokens_max
        if voice.prompt_token_len > cap:
            raise VoiceError(
                f"voice {voice.source or '(unnamed)'} has {voice.prompt_token_len} S3Gen prompt "
                f"tokens; this {self.config.name} bundle takes at most {cap} "
                f"({cap * TOKEN_HOP / SAMPLE_RATE:g} s of reference): clone it again with "
                f"`voxport voice chatterbox --ref WAV --config {self.config.name}`"
            )


def seconds_of(audio: np.ndarray) -> float:
    return audio.size / SAMPLE_RATE
