"""Text to speech over a Chatterbox Turbo bundle: the host steps between the five graphs.

    text ─▶ Turbo punc_norm + GPT-2 tokenizer (host) ─▶ chunks of ≤ text_budget ids
    chunk ─▶ T3 prefill + decode loop (graph; one row, no CFG; sampling on the host) ─▶ tokens
    tokens ─▶ flow encoder (graph) ─▶ mu ─▶ 2 mean-flow steps of the estimator (graph) ─▶ mel
    mel ─▶ f0 (graph) ─▶ harmonic source + STFT (host) ─▶ trunk (graph) ─▶ iSTFT (host) ─▶ wav

The S3Gen half is the shared host (`conversion/s3gen/`): the bundle's `flow_host.npz` says
mean-flow, so its loop is `basic_euler` with `r`. Everything random is an input, as for
Chatterbox: T3's draws are exponential races over host uniforms ([6563] per draw), the flow
starts from a noise array, the HiFT source takes its phase and noise draws; `ChunkDraws`
carries them, so a run replays the oracle's draws; otherwise they come from (seed, chunk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from conversion.core.errors import UserError
from conversion.core.host.sampling import SamplingConfig
from conversion.core.runtime.loaded_pipeline import LoadedPipeline
from conversion.core.runtime.workers import WorkerPool
from conversion.core.speak import SpeakListener, SpeakResult
from conversion.s3gen.flow import host as host_flow
from conversion.s3gen.hift import host as host_hift

from .config import N_CFM_TIMESTEPS, SAMPLE_RATE, TurboConfig
from .export import DEFAULT_VOICE, GRAPHS, HOST_ARRAYS, TOKENIZER
from .sampling import turbo_sampling
from .t3 import host as host_t3
from .t3.graphs import T3_VOCAB
from .text import TextChunk, TurboTextTokenizer
from .voice import TurboVoice, VoiceError

TOKEN_REPORT_EVERY = 50  # two seconds of speech
SPEECH_VOCAB = 6561  # S3 tokens; T3's ids at and above it (start/stop) never reach S3Gen
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


@dataclass
class ChunkDraws:
    """One chunk's randomness; any part left None is drawn from the seed."""

    uniforms: np.ndarray | Callable[[int], np.ndarray] | None = None  # [draws, 6563]
    noise: np.ndarray | None = None  # the flow's z [1, 80, total frames]
    hift: dict[str, np.ndarray] | None = None  # host_hift.draw_source_noise's dict

    @staticmethod
    def from_seed(seed: int, chunk: int = 0) -> ChunkDraws:
        rng = np.random.default_rng([seed, chunk])
        return ChunkDraws(uniforms=lambda _step: rng.random(T3_VOCAB, dtype=np.float32))


@dataclass
class ChunkResult:
    text: str
    t3: host_t3.T3TurboResult
    speech_tokens: np.ndarray
    flow: host_flow.FlowResult | None
    hift: host_hift.HiftResult | None
    wav: np.ndarray
    graph_ms: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    host_ms: float = 0.0


