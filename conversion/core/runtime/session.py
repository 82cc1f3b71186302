"""A synchronous Session over the Core AI runtime.

`Session` loads a bundle once (each asset lowered once per process into a folder of its own,
`lowering.LoweredFolder` — the lowering costs 0.1–0.5 s), calls functions by name with numpy
arrays, converts dtypes explicitly (int64 ids -> int32, which the runtime requires) and owns
state arrays (KV caches) per graph. The runtime is async; the session drives it on a private
event loop so callers stay plain Python.

`IsolatedSession` (``isolated_session.py``) runs a `Session` in a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from conversion.core import bundle_lock, errors
from conversion.core.bundle import Manifest, check_key, load_manifest
from conversion.core.errors import InputSpecError
from conversion.core.runtime.lowering import (
    LOWERED_PREFIX as LOWERED_PREFIX,  # its old home: importers name it here
)
from conversion.core.runtime.lowering import LoweredFolder
from conversion.core.runtime.program_check import check_asset

_INT32 = np.iinfo(np.int32)


@contextlib.contextmanager
def _captured_stderr(enabled: bool = True) -> Iterator[Path | None]:
    """Send fd 2 to a temp file (the runtime logs each function load there); replay on error."""
    if not enabled:
        yield None
        return
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield None
        except BaseException:
            os.dup2(saved, 2)
            tmp.seek(0)
            os.write(2, tmp.read()[-4000:])
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def to_runtime_array(name: str, value: Any, desc: Mapping[str, Any]) -> np.ndarray:
    """Convert one input to the function's declared dtype and check its shape.

    Only lossless or explicitly documented casts are made: int64 -> int32 (range-checked),
    float64 -> float32/16, float32 -> float16 for fp16 graphs. Anything else is an error.
    """
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    want = np.dtype(desc["dtype"])
    if arr.dtype != want:
        if arr.dtype.kind in "iu" and want == np.int32:
            if arr.size and (arr.min() < _INT32.min or arr.max() > _INT32.max):
                raise InputSpecError(f"input '{name}': values do not fit int32")
            arr = arr.astype(np.int32)
        elif arr.dtype.kind == "f" and want.kind == "f":
            arr = arr.astype(want)
        elif arr.dtype == np.bool_ and want.kind in "fi":
            arr = arr.astype(want)
        else:
            raise InputSpecError(f"input '{name}': dtype {arr.dtype}, the graph wants {want}")
    shape = tuple(desc["shape"])
    if arr.shape != shape:
        raise InputSpecError(
            f"input '{name}': shape {list(arr.shape)}, the graph wants {list(shape)} "
            "(pad to the bucket with conversion.core.host.buckets.pad_to)"
        )
    return np.ascontiguousarray(arr)


def open_bundle(
    bundle: Path, verify: bool, key: dict | str | None
) -> tuple[bundle_lock.Use, Manifest]:
    """Hold `bundle` (no other process replaces it until the hold is released), read its
    manifest and check that it holds the graphs of `key` (default: the key this process's
    `ensure_bundle` asked for there)."""
    use = bundle_lock.Use(bundle)
    try:
        manifest = load_manifest(bundle, verify=verify)
        check_key(bundle, manifest, key if key is not None else bundle_lock.expected(bundle))
    except BaseException:
        use.release()
        raise
    return use, manifest


class GraphSession(Protocol):
    """What a pipeline runs its graphs through: `Session` (in process), `IsolatedSession` (a
    runtime child), `TimedSession` (either, timed) and the stand-ins a test, a fixture writer
    or a mutant puts in their place (`StandInSession`). The Python twin of Swift's
    `GraphRunner`."""

    manifest: Manifest

    def run(
        self, graph: str, function: str, inputs: Mapping[str, Any], state: str = "default"
    ) -> dict[str, np.ndarray]: ...

    def reset_state(self, graph: str, key: str = "default") -> None: ...

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        """Give the runtime's leaked output buffers back past `limit_mb` (restart a child);
        True when it did."""
        ...

    def close(self) -> None: ...


class StandInSession:
    """Base of a session that computes nothing on the runtime (a recorder, a replay, a
    counter): it has no leaked buffers to give back."""

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        return False


class Session:
    """Load a bundle once; call its functions synchronously with numpy arrays.

    While it is open the bundle folder is held (`bundle_lock`): another process's export of
    the same folder waits for `close`. `key` (a manifest key or its digest) is what the caller
    asked for; a bundle holding other graphs is a `BundleKeyMismatchError`, never a silent run.
    """

    def __init__(
        self,
        bundle: Path | str,
        graphs: list[str] | None = None,
        verify: bool = True,
        quiet: bool = True,
        key: dict | str | None = None,
    ) -> None:
        import coreai  # noqa: F401  (import errors surface here, not mid-call)

        self.bundle = Path(bundle)
        self._use, self.manifest = open_bundle(self.bundle, verify, key)
        self.quiet = quiet
        self._verify = verify
        names = list(self.manifest.graphs) if graphs is None else list(graphs)
        unknown = [g for g in names if g not in self.manifest.graphs]
        if unknown:
            self._use.release()
            raise errors.UserError(
                f"no graph(s) {unknown} in {self.bundle} (has: {sorted(self.manifest.graphs)})"
            )
        self._loop = asyncio.new_event_loop()
        self._stack = contextlib.AsyncExitStack()
        self._executables: dict[str, Any] = {}
        self._functions: dict[tuple[str, str], Any] = {}
        self._states: dict[tuple[str, str], dict[str, Any]] = {}
        self._lowering = LoweredFolder()
        try:
            for g in names:
                self.load_graph(g)
        except BaseException:
            self.close()
            raise

    def load_graph(self, graph: str) -> None:
        """Lower one asset for this process (done once; its functions load on first call)."""
        from coreai.authoring.asset import AIModelAsset

        if graph in self._executables:
            return
        if graph not in self.manifest.graphs:
            raise errors.UserError(f"no graph '{graph}' (has: {sorted(self.manifest.graphs)})")
        path = self.bundle / self.manifest.graphs[graph]["asset"]
        # The runtime aborts the process on a program it cannot read: refused here first.
        check_asset(path, full=self._verify)
        with _captured_stderr(self.quiet), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            asset = AIModelAsset.load(path)
            lowered = self._lowering.lower(asset, graph, self._stack)
            self._executables[graph] = self._loop.run_until_complete(lowered)

    def discard_lowered(self) -> None:
        """Remove this session's lowered assets (the process is about to end, or closed)."""
        self._lowering.discard()

    # -- functions ---------------------------------------------------------------------------
    def graphs(self) -> list[str]:
        return list(self._executables)

    def functions(self, graph: str) -> list[str]:
        return list(self.manifest.graphs[graph]["functions"])

    def function(self, graph: str, function: str):
        """The loaded coreai.runtime function (loaded once, on first use)."""
        key = (graph, function)
        fn = self._functions.get(key)
        if fn is None:
            self.manifest.function(graph, function)
            if graph not in self._executables:
                raise errors.UserError(f"graph '{graph}' was not loaded in this session")
            with _captured_stderr(self.quiet):
                fn = self._executables[graph].load_function(function)
            self._functions[key] = fn
        return fn

    # -- state -------------------------------------------------------------------------------
    def _state_for(self, graph: str, function: str, key: str) -> dict[str, Any] | None:
        descs = self.manifest.function(graph, function)["states"]
        if not descs:
            return None
        state = self._states.get((graph, key))
        if state is None:
            state = self._new_state(descs)
            self._states[(graph, key)] = state
        return state

    @staticmethod
    def _new_state(descs: list[dict]) -> dict[str, Any]:
        from coreai.runtime import NDArray

        return {d["name"]: NDArray(np.zeros(d["shape"], np.dtype(d["dtype"]))) for d in descs}

    def reset_state(self, graph: str, key: str = "default") -> None:
        """Zero a graph's state (a fresh KV cache); the next call starts from it."""
        self._states.pop((graph, key), None)

    def read_state(self, graph: str, key: str = "default") -> dict[str, np.ndarray]:
        """A copy of the state arrays as they are now (re-read after every call)."""
        state = self._states.get((graph, key), {})
        return {k: np.array(v.numpy()) for k, v in state.items()}

    # -- calls -------------------------------------------------------------------------------
    def run(
        self,
        graph: str,
        function: str,
        inputs: Mapping[str, Any],
        state: str = "default",
    ) -> dict[str, np.ndarray]:
        """Call `graph.function` with named inputs; state `state` is passed and kept."""
        from coreai.runtime import NDArray

        desc = self.manifest.function(graph, function)
        expected = [d["name"] for d in desc["inputs"]]
        if set(inputs) != set(expected):
            missing = sorted(set(expected) - set(inputs))
            extra = sorted(set(inputs) - set(expected))
            raise InputSpecError(
                f"{graph}.{function}: inputs are {expected}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else "")
            )
        args = {
            d["name"]: NDArray(to_runtime_array(d["name"], inputs[d["name"]], d))
            for d in desc["inputs"]
        }
        fn = self.function(graph, function)
        st = self._state_for(graph, function, state)
        if st is None:
            out = self._loop.run_until_complete(fn(args))
        else:
            out = self._loop.run_until_complete(fn(args, state=st))
        return {k: np.array(v.numpy()) for k, v in out.items()}

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        """An in-process runtime cannot give its leaked buffers back: nothing to do."""
        return False

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._use.release()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(self._stack.aclose())
        self._executables.clear()
        self._functions.clear()
        self._states.clear()
        # The thread that wrote the lowered assets ran runtime code: join it now, while the
        # runtime is whole, rather than in the interpreter's exit (see end_process).
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        self._loop.close()
        self.discard_lowered()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
