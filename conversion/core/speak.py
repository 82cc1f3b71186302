"""The speak half of the model contract: one shape for turning text into audio with a bundle.

    flags ─▶ the model's options (a small dataclass, checked before any weights load)
    weights ─▶ bundle ─▶ `port.open_pipeline(bundle, isolate)` in a `WorkerPool`
    pipeline.speak(text, options, listener=, pool=) ─▶ `SpeakResult`

`ModelPort` (port.py) is the export half and the hooks that place a pipeline; a loaded pipeline
(`conversion/<model>/pipeline.py`) is `SpeakingPipeline`. What a speak says while it runs (its
audio piece by piece, pieces done, work inside a piece) goes down to one `SpeakListener` the
caller passes; nothing the pipeline is handed calls back up into it. `voxport speak MODEL`
(`conversion/cli/speak.py`) is the one caller that writes a wav from it (its listener feeds a
`WavSink`, a progress bar and the console); benches, fixtures and tests call the same `speak`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


class SpeakListener:
    """What hears a speak as it runs; every method does nothing here. A pipeline calls it, a
    caller subclasses it (the CLI's writes the wav, moves a bar and prints the steps)."""

    def audio(self, piece: np.ndarray) -> None:
        """The utterance's samples in order, as soon as each piece is ready; the pieces end to
        end are `SpeakResult.audio`."""

    def progress(self, done: int, total: int, what: str) -> None:
        """Pieces (chunks, sentences) done of `total`: once with `done` 0 before the first,
        then after each (`what` names the piece just spoken)."""

    def step(self, line: str) -> None:
        """A line about the work inside one piece (tokens or frames drawn so far)."""


@dataclass(frozen=True)
class WordTiming:
    """When one word (a G2P token: a word or a punctuation mark) is said, in seconds from the
    utterance's first sample."""

    text: str
    start: float
    end: float


@dataclass
class SpeakResult:
    """What every pipeline's `speak` returns."""

    audio: np.ndarray  # float32 mono, every piece joined
    sample_rate: int
    pieces: list[Any] = field(default_factory=list)  # the model's own per-piece results
    summary: str = ""  # what the model adds to the CLI's line: "3 chunk(s), 2 stopped on ..."
    # Seconds from the call to the first audio handed to `listener.audio` and to the end, where the
    # pipeline measures them itself (Audio8); the CLI measures its own around the call.
    first_audio_s: float | None = None
    seconds: float = 0.0
    # Each word's place in `audio`, for a model that knows it (`ModelPort.word_timings`);
    # None for one that does not (an empty list: it knows, and no word was timed).
    words: list[WordTiming] | None = None

    def timings_json(self) -> dict:
        """`voxport speak --timings`'s document."""
        words = self.words or []
        return {"words": [{"text": w.text, "start": w.start, "end": w.end} for w in words]}

    @property
    def duration_s(self) -> float:
        return self.audio.size / self.sample_rate


@runtime_checkable
class SpeakingPipeline(Protocol):
    """A loaded pipeline (`LoadedPipeline` subclass): its bundle's graphs, host data and session.

    `listener` (None: nobody) hears the audio, progress and steps as they come. `pool` (a
    `WorkerPool` of pipelines over this same bundle, this one its worker 0) lets a model compute
    pieces side by side; the audio is the same for any number of workers."""

    sample_rate: int

    def speak(
        self,
        text: str,
        options: Any,
        *,
        listener: SpeakListener | None = None,
        pool: Any = None,
    ) -> SpeakResult: ...

    def close(self) -> None: ...