class TurboPipeline(LoadedPipeline):
    """A loaded Chatterbox Turbo bundle: one Session over the graphs, host tables and voice."""

    model = "chatterbox_turbo"
    sample_rate = SAMPLE_RATE

    def load_host(self) -> None:
        self.graphs = [g for g in GRAPHS if g in self.manifest.graphs]
        self.config = TurboConfig.from_json(self.manifest.config["config"])
        self.arrays: dict[str, dict[str, np.ndarray]] = {}
        for part, name in HOST_ARRAYS.items():
            with np.load(self.path / name) as data:
                self.arrays[part] = {k: data[k] for k in data.files}
        voice_file = self.path / DEFAULT_VOICE
        self.default_voice = TurboVoice.load(voice_file) if voice_file.exists() else None
        tok = self.path / TOKENIZER
        self.tokenizer = TurboTextTokenizer(tok) if tok.exists() else None

    def _require(self, *graphs: str) -> None:
        missing = [g for g in graphs if g not in self.graphs]
        if missing:
            raise UserError(f"{self.path} lacks graph(s) {missing}: export the full bundle")

    # -- steps (the pipeline and the gate both call these) -------------------------------

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

    def flow(
        self, speech_tokens: np.ndarray, voice: TurboVoice, noise: np.ndarray, n_steps: int = 2
    ) -> host_flow.FlowResult:
        self._require("flow_encoder", "flow_estimator")
        return host_flow.flow_inference(
            self.session,
            self.arrays["flow"],
            voice.prompt_tokens,
            voice.prompt_feat,
            voice.xvector,
            speech_tokens,
            noise,
            n_steps=n_steps,
            config=self.config,
        )

    def vocode(
        self, mel: np.ndarray, draws: dict[str, np.ndarray] | None = None, seed: int = 0
    ) -> host_hift.HiftResult:
        self._require("hift_f0", "hift_trunk")
        return host_hift.vocode(self.session, self.arrays["hift"], mel, draws=draws, seed=seed)

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

    def noise_frames(self, voice: TurboVoice, n_tokens: int) -> int:
        ratio = int(self.arrays["flow"]["token_mel_ratio"])
        return ratio * (voice.prompt_token_len + n_tokens)

    # -- text to speech -------------------------------------------------------------------

    def chunks(self, text: str) -> list[TextChunk]:
        if self.tokenizer is None:
            raise UserError(f"{self.path} has no {TOKENIZER}: re-export it from a snapshot")
        return self.tokenizer.chunks(text, self.config.text_budget)

    def synthesize(
        self,
        chunk: TextChunk,
        voice: TurboVoice,
        options: SpeakOptions,
        seed: int = 0,
        index: int = 0,
        draws: ChunkDraws | None = None,
        forced_tokens: np.ndarray | None = None,
        on_token: Callable[[int, int], None] | None = None,
    ) -> ChunkResult:
        """One chunk to audio. `draws` replays given randomness (the rest comes from `seed`)."""
        self.check_voice(voice)
        self.between_utterances()  # T3's KV state is rebuilt by each chunk's prefill
        start = time.perf_counter()
        self.session.since_mark()
        seeded = ChunkDraws.from_seed(seed, index)
        draws = draws or seeded
        uniforms = seeded.uniforms if draws.uniforms is None else draws.uniforms
        t3 = self.t3(chunk.ids, voice, options, uniforms, forced_tokens, on_token)
        speech = speech_tokens_for_s3gen(t3.tokens)
        flow = hift = None
        wav = np.zeros(0, np.float32)
        if speech.size:
            noise = draws.noise
            if noise is None:
                frames = self.noise_frames(voice, speech.size)
                rng = np.random.default_rng([seed, index, 1])
                noise = rng.standard_normal((1, 80, frames), dtype=np.float32)
            flow = self.flow(speech, voice, noise, options.n_steps)
            hift = self.vocode(flow.mel, draws.hift, seed=seed * 1000 + index)
            wav = host_hift.apply_trim_fade(hift.wav, self.arrays["hift"].get("trim_fade"))
        ms, calls = self.session.since_mark()
        total = (time.perf_counter() - start) * 1e3
        return ChunkResult(
            text=chunk.text,
            t3=t3,
            speech_tokens=speech,
            flow=flow,
            hift=hift,
            wav=np.asarray(wav, np.float32),
            graph_ms=ms,
            calls=calls,
            host_ms=total - sum(ms.values()),
        )

    def speak(
        self,
        text: str,
        options: SpeakOptions,
        *,
        listener: SpeakListener | None = None,
        pool: WorkerPool[TurboPipeline] | None = None,
        chunks: list[TextChunk] | None = None,
    ) -> SpeakResult:
        """`text` to one float32 waveform at 24 kHz (chunks joined), and each chunk's result;
        the speak half's one signature (`conversion/core/speak.py`). Each chunk's draws come
        from (`options.seed`, its index) alone: the audio is the same for any `pool`."""
        listener = SpeakListener() if listener is None else listener
        voice = options.voice or self.default_voice
        if voice is None:
            raise UserError(
                f"{self.path} has no default voice (the snapshot had no conds.pt): pass --ref"
            )
        self.check_voice(voice)
        chunks = chunks if chunks is not None else self.chunks(text)

        def on_token(done: int, budget: int) -> None:
            if done % TOKEN_REPORT_EVERY == 0:
                listener.step(f"  T3: {done} tokens drawn (budget {budget})")

        def work(pipeline: TurboPipeline, i: int, chunk: TextChunk) -> ChunkResult:
            return pipeline.synthesize(
                chunk, voice, options, seed=options.seed, index=i, on_token=on_token
            )

        def deliver(_i: int, result: ChunkResult) -> None:
            listener.audio(result.wav)

        def label(_i: int, result: ChunkResult) -> str:
            return f"{result.text[:32]} ({result.speech_tokens.size} tok)"

        results = self.speak_in_order(chunks, work, deliver, label, listener, pool)
        audio = np.concatenate([r.wav for r in results]) if results else np.zeros(0, np.float32)
        stopped = sum(r.t3.stopped for r in results)
        summary = f"{len(results)} chunk(s), {stopped} stopped on the stop token"
        return SpeakResult(audio.astype(np.float32), SAMPLE_RATE, results, summary)


def speech_tokens_for_s3gen(tokens: np.ndarray) -> np.ndarray:
    """What Turbo's `generate` hands S3Gen: the tokens below 6561 (`speech_tokens[speech_tokens
    < 6561]`: a drawn start token is dropped, not cut at), then three silence tokens (with no
    speech token drawn, the silence alone is vocoded, as the publisher's is)."""
    tokens = np.asarray(tokens, np.int64).reshape(-1)
    speech = tokens[tokens < SPEECH_VOCAB]
    return np.concatenate([speech, np.full(TRAILING_SILENCE, S3GEN_SIL, np.int64)])
