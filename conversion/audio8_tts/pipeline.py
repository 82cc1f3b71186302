"""Text to speech over an Audio8 bundle: prompt, frame loop, streamed or whole codec decode.

    text ─▶ pieces that fit the KV budget ─▶ prompt [11, P] (plain, or with a voice's codes)
    prompt ─▶ prefill windows + one `frame` call per 46 ms frame (host_frames) ─▶ codes [10, T]
    codes ─▶ codec windows of W frames (160 published) ─▶ 44.1 kHz audio

Streaming decodes a window as soon as its frames exist — the first after W frames, then one
per W − 32 new frames, each window re-reading the last 32 frames as context — so audio starts
before generation ends. The whole-utterance path decodes once after the last frame: the same
windows (`host_codec.window_plan`), so both give the same samples.

With two workers (`speak(pool=...)`, `--workers 2`): worker 0 draws the frames and worker 1, a
runtime child of its own, decodes each window in a thread as soon as its frames exist, in
order, streamed or not — so the whole-utterance path no longer waits for the last frame to
start decoding. Each window's samples are what one worker decodes: the audio is bit-identical.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from conversion.core.errors import UserError
from conversion.core.runtime.loaded_pipeline import LoadedPipeline
from conversion.core.runtime.workers import Background, WorkerPool
from conversion.core.speak import SpeakListener, SpeakResult

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
DECODER = 1  # the worker that decodes codec windows when there are two or more
MAX_WORKERS = 2  # one draws frames, one decodes windows: a third would have nothing to do
FRAME_REPORT_EVERY = 50  # frames (2.3 s of audio)


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


@dataclass(frozen=True)
class SpeakOptions:
    """What a speak asks of Audio8: the voice (None: plain; registered from `ref` and its
    transcript `ref_text` by `Audio8Port.options_for_pipeline` when given), the draws' seed, the
    frame budget (None: the config's), and whether codec windows are decoded as frames arrive
    (`stream`) or once per piece."""

    voice: Voice | None = None
    seed: int = 0
    max_frames: int | None = None
    stream: bool = False
    ref: str | None = None
    ref_text: str | None = None


class Audio8Pipeline(LoadedPipeline):
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
    def sample_rate(self) -> int:
        return self.codec_config.sample_rate

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
        options: SpeakOptions,
        *,
        listener: SpeakListener | None = None,
        pool: WorkerPool[Audio8Pipeline] | None = None,
    ) -> SpeakResult:
        """`text` to 44.1 kHz float32 audio, the speak half's one signature
        (`conversion/core/speak.py`); with `options.stream`, `listener.audio` gets each decoded
        chunk (else each piece's audio once it is whole); `listener.step` a line every
        `FRAME_REPORT_EVERY` frames.

        `pool`: workers over this same bundle, this one its worker 0. With two or more, worker
        `DECODER` decodes the codec windows while this one draws the frames, and
        `listener.audio` is called from that worker's thread (in order, one call at a time);
        with one (or no pool) everything runs here, windows between frames. The audio is the
        same. (Pieces run one after another on this worker, the decoder beside it: not
        `speak_in_order`'s chunks spread over the workers.)"""
        listener = SpeakListener() if listener is None else listener
        max_frames = options.max_frames or min(
            GENERATION.max_new_frames, self.config.max_seq_len // 4
        )
        speech = _Speech(self, max_frames, options.stream, listener)
        pieces = self.pieces(text, max_frames, options.voice)
        listener.progress(0, len(pieces), "")
        voice, seed = options.voice, options.seed
        if pool is None or pool.size == 1:
            for i, piece in enumerate(pieces):
                speech.inline(i, piece, voice, seed)
                listener.progress(i + 1, len(pieces), piece[:32])
        else:
            with pool.background(DECODER) as decoder:
                for i, piece in enumerate(pieces):
                    speech.beside(i, piece, voice, seed, decoder)
                    listener.progress(i + 1, len(pieces), piece[:32])
        return speech.finish()


@dataclass(frozen=True)
class _Window:
    """One codec window: codes [10, n <= W], the first `context` of them frames already
    emitted (decoded again for the transformers' context, their samples dropped)."""

    codes: np.ndarray
    context: int

    def decode(self, pipeline: Audio8Pipeline, report: host_codec.DecodeReport) -> np.ndarray:
        """The window's new samples, through `pipeline`'s codec graph (one call)."""
        part = next(
            host_codec.decode_stream(
                pipeline.session,
                self.codes,
                pipeline.codec_config,
                pipeline.codec_window,
                0,
                report,
            )
        )
        fs = pipeline.codec_config.frame_size
        return part[self.context * fs : self.codes.shape[1] * fs]


class _Windows:
    """The streaming windows over frames as they come: the first after W frames, then one per
    W − context new frames, each starting `context` frames before its first new one; after the
    last frame, the rest. Over a whole utterance they are `host_codec.window_plan(T, W,
    context)`: the windows `decode_whole` decodes."""

    def __init__(self, window: int) -> None:
        self.window, self.context = window, context_frames(window)
        self.done = 0  # frames in a window already
        self.columns: list[np.ndarray] = []

    def _step(self) -> int:
        return self.window if self.done == 0 else self.window - self.context

    def add(self, codes: np.ndarray) -> list[_Window]:
        """One emitted frame's codes [10]; the window it completes, if it does."""
        self.columns.append(codes)
        if len(self.columns) - self.done < self._step():
            return []
        return self.rest(np.stack(self.columns, axis=1)[:, : self.done + self._step()])

    def rest(self, codes: np.ndarray) -> list[_Window]:
        """The windows from the first frame not yet in one to the end of `codes` [10, T]."""
        out = []
        while self.done < codes.shape[1]:
            start = max(0, self.done - self.context)
            end = min(start + self.window, codes.shape[1])
            out.append(_Window(codes[:, start:end], self.done - start))
            self.done = end
        return out


@dataclass
class _Piece:
    """One piece as it is spoken: its frames, and its decoded chunks with their report (filled
    by the decode worker's thread when there is one)."""

    text: str
    t0: float
    prompt_columns: int = 0
    loop: host_frames.FrameLoopResult | None = None
    chunks: list[np.ndarray] = field(default_factory=list)
    report: host_codec.DecodeReport = field(default_factory=host_codec.DecodeReport)
    first_audio_s: float | None = None
    seconds: float = 0.0

    def result(self, cfg: CodecConfig) -> PieceResult:
        # clamped draws counted once per frame (streamed windows re-read their context)
        counts = host_codec.DecodeReport()
        host_codec.prepare_codes(self.loop.codes, cfg, counts)
        report = self.report
        report.frames, report.clamped = counts.frames, counts.clamped
        report.clamped_by_book = counts.clamped_by_book
        wav = np.concatenate(self.chunks) if self.chunks else np.zeros(0)
        return PieceResult(
            text=self.text,
            prompt_columns=self.prompt_columns,
            frames=self.loop,
            wav=np.asarray(wav, np.float32),
            decode=report,
            first_audio_s=self.first_audio_s,
            seconds=self.seconds,
        )


def _between_utterances(pipeline: Audio8Pipeline) -> None:
    pipeline.between_utterances()


def _has_padding(codes: np.ndarray, cfg: CodecConfig) -> bool:
    """Frames `decode_whole` would not decode (a negative code; `generate` never draws one)."""
    return host_codec.prepare_codes(codes, cfg).shape[1] != codes.shape[1]


class _Speech:
    """One `speak` call: its pieces in order, and the audio handed on as it comes."""

    def __init__(
        self, pipeline: Audio8Pipeline, max_frames: int, stream: bool, listener: SpeakListener
    ):
        self.pipeline, self.max_frames, self.stream = pipeline, max_frames, stream
        self.listener = listener
        self.start = time.perf_counter()
        self.result = SpeakResult(np.zeros(0, np.float32), pipeline.codec_config.sample_rate)
        self.audio: list[np.ndarray] = []
        self.pieces: list[_Piece] = []

    def _begin(self, i: int, text: str, voice: Voice | None, seed: int):
        """The piece's record, prompt and draws (after its worker(s) reset for it)."""
        piece = _Piece(text, time.perf_counter())
        prompt = self.pipeline.prompt(text, voice, self.max_frames)
        piece.prompt_columns = prompt.shape[1]
        self.pieces.append(piece)
        return piece, prompt, seeded_uniforms(seed * 1000 + i, self.pipeline.config)

    def emit(self, piece: _Piece, wav: np.ndarray) -> None:
        if piece.first_audio_s is None:
            piece.first_audio_s = time.perf_counter() - piece.t0
            if self.result.first_audio_s is None:
                self.result.first_audio_s = time.perf_counter() - self.start
        self.audio.append(wav)
        self.listener.audio(wav)

    def frame_done(self, step: int, _frame) -> None:
        if (step + 1) % FRAME_REPORT_EVERY == 0:
            self.listener.step(f"  frames: {step + 1} (budget {self.max_frames})")

    def inline(self, i: int, text: str, voice: Voice | None, seed: int) -> None:
        """One piece in this process: its windows decoded between frames (streamed) or after
        the last one (`decode_whole`)."""
        b = self.pipeline
        b.between_utterances()  # the KV state is reset per piece: a safe restart point
        piece, prompt, uniforms = self._begin(i, text, voice, seed)
        if self.stream:
            streamer = _Streamer(b, piece, partial(self.emit, piece))
            piece.loop = streamer.run(prompt, self.max_frames, uniforms, self.frame_done)
        else:
            piece.loop = b.generate(prompt, self.max_frames, uniforms, on_frame=self.frame_done)
            wav, piece.report = b.decode_whole(piece.loop.codes)
            piece.chunks.append(wav)
            self.emit(piece, wav)
        piece.seconds = time.perf_counter() - piece.t0

    def beside(self, i: int, text: str, voice: Voice | None, seed: int, decoder: Background):
        """One piece over two workers: this one draws the frames while `decoder` decodes each
        window as soon as its frames exist (the streaming windows, streamed or not)."""
        b = self.pipeline
        b.between_utterances()
        decoder.submit(_between_utterances)  # runs after the last piece's windows
        piece, prompt, uniforms = self._begin(i, text, voice, seed)
        windows = _Windows(b.codec_window)

        def frame_done(step: int, frame) -> None:
            decoder.check()  # a failed window (or listener.audio) stops the frame loop
            if frame.semantic != b.config.eos_token_id:
                for window in windows.add(frame.codes):
                    decoder.submit(partial(self._decode, piece, window))
            self.frame_done(step, frame)

        piece.loop = b.generate(prompt, self.max_frames, uniforms, on_frame=frame_done)
        for window in windows.rest(piece.loop.codes):
            decoder.submit(partial(self._decode, piece, window))
        if not self.stream and _has_padding(piece.loop.codes, b.codec_config):
            decoder.submit(partial(self._decode_whole, piece))
        decoder.submit(partial(self._piece_done, piece))

    def _decode(self, piece: _Piece, window: _Window, pipeline: Audio8Pipeline) -> None:
        wav = window.decode(pipeline, piece.report)
        piece.chunks.append(wav)
        if self.stream:
            self.emit(piece, wav)

    def _decode_whole(self, piece: _Piece, pipeline: Audio8Pipeline) -> None:
        """What the one-worker path decodes when frames are padding: `decode_whole`'s windows
        over the frames it keeps, in place of the streaming ones."""
        wav, piece.report = pipeline.decode_whole(piece.loop.codes)
        piece.chunks[:] = [wav]

    def _piece_done(self, piece: _Piece, _pipeline: Audio8Pipeline) -> None:
        if not self.stream:
            wav = np.concatenate(piece.chunks) if piece.chunks else np.zeros(0, np.float32)
            self.emit(piece, wav)
        piece.seconds = time.perf_counter() - piece.t0

    def finish(self) -> SpeakResult:
        result = self.result
        result.pieces = [p.result(self.pipeline.codec_config) for p in self.pieces]
        if self.audio:
            result.audio = np.concatenate(self.audio).astype(np.float32)
        result.seconds = time.perf_counter() - self.start
        clamped = sum(p.decode.clamped for p in result.pieces)
        frames = sum(p.frames.codes.shape[1] for p in result.pieces)
        result.summary = (
            f"{len(result.pieces)} piece(s), {frames} frames, {clamped} codec draw(s) clamped"
        )
        return result


class _Streamer:
    """Decodes codec windows between frames in this process (window W, context 32)."""

    def __init__(self, pipeline: Audio8Pipeline, piece: _Piece, emit) -> None:
        self.pipeline, self.piece, self.emit = pipeline, piece, emit
        self.windows = _Windows(pipeline.codec_window)

    def _decode(self, windows: list[_Window]) -> None:
        for window in windows:
            wav = window.decode(self.pipeline, self.piece.report)
            self.piece.chunks.append(wav)
            self.emit(wav)

    def run(self, prompt, max_frames, uniforms, on_frame) -> host_frames.FrameLoopResult:
        eos = self.pipeline.config.eos_token_id

        def frame_done(step, frame):
            ready = self.windows.add(frame.codes) if frame.semantic != eos else []
            on_frame(step, frame)
            self._decode(ready)

        loop = self.pipeline.generate(prompt, max_frames, uniforms, on_frame=frame_done)
        self._decode(self.windows.rest(loop.codes))
        return loop
