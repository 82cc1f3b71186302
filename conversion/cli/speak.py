"""`voxport speak MODEL TEXT -o OUT.wav`: the one speak verb, for every model with a port.

the model's flags ─▶ options (its cli.py's `speak_options`, checked first)
─▶ the snapshot (`port.resolve`) ─▶ `port.options_for_weights` (before any export)
─▶ the bundle (`port.ensure_bundle`) ─▶ a `WorkerPool` of `port.open_pipeline`
─▶ `port.options_for_pipeline` ─▶ `pipeline.speak` with one listener (`_Listener`): its audio
into the wav (`WavSink`: streamed or whole, never half a file), its pieces on a bar, its steps on
the console ─▶ `--timings`' JSON (models that time words) ─▶ one line: length, speed, pieces,
workers, first audio.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from conversion.core.errors import UserError
from conversion.core.host.audio_io import WavSink
from conversion.core.paths import write_text_file
from conversion.core.port import ModelPort
from conversion.core.progress import console, progress_steps
from conversion.core.speak import SpeakListener, SpeakResult


def speak(port: ModelPort, commands: ModuleType, args: argparse.Namespace) -> int:
    """Speak `args.text` with `port`'s bundle into `args.output` (checked writable, TEXT
    checked non-empty UTF-8 by the CLI before this runs)."""
    from conversion.core.runtime.workers import WorkerPool

    if args.timings is not None and not port.word_timings:
        raise UserError(f"{port.name} does not time its words: leave out --timings (kokoro does)")
    options = commands.speak_options(args, port.config(args.config))  # bad flags: now
    folder, config = port.resolve(args.weights, args.config, args.weights_seed)
    options = port.options_for_weights(options, folder, config)  # e.g. an unknown voice: now
    bundle = port.ensure_bundle(
        folder, config, args.config, args.dtype, path=args.bundle, overwrite=args.overwrite
    )
    workers = args.workers
    if port.max_speak_workers is not None:
        workers = max(1, min(workers, port.max_speak_workers))
    with WorkerPool(lambda isolate: port.open_pipeline(bundle, isolate), workers) as pool:
        pipeline = pool.pipeline
        options = port.options_for_pipeline(options, pipeline, folder, config)
        start = time.perf_counter()
        with (
            _PieceBar(f"speak {port.name}") as bar,
            WavSink(args.output, pipeline.sample_rate, args.stream, start) as sink,
        ):
            result = pipeline.speak(args.text, options, listener=_Listener(sink, bar), pool=pool)
            sink.finish(result.audio)
        first_s = sink.first_audio_s
    seconds = time.perf_counter() - start
    if args.timings is not None:
        write_text_file(args.timings, json.dumps(result.timings_json(), ensure_ascii=False) + "\n")
    print(spoken_line(args.output, result, seconds, first_s, args.stream, workers))
    if port.is_random(folder):
        print("note: random weights: this audio is noise, not speech", file=sys.stderr)
    return 0


def spoken_line(
    target: Path,
    result: SpeakResult,
    seconds: float,
    first_s: float | None,
    stream: bool,
    workers: int,
) -> str:
    """What `speak` prints: audio length, speed, the model's summary, workers, and the time to
    first audio (none when no audio came: e.g. the end of speech drawn at the first frame)."""
    dur = result.duration_s
    first = (
        "no audio: nothing was spoken (the end of speech came at once)"
        if first_s is None or result.audio.size == 0
        else f"time to first audio {first_s:.2f} s ({'streamed' if stream else 'whole utterance'})"
    )
    summary = f"{result.summary}, " if result.summary else ""
    return (
        f"wrote {target}: {dur:.2f} s of audio in {seconds:.1f} s "
        f"(real-time factor {seconds / max(dur, 1e-9):.2f}, {summary}{workers} worker(s)); {first}"
    )


class _Listener(SpeakListener):
    """The CLI's listener: audio into the wav, pieces on the bar, steps on the console."""

    def __init__(self, sink: WavSink, bar: _PieceBar) -> None:
        self.sink, self.bar = sink, bar

    def audio(self, piece: np.ndarray) -> None:
        self.sink.audio(piece)

    def progress(self, done: int, total: int, what: str) -> None:
        self.bar.progress(done, total, what)

    def step(self, line: str) -> None:
        console.print(line)


class _PieceBar:
    """A progress bar over a speak's pieces, opened when the pipeline first says how many."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._cm = None
        self._bar = None

    def progress(self, done: int, total: int, what: str) -> None:
        if self._bar is None:
            self._cm = progress_steps(total, self.label)
            self._bar = self._cm.__enter__()
        if done > 0:
            self._bar.step(what)

    def __enter__(self) -> _PieceBar:
        return self

    def __exit__(self, *exc) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)
