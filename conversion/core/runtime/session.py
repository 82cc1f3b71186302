"""A synchronous Session over the Core AI runtime.

`Session` loads a bundle once (each asset lowered once per process into a folder of its own,
`lowering.LoweredFolder` — the lowering costs 0.1–0.5 s), calls functions by name with numpy
arrays, converts dtypes explicitly (int64 ids -> int32, which the runtime requires) and owns
state arrays (KV caches) per graph. The runtime is async; the session drives it on a private
event loop so callers stay plain Python.

`IsolatedSession` runs a `Session` in a child process (`voxport serve`'s server, spoken to in
the worker protocol): a Swift fatal error aborts the whole process, and there it becomes a
`RuntimeCrash` naming the graph and function instead of the end of the caller (a test session,
a gate).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from conversion.core import bundle_lock, errors
from conversion.core.bundle import Manifest, check_key, key_digest, load_manifest
from conversion.core.errors import InputSpecError, RuntimeCrash
from conversion.core.runtime import ending, parent_watch
from conversion.core.runtime import worker_protocol as wp
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


def _open_bundle(
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
        self._use, self.manifest = _open_bundle(self.bundle, verify, key)
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


# -- child-process isolation ---------------------------------------------------------------------


class RuntimeTimeout(RuntimeCrash):
    """The runtime child did not answer within the session's timeout (it was killed)."""


