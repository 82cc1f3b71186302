"""The pipeline of a model built on T3 + S3Gen, all but T3: the bundle's host files, S3Gen's
steps, and one chunk from text ids to audio.

    chunk ─▶ the model's T3 (`t3`) ─▶ tokens ─▶ the model's filter (`speech_tokens_for_s3gen`)
    tokens ─▶ flow encoder (graph) ─▶ mu ─▶ the estimator's steps (graph) ─▶ mel
    mel ─▶ f0 (graph) ─▶ harmonic source + STFT (host) ─▶ trunk (graph) ─▶ iSTFT (host) ─▶ wav

A model subclasses `S3GenPipeline` with its config, voice and tokenizer types and its own T3
step, voice check and speech-token filter. Everything random is an input: T3's uniforms, the
flow's noise, the HiFT source's draws (`ChunkDraws`), so a run replays the oracle's draws;
otherwise they are drawn from (seed, chunk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from conversion.core.errors import UserError
from conversion.core.runtime.loaded_pipeline import LoadedPipeline
from conversion.core.runtime.workers import WorkerPool
from conversion.core.speak import SpeakListener, SpeakResult

from .export import DEFAULT_VOICE, GRAPHS, HOST_ARRAYS, TOKENIZER
from .flow import host as host_flow
from .hift import host as host_hift
from .sizes import SAMPLE_RATE

TOKEN_REPORT_EVERY = 50  # two seconds of speech
SPEECH_VOCAB = 6561  # S3 tokens; T3's ids at and above it (start/stop/pad) never reach S3Gen


class T3Outcome(Protocol):
    """What a chunk's T3 loop gives, whichever model's (`T3Result`, `T3TurboResult`)."""

    tokens: np.ndarray
    steps: int
    stopped: bool


@dataclass
class ChunkDraws:
    """One chunk's randomness; any part left None is drawn from the seed. A model's subclass
    sets `t3_vocab` (one uniform per T3 id per draw)."""

    t3_vocab: ClassVar[int] = 0
    uniforms: np.ndarray | Callable[[int], np.ndarray] | None = None  # [draws, t3_vocab]
    noise: np.ndarray | None = None  # the flow's z [1, 80, total frames]
    hift: dict[str, np.ndarray] | None = None  # host_hift.draw_source_noise's dict

    @classmethod
    def from_seed(cls, seed: int, chunk: int = 0) -> ChunkDraws:
        rng = np.random.default_rng([seed, chunk])
        return cls(uniforms=lambda _step: rng.random(cls.t3_vocab, dtype=np.float32))


@dataclass
class ChunkResult:
    text: str
    t3: T3Outcome
    speech_tokens: np.ndarray
    flow: host_flow.FlowResult | None
    hift: host_hift.HiftResult | None
    wav: np.ndarray
    graph_ms: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    host_ms: float = 0.0


class S3GenPipeline(LoadedPipeline):
    """A loaded T3 + S3Gen bundle: one Session over the graphs, the host tables and voice.

    A model sets `config_type`, `voice_type`, `tokenizer_type`, `draws_type` and
    `flow_steps` (the estimator's steps when none are given), and defines `t3`,
    `check_voice` and `speech_tokens_for_s3gen`."""

    sample_rate = SAMPLE_RATE
    config_type: ClassVar[Any]
    voice_type: ClassVar[Any]
    tokenizer_type: ClassVar[Any]
    draws_type: ClassVar[type[ChunkDraws]] = ChunkDraws
    flow_steps: ClassVar[int]

    def load_host(self) -> None:
        self.graphs = [g for g in GRAPHS if g in self.manifest.graphs]
        self.config = self.config_type.from_json(self.manifest.config["config"])
        self.arrays: dict[str, dict[str, np.ndarray]] = {}
        for part, name in HOST_ARRAYS.items():
            with np.load(self.path / name) as data:
                self.arrays[part] = {k: data[k] for k in data.files}
        voice_file = self.path / DEFAULT_VOICE
        self.default_voice = self.voice_type.load(voice_file) if voice_file.exists() else None
        tok = self.path / TOKENIZER
        self.tokenizer = self.tokenizer_type(tok) if tok.exists() else None

    def _require(self, *graphs: str) -> None:
        missing = [g for g in graphs if g not in self.graphs]
        if missing:
            raise UserError(f"{self.path} lacks graph(s) {missing}: export the full bundle")

    # -- the model's own steps ------------------------------------------------------------

    def t3(
        self,
        text_ids: np.ndarray,
        voice: Any,
        options: Any,
        uniforms: Any = None,
        forced_tokens: np.ndarray | None = None,
        on_step: Callable[[int, int], None] | None = None,
    ) -> T3Outcome:
        raise NotImplementedError

    def check_voice(self, voice: Any) -> None:
        """VoiceError when `voice` does not fit this bundle, before any graph runs."""
        raise NotImplementedError

    @staticmethod
    def speech_tokens_for_s3gen(tokens: np.ndarray) -> np.ndarray:
        """What the model's `generate` hands S3Gen of T3's tokens."""
        raise NotImplementedError

    # -- S3Gen's steps (the pipeline and the gate both call these) ------------------------

    def flow(
        self, speech_tokens: np.ndarray, voice: Any, noise: np.ndarray, n_steps: int | None = None
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
            n_steps=self.flow_steps if n_steps is None else n_steps,
            config=self.config,
        )

    def vocode(
        self, mel: np.ndarray, draws: dict[str, np.ndarray] | None = None, seed: int = 0
    ) -> host_hift.HiftResult:
        self._require("hift_f0", "hift_trunk")
        return host_hift.vocode(self.session, self.arrays["hift"], mel, draws=draws, seed=seed)

    def noise_frames(self, voice: Any, n_tokens: int) -> int:
        ratio = int(self.arrays["flow"]["token_mel_ratio"])
        return ratio * (voice.prompt_token_len + n_tokens)

    def s3gen(
        self, speech: np.ndarray, voice: Any, draws: ChunkDraws, n_steps: int, seed: int, index: int
    ) -> tuple[host_flow.FlowResult, host_hift.HiftResult, np.ndarray]:
        """Speech tokens to the flow's and vocoder's results and the trimmed, faded wav; the
        draws `draws` leaves None come from (seed, index)."""
        noise = draws.noise
        if noise is None:
            frames = self.noise_frames(voice, speech.size)
            rng = np.random.default_rng([seed, index, 1])
            noise = rng.standard_normal((1, 80, frames), dtype=np.float32)
        flow = self.flow(speech, voice, noise, n_steps)
        hift = self.vocode(flow.mel, draws.hift, seed=seed * 1000 + index)
        wav = host_hift.apply_trim_fade(hift.wav, self.arrays["hift"].get("trim_fade"))
        return flow, hift, wav

    # -- text to speech -------------------------------------------------------------------

    def chunks(self, text: str) -> list[Any]:
        if self.tokenizer is None:
            raise UserError(f"{self.path} has no {TOKENIZER}: re-export it from a snapshot")
        return self.tokenizer.chunks(text, self.config.text_budget)

    def synthesize(
        self,
        chunk: Any,
        voice: Any,
        options: Any,
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
        seeded = self.draws_type.from_seed(seed, index)
        draws = draws or seeded
        # `is None`, not `or`: given uniforms may be an array, whose truth value numpy refuses.
        uniforms = seeded.uniforms if draws.uniforms is None else draws.uniforms
        t3 = self.t3(chunk.ids, voice, options, uniforms, forced_tokens, on_token)
        speech = self.speech_tokens_for_s3gen(t3.tokens)
        flow = hift = None
        wav = np.zeros(0, np.float32)
        if speech.size:
            flow, hift, wav = self.s3gen(speech, voice, draws, options.n_steps, seed, index)
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
        options: Any,
        *,
        listener: SpeakListener | None = None,
        pool: WorkerPool[Any] | None = None,
        chunks: list[Any] | None = None,
    ) -> SpeakResult:
        """`text` to one float32 waveform at 24 kHz (chunks joined), and each chunk's result;
        the speak half's one signature (`conversion/core/speak.py`).

        `pool` (pipelines over this same bundle) speaks chunks side by side — one sentence's
        vocoder runs while T3 draws the next; each chunk's draws come from (`options.seed`, its
        index) alone, so the audio is the same for any number of workers. `listener.audio` gets
        each chunk's waveform in order as soon as it and every earlier one are ready;
        `listener.step` a line every `TOKEN_REPORT_EVERY` speech tokens drawn."""
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

        def work(pipeline: S3GenPipeline, i: int, chunk: Any) -> ChunkResult:
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
