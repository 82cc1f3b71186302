"""Text to speech over an Audio8 bundle: prompt, frame loop, streamed or whole codec decode.

    text ─▶ pieces that fit the KV budget ─▶ prompt [11, P] (plain, or with a voice's codes)
    prompt ─▶ prefill windows + one `frame` call per 46 ms frame (host_frames) ─▶ codes [10, T]
    codes ─▶ codec windows of W frames (160 published) ─▶ 44.1 kHz audio

Streaming decodes a window as soon as its frames exist — the first after W frames, then one
per W − 32 new frames, each window re-reading the last 32 frames as context — so audio starts
before generation ends. The whole-utterance path decodes once after the last frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from conversion.core.errors import UserError
from conversion.core.loaded_bundle import LoadedBundle

from .ar import host as host_frames
from .codec import host as host_codec
from .codec.model import CodecConfig
from .config import GENERATION, Audio8Config
from .export import GRAPHS
from .prompt import build_prompt, split_text
from .reference import seeded_uniforms
from .tokenizer import TOKENIZER_FILE, load_tokenizer
from .voice import Voice

CONTEXT_FRAMES = 32  # the published 160-frame window; a smaller (reduced) window keeps a quarter


def context_frames(window: int) -> int:
    return min(CONTEXT_FRAMES, window // 4)


@dataclass
class PieceResult:
    text: str
    prompt_columns: int
    frames: host_frames.FrameLoopResult
    wav: np.ndarray
    decode: host_codec.DecodeReport
    first_audio_s: float | None = None  # from the piece's start, when streaming
    seconds: float = 0.0


@dataclass
class SpeakResult:
    audio: np.ndarray
    pieces: list[PieceResult] = field(default_factory=list)
    first_audio_s: float | None = None
    seconds: float = 0.0


class Audio8Bundle(LoadedBundle):
    model = "audio8_tts"

    def load_host(self) -> None:
        self.graphs = [g for g in GRAPHS if g in self.manifest.graphs]
        self.config = Audio8Config.from_json(self.manifest.config["config"])
        codec = dict(self.manifest.config["codec_config"])
        self.codec_config = CodecConfig(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in codec.items()}
        )
        tok = self.path / TOKENIZER_FILE
        self.tokenizer = load_tokenizer(self.path) if tok.exists() else None

    @property
    def codec_window(self) -> int:
        return host_codec.graph_frames(self.session)

    # -- steps -----------------------------------------------------------------------------

    def pieces(self, text: str, max_frames: int, voice: Voice | None = None) -> list[str]:
        if self.tokenizer is None:
            raise UserError(f"{self.path} has no {TOKENIZER_FILE}: re-export it from a snapshot")
        return split_text(
            self.tokenizer,
            self.config,
            text,
            max_frames,
            reference_frames=0 if voice is None else voice.frames,
            reference_text=None if voice is None else voice.text,
        )

    def prompt(self, text: str, voice: Voice | None, max_frames: int) -> np.ndarray:
        return build_prompt(
            self.tokenizer,
            self.config,
            text,
            reference_codes=None if voice is None else voice.codes,
            reference_text=None if voice is None else voice.text,
            max_new_frames=max_frames,
        )

    def generate(self, prompt, max_frames, uniforms, forced=None, on_frame=None):
        return host_frames.generate(
            self.session, prompt, max_frames, uniforms, self.config, forced, on_frame=on_frame
        )

    def decode_whole(self, codes: np.ndarray) -> tuple[np.ndarray, host_codec.DecodeReport]:
        return host_codec.decode_whole(
            self.session, codes, self.codec_config, context=context_frames(self.codec_window)
        )

    # -- text to speech ------------------------------------------------------------------------

    def speak(
        self,
        text: str,
        voice: Voice | None = None,
        seed: int = 0,
        max_frames: int | None = None,
        stream: bool = False,
        on_audio: Callable[[np.ndarray], None] | None = None,
        on_frame: Callable[[int, int], None] | None = None,
    ) -> SpeakResult:
        """`text` to 44.1 kHz float32 audio; with `stream`, `on_audio` gets each decoded chunk."""
        max_frames = max_frames or min(GENERATION.max_new_frames, self.config.max_seq_len // 4)
        start = time.perf_counter()
        result = SpeakResult(audio=np.zeros(0, np.float32))
        chunks: list[np.ndarray] = []
        for i, piece in enumerate(self.pieces(text, max_frames, voice)):
            self.between_utterances()  # the KV state is reset per piece: a safe restart point
            t0 = time.perf_counter()
            prompt = self.prompt(piece, voice, max_frames)
            uniforms = seeded_uniforms(seed * 1000 + i, self.config)
            first: list[float] = []

            def emit(wav: np.ndarray, t0: float = t0, first: list = first) -> None:
                if not first:
                    first.append(time.perf_counter() - t0)
                    if result.first_audio_s is None:
                        result.first_audio_s = time.perf_counter() - start
                chunks.append(wav)
                if on_audio is not None:
                    on_audio(wav)

            def frame_done(step: int, _frame) -> None:
                if on_frame is not None:
                    on_frame(step + 1, max_frames)

            if stream:
                streamer = _Streamer(self, emit)
                loop = streamer.run(prompt, max_frames, uniforms, frame_done)
                piece_wav = np.concatenate(streamer.emitted) if streamer.emitted else np.zeros(0)
                report = streamer.report
            else:
                loop = self.generate(prompt, max_frames, uniforms, on_frame=frame_done)
                piece_wav, report = self.decode_whole(loop.codes)
                emit(piece_wav)
            # clamped draws counted once per frame (streamed windows re-read their context)
            counts = host_codec.DecodeReport()
            host_codec.prepare_codes(loop.codes, self.codec_config, counts)
            report.frames, report.clamped = counts.frames, counts.clamped
            report.clamped_by_book = counts.clamped_by_book
            result.pieces.append(
                PieceResult(
                    text=piece,
                    prompt_columns=prompt.shape[1],
                    frames=loop,
                    wav=np.asarray(piece_wav, np.float32),
                    decode=report,
                    first_audio_s=first[0] if first else None,
                    seconds=time.perf_counter() - t0,
                )
            )
        result.audio = np.concatenate(chunks).astype(np.float32) if chunks else result.audio
        result.seconds = time.perf_counter() - start
        return result


class _Streamer:
    """Decodes codec windows while the frame loop runs (window W, context 32)."""

    def __init__(self, bundle: Audio8Bundle, emit) -> None:
        self.bundle = bundle
        self.report = host_codec.DecodeReport()
        self.emit_fn = emit
        self.window = bundle.codec_window
        self.context = context_frames(self.window)
        self.done = 0
        self.emitted: list[np.ndarray] = []
        self.columns: list[np.ndarray] = []

    def _decode(self, codes: np.ndarray) -> Iterator[np.ndarray]:
        """Windows from the first not-yet-emitted frame to the end of `codes`."""
        b = self.bundle
        total = codes.shape[1]
        while self.done < total:
            start = max(0, self.done - self.context)
            end = min(start + self.window, total)
            part = next(
                host_codec.decode_stream(
                    b.session, codes[:, start:end], b.codec_config, self.window, 0, self.report
                )
            )
            fs = b.codec_config.frame_size
            yield part[(self.done - start) * fs : (end - start) * fs]
            self.done = end

    def _ready(self) -> bool:
        return len(self.columns) - self.done >= self._step()

    def run(self, prompt, max_frames, uniforms, on_frame):
        def frame_done(step, frame):
            if frame.semantic != self.bundle.config.eos_token_id:
                self.columns.append(frame.codes)
            on_frame(step, frame)
            if self._ready():
                codes = np.stack(self.columns, axis=1)
                for wav in self._decode(codes[:, : self.done + self._step()]):
                    self._emit(wav)

        loop = self.bundle.generate(prompt, max_frames, uniforms, on_frame=frame_done)
        if loop.codes.shape[1] > self.done:
            for wav in self._decode(loop.codes):
                self._emit(wav)
        return loop

    def _step(self) -> int:
        return self.window if self.done == 0 else self.window - self.context

    def _emit(self, wav: np.ndarray) -> None:
        self.emitted.append(wav)
        self.emit_fn(wav)
