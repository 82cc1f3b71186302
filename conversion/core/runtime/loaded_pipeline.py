"""A bundle opened for a pipeline: its manifest checked, host data loaded, one timed session;
and the chunk loop every chunked speak shares (`speak_in_order`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from conversion.core.bundle import Manifest, load_manifest
from conversion.core.errors import UserError
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.session import Session
from conversion.core.runtime.timed_session import TimedSession
from conversion.core.runtime.workers import WorkerPool

if TYPE_CHECKING:
    from conversion.core.speak import SpeakListener

P = TypeVar("P", bound="LoadedPipeline")
T = TypeVar("T")  # a chunk
R = TypeVar("R")  # what a chunk speaks to


class LoadedPipeline:
    """Base of a model's pipeline class: set `model`, load host files in `load_host`.

    `isolate` runs the runtime in a child process (a Swift abort becomes an exception there).
    Host data is loaded before the session opens, so a bad bundle leaves no process behind.
    """

    model: str = ""
    # An isolated runtime child is restarted between utterances once it has answered this much
    # (the runtime leaks every output buffer: IsolatedSession.recycle_if_leaking). The child's
    # RSS grew ~1.5x its output bytes (audio8 reduced, 50 utterances): 24 MB keeps it < 50 MB.
    recycle_mb: float = 24.0

    def __init__(self, bundle: Path | str, isolate: bool = False) -> None:
        self.path = Path(bundle)
        manifest = load_manifest(self.path)
        if manifest.model != self.model:
            raise UserError(f"{self.path} is a '{manifest.model}' bundle, not {self.model}")
        self.manifest: Manifest = manifest
        self.load_host()
        raw = (
            IsolatedSession(self.path, verify=False)
            if isolate
            else Session(self.path, verify=False)
        )
        self.session = TimedSession(raw)

    def between_utterances(self) -> bool:
        """Where a pipeline starts an utterance (its graph states are reset there): give the
        runtime's leaked output buffers back by restarting an isolated child past
        `recycle_mb`. True when it restarted."""
        return self.session.recycle_if_leaking(self.recycle_mb)

    def speak_in_order(
        self: P,
        chunks: Sequence[T],
        work: Callable[[P, int, T], R],
        deliver: Callable[[int, R], None],
        label: Callable[[int, R], str],
        listener: SpeakListener,
        pool: WorkerPool[P] | None,
    ) -> list[R]:
        """A speak's chunk loop: `work(pipeline, i, chunk)` for every chunk, side by side over
        `pool`'s workers (None: here, one after another); `deliver(i, result)` (the model hands
        `listener` its audio there) in chunk order as soon as chunks 0..i are done, then
        `listener.progress(i + 1, n, label(i, result))`, after one `progress(0, n, "")` first.
        The results in chunk order."""
        listener.progress(0, len(chunks), "")

        def delivered(i: int, result: R) -> None:
            deliver(i, result)
            listener.progress(i + 1, len(chunks), label(i, result))

        return (pool or WorkerPool.inline(self)).map_in_order(
            list(enumerate(chunks)), lambda pipeline, item: work(pipeline, *item), delivered
        )

    def load_host(self) -> None:
        """Read the bundle's host-side files (tables, voices, tokenizer); override."""

    def close(self) -> None:
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
