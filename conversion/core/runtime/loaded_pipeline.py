"""A bundle opened for a pipeline: its manifest checked, host data loaded, one timed session."""

from __future__ import annotations

from pathlib import Path

from conversion.core.bundle import Manifest, load_manifest
from conversion.core.errors import UserError
from conversion.core.runtime.isolated_session import IsolatedSession
from conversion.core.runtime.session import Session
from conversion.core.runtime.timed_session import TimedSession


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

    def load_host(self) -> None:
        """Read the bundle's host-side files (tables, voices, tokenizer); override."""

    def close(self) -> None:
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
