"""The speak half of the model contract: one shape for turning text into audio with a bundle.

    flags ─▶ the model's options (a small dataclass, checked before any weights load)
    weights ─▶ bundle ─▶ `port.open_pipeline(bundle, isolate)` in a `WorkerPool`
    pipeline.speak(text, options, on_audio=, on_progress=, on_step=, pool=) ─▶ `SpeakResult`

`ModelPort` (port.py) is the export half and the hooks that place a pipeline; a loaded pipeline
(`conversion/<model>/pipeline.py`) is `SpeakingPipeline`. `voxport speak MODEL`
(`conversion/cli/speak.py`) is the one caller that writes a wav from it; benches, fixtures and
tests call the same `speak`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

# `on_audio(piece)`: the utterance's samples in order, as soon as each piece is ready; the pieces
# end to end are `SpeakResult.audio`.
OnAudio = Callable[[np.ndarray], None]
# `on_progress(done, total, what)`: pieces (chunks, sentences) done of `total`; called once with
# done 0 before the first, then after each (`what` names the piece just spoken).
OnProgress = Callable[[int, int, str], None]
# `on_step(line)`: a line about the work inside one piece (tokens or frames drawn so far).
OnStep = Callable[[str], None]


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
    # Seconds from the call to the first audio handed to `on_audio` and to the end, where the
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

    `pool` (a `WorkerPool` of pipelines over this same bundle, this one its worker 0) lets a
    model compute pieces side by side; the audio is the same for any number of workers."""

    sample_rate: int

    def speak(
        self,
        text: str,
        options: Any,
        *,
        on_audio: OnAudio | None = None,
        on_progress: OnProgress | None = None,
        on_step: OnStep | None = None,
        pool: Any = None,
    ) -> SpeakResult: ...

    def close(self) -> None: ...
