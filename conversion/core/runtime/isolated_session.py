"""`IsolatedSession`: the `Session` API in a child process (`voxport serve`'s server, spoken to
in the worker protocol). A Swift fatal error aborts the whole process; there it becomes a
`RuntimeCrash` naming the graph and function instead of the end of the caller (a test session,
a gate)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core import errors
from conversion.core.bundle import key_digest
from conversion.core.errors import RuntimeCrash
from conversion.core.runtime import ending, parent_watch
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.program_check import check_asset
from conversion.core.runtime.session import open_bundle


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
        self._use, self.manifest = open_bundle(self.bundle, verify, key)
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
