"""Text to speech over a Chatterbox Turbo bundle: the host steps between the five graphs.

    text ─▶ Turbo punc_norm + GPT-2 tokenizer (host) ─▶ chunks of ≤ text_budget ids
    chunk ─▶ T3 prefill + decode loop (graph; one row, no CFG; sampling on the host) ─▶ tokens
    tokens ─▶ flow encoder (graph) ─▶ mu ─▶ 2 mean-flow steps of the estimator (graph) ─▶ mel
    mel ─▶ f0 (graph) ─▶ harmonic source + STFT (host) ─▶ trunk (graph) ─▶ iSTFT (host) ─▶ wav

The S3Gen half and the chunk loop are the shared `S3GenPipeline` (`conversion/s3gen/`): the
bundle's `flow_host.npz` says mean-flow, so its loop is `basic_euler` with `r`. Here are Turbo's
T3 step, its voice check and its speech-token filter. Everything random is an input, as for
Chatterbox: T3's draws are exponential races over host uniforms ([6563] per draw), the flow
starts from a noise array, the HiFT source takes its phase and noise draws; `ChunkDraws`
carries them, so a run replays the oracle's draws; otherwise they come from (seed, chunk).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from conversion.core.host.sampling import SamplingConfig
from conversion.s3gen.pipeline import SPEECH_VOCAB, S3GenPipeline
from conversion.s3gen.pipeline import ChunkDraws as S3GenDraws

from .config import N_CFM_TIMESTEPS, TurboConfig
from .sampling import turbo_sampling
from .t3 import host as host_t3
from .t3.graphs import T3_VOCAB
from .text import TurboTextTokenizer
from .voice import TurboVoice, VoiceError

S3GEN_SIL = 4299  # chatterbox.models.s3gen.const.S3GEN_SIL: generate() appends three
TRAILING_SILENCE = 3


@dataclass(frozen=True)
class SpeakOptions:
    """The publisher's `generate` defaults (chatterbox-tts 0.1.7, `ChatterboxTurboTTS`)."""

    temperature: float = 0.8
    top_k: int = 1000
    top_p: float = 0.95
    repetition_penalty: float = 1.2
    n_steps: int = N_CFM_TIMESTEPS
    max_new_tokens: int | None = None  # None: the bundle's speech budget
    seed: int = 0
    voice: TurboVoice | None = None  # None: the bundle's default voice
    ref: str | None = None  # a wav to clone (`ChatterboxTurboPort.options_for_pipeline`)

    def sampling(self) -> SamplingConfig:
        return turbo_sampling(self.temperature, self.top_k, self.top_p, self.repetition_penalty)


class ChunkDraws(S3GenDraws):
    """One chunk's randomness; any part left None is drawn from the seed."""

    t3_vocab = T3_VOCAB  # uniforms: [draws, 6563]


def speech_tokens_for_s3gen(tokens: np.ndarray) -> np.ndarray:
    """What Turbo's `generate` hands S3Gen: the tokens below 6561 (`speech_tokens[speech_tokens
    < 6561]`: a drawn start token is dropped, not cut at), then three silence tokens (with no
    speech token drawn, the silence alone is vocoded, as the publisher's is)."""
    tokens = np.asarray(tokens, np.int64).reshape(-1)
    speech = tokens[tokens < SPEECH_VOCAB]
    return np.concatenate([speech, np.full(TRAILING_SILENCE, S3GEN_SIL, np.int64)])


class TurboPipeline(S3GenPipeline):
    """A loaded Chatterbox Turbo bundle: one Session over the graphs, host tables and voice."""

    model = "chatterbox_turbo"
    config_type = TurboConfig
    voice_type = TurboVoice
    tokenizer_type = TurboTextTokenizer
    draws_type = ChunkDraws
    flow_steps = 2
    speech_tokens_for_s3gen = staticmethod(speech_tokens_for_s3gen)

    def t3(
        self,
        text_ids: np.ndarray,
        voice: TurboVoice,
        options: SpeakOptions,
        uniforms: Any = None,
        forced_tokens: np.ndarray | None = None,
        on_step: Callable[[int, int], None] | None = None,
    ) -> host_t3.T3TurboResult:
        self._require("t3")
        return host_t3.generate(
            self.session,
            self.arrays["t3"],
            voice.t3_cond(),
            text_ids,
            options.sampling(),
            uniforms,
            options.max_new_tokens or self.config.speech_budget,
            self.config.prefill_buckets,
            self.config.kv_length,
            forced_tokens=forced_tokens,
            on_step=on_step,
        )

    def check_voice(self, voice: TurboVoice) -> None:
        """VoiceError when `voice`'s prompts are longer than this bundle's caps (T3's prefix
        and the flow encoder's largest bucket are sized to them), before any graph runs."""
        config = self.config
        for what, have, cap in (
            ("S3Gen prompt", voice.prompt_token_len, config.prompt_tokens_max),
            ("T3 prompt", voice.t3_prompt_len, config.t3_prompt_tokens_max),
        ):
            if have > cap:
                raise VoiceError(
                    f"voice {voice.source or '(unnamed)'} has {have} {what} tokens; this "
                    f"{config.name} bundle takes at most {cap}: clone it again with "
                    f"`voxport voice chatterbox_turbo --ref WAV --config {config.name}`"
                )