class IsolatedSession:
    """The `Session` API, run in a child process so a runtime abort is an exception here.

    The child is `voxport serve`'s server (`python -m conversion.core.runtime.serve`), spoken
    to over its stdin/stdout in the worker protocol (`conversion.core.runtime.worker_protocol`,
    docs/worker-protocol.md) — the same protocol VoxportKit's `WorkerRunner` uses. It is a
    fresh interpreter, not a multiprocessing spawn, so callers need no `if __name__ ==
    "__main__"` guard, and not a fork, so no half-initialised runtime threads are inherited.

    `timeout_s` bounds every request (a load or a call, sending and answering together; None
    waits forever): a child that does not answer in time is killed and the call raises
    `RuntimeTimeout` (a `RuntimeCrash`) naming the graph and function. The default is generous
    (published-size graphs on the Linux runtime take minutes), it only stops a hung child.
    """

    def __init__(
        self,
        bundle: Path | str,
        graphs: list[str] | None = None,
        verify: bool = True,
        timeout_s: float | None = 3600.0,
        key: dict | str | None = None,
    ) -> None:
        self.bundle = Path(bundle)
        # Held here, across child restarts; the child checks the key this process checked.
        self._use, self.manifest = _open_bundle(self.bundle, verify, key)
        self.timeout_s = timeout_s
        self._graphs = list(self.manifest.graphs) if graphs is None else list(graphs)
        self._next_id = 0
        self.restarts = 0
        try:
            for g in self._graphs:  # here, in one line, rather than the child's abort
                if g in self.manifest.graphs:
                    check_asset(self.bundle / self.manifest.graphs[g]["asset"], full=verify)
            self._start()
        except BaseException:
            self._use.release()
            raise

    def _start(self) -> None:
        self._closed = False
        self.output_bytes = 0  # what this child has answered: the runtime leaks about as much
        self._log = tempfile.NamedTemporaryFile(prefix="voxport-runtime-", suffix=".log")
        self._proc = subprocess.Popen(
            self._command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            bufsize=0,
            # The child ends when this process dies, even mid-call (parent_watch); from the
            # main thread the kernel kills it at once (a pool thread's child is only watched).
            env=parent_watch.child_env(),
        )
        self._chan = wp.PipeChannel(self._proc.stdout.fileno(), self._proc.stdin.fileno())
        try:
            self._request(None, "(start)", "(start)")  # the server's `ready` frame
            for g in self._graphs:
                # One request per graph, so a crash while lowering names the graph.
                self._request({"op": "load_graph", "graph": g}, g, "(load)")
        except BaseException:
            self.close()
            raise

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        """Restart the child once it has answered `limit_mb` of outputs; True when it did.

        The Core AI Python runtime never frees a call's output buffers (measured: RSS grows by
        each call's output size — 8 KB a call for 8 KB outputs, 64 KB for T3's logits — and
        closing the session does not give it back; only the process's exit does). States live
        in the child, so call this only where the caller's states are reset anyway: between
        utterances.
        """
        if self.output_bytes < limit_mb * 2**20:
            return False
        self._stop()
        self.restarts += 1
        self._start()
        return True

    def _command(self) -> list[str]:
        """The child: the server, loading nothing before `ready` (the graphs come one by one),
        not re-hashing what this process verified but checking it loads the same key."""
        return [
            sys.executable, "-m", "conversion.core.runtime.serve", str(self.bundle), "--graphs=",
            "--no-verify", f"--key={key_digest(self.manifest.key)}",
        ]  # fmt: skip

    def _stderr_tail(self, n: int = 1500) -> str:
        try:
            text = Path(self._log.name).read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if "Loading function" not in ln]
        return "\n".join(lines)[-n:].strip()

    def _crash(self, graph: str, function: str) -> RuntimeCrash:
        try:
            code = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            code = self._proc.wait()
        how = f"exit code {code}"
        if code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        tail = self._stderr_tail()
        return RuntimeCrash(
            f"the Core AI runtime crashed in graph '{graph}' function '{function}' ({how})"
            + (f"; its last words:\n{tail}" if tail else "")
        )

    def _request(
        self,
        header: dict | None,
        graph: str,
        function: str,
        arrays: dict[str, np.ndarray] | None = None,
    ) -> tuple[dict, dict[str, np.ndarray]]:
        """Send one request (None: only read the next frame) and return its reply."""
        if self._closed:
            raise errors.UserError("this IsolatedSession is closed")
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        try:
            if header is not None:
                self._chan.send(header, arrays, deadline)
            frame = self._chan.recv(deadline)
        except wp.FrameTimeout:
            self._proc.kill()
            self._proc.wait()
            tail = self._stderr_tail()
            raise RuntimeTimeout(
                f"the Core AI runtime did not answer within {self.timeout_s:g} s in graph "
                f"'{graph}' function '{function}' (the child was killed)"
                + (f"; its last words:\n{tail}" if tail else "")
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            frame = None
        except wp.ProtocolError:
            # Usually the child died in the middle of a reply; otherwise the stream is broken.
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
                raise
            frame = None
        if frame is None:
            raise self._crash(graph, function) from None
        reply, out = frame
        if header is not None and reply.get("id", header.get("id")) != header.get("id"):
            raise wp.ProtocolError(f"reply to request {header.get('id')} has id {reply.get('id')}")
        if not reply.get("ok"):
            raise wp.rebuild_error(reply.get("error") or {})
        return reply, out

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def run(
        self, graph: str, function: str, inputs: Mapping[str, Any], state: str = "default"
    ) -> dict[str, np.ndarray]:
        arrays = {k: wp.wire_array(k, v) for k, v in inputs.items()}
        self._next_id += 1
        header = {
            "op": "run",
            "id": self._next_id,
            "graph": graph,
            "function": function,
            "state": state,
        }
        out = self._request(header, graph, function, arrays)[1]
        self.output_bytes += sum(v.nbytes for v in out.values())
        return out

    @property
    def rss_bytes(self) -> int:
        """The child's resident memory now (0 when it has gone)."""
        import psutil

        try:
            return psutil.Process(self._proc.pid).memory_info().rss
        except psutil.Error:
            return 0

    def reset_state(self, graph: str, key: str = "default") -> None:
        self._request({"op": "reset_state", "graph": graph, "state": key}, graph, "reset_state")

    def read_state(self, graph: str, key: str = "default") -> dict[str, np.ndarray]:
        header = {"op": "read_state", "graph": graph, "state": key}
        return self._request(header, graph, "read_state")[1]

    def close(self) -> None:
        self._stop()
        self._use.release()

    def _stop(self) -> None:
        """End the child (the bundle stays held: `recycle_if_leaking` starts another)."""
        if self._closed:
            return
        if self._proc.poll() is None and ending.ending():
            # This process is ending on a signal: the child may be busy in a call for minutes.
            ending.end_child(self._proc)
        if self._proc.poll() is None:
            with contextlib.suppress(Exception):
                deadline = time.monotonic() + 10
                self._chan.send({"op": "close"}, deadline=deadline)
                self._chan.recv(deadline)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._closed = True
        for pipe in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()
        self._log.close()

    def __enter__(self) -> IsolatedSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
