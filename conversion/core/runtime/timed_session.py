"""`TimedSession`: any `GraphSession` with every call timed (moved out of `session.py`, which
still exports it)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from conversion.core.runtime.session import GraphSession


class TimedSession:
    """A Session (or IsolatedSession) that times every call, per `graph.function`.

    Pipelines run their graphs through one so benches and reports can say where the time went
    and how many runtime calls a second of audio costs. fp16 graphs answer in float16; the host
    works in float32, so outputs are widened here.
    """

    def __init__(self, session: GraphSession) -> None:
        self._session = session
        self.manifest = session.manifest
        self.bundle = session.bundle
        self.function_ms: dict[str, list[float]] = {}  # "graph.function" -> each call's ms
        # Each function's first inputs (copies): what `bench --profile` calls it with again.
        self.first_inputs: dict[str, dict[str, np.ndarray]] = {}
        self._mark: dict[str, int] = {}

    def run(self, graph: str, function: str, inputs: Mapping[str, Any], state: str = "default"):
        start = time.perf_counter()
        out = self._session.run(graph, function, inputs, state=state)
        ms = (time.perf_counter() - start) * 1e3
        key = f"{graph}.{function}"
        self.function_ms.setdefault(key, []).append(ms)
        if key not in self.first_inputs:
            self.first_inputs[key] = {k: np.array(v) for k, v in inputs.items()}
        return {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in out.items()}

    def reset_state(self, graph: str, key: str = "default") -> None:
        self._session.reset_state(graph, key)

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        """An IsolatedSession's child restarted past `limit_mb` of outputs (see there); an
        in-process Session cannot give the runtime's leak back and is left as it is."""
        return self._session.recycle_if_leaking(limit_mb)

    def since_mark(self) -> tuple[dict[str, float], dict[str, int]]:
        """ms and calls per graph since the last call (or since the start); sets a new mark."""
        ms: dict[str, float] = {}
        calls: dict[str, int] = {}
        for key, times in self.function_ms.items():
            new = times[self._mark.get(key, 0) :]
            if new:
                graph = key.split(".", 1)[0]
                ms[graph] = ms.get(graph, 0.0) + sum(new)
                calls[graph] = calls.get(graph, 0) + len(new)
            self._mark[key] = len(times)
        return ms, calls

    def close(self) -> None:
        self._session.close()
