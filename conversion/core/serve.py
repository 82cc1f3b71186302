"""`voxport serve BUNDLE`: one `Session` answering `voxport-worker/1` frames on stdin/stdout.

The server loads the bundle, sends one `ready` frame, then answers each request frame with one
reply frame, in order, until `close` or the end of stdin. A request that fails (a wrong input
shape, an unknown graph, a runtime error the runtime survives) gets an error reply and the
server keeps serving; only a stream that is no longer a frame sequence ends it. A runtime abort
ends the process: the client sees the end of stdout and reads the exit status.

Nothing but frames goes to stdout: the real stdout is taken over at start and fd 1 (Python's
`print`, the runtime's own logging) is pointed at stderr. Protocol: docs/worker-protocol.md and
`conversion.core.worker_protocol`. Also runnable as `python -m conversion.core.serve BUNDLE`
(what `IsolatedSession` spawns).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from . import worker_protocol as wp
from .bundle import Manifest, load_manifest
from .errors import UserError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PROTOCOL = 0, 1, 2, 3

OPS = ("describe", "load_graph", "run", "reset_state", "read_state", "close")


def check(
    bundle: Path | str, graphs: list[str] | None = None, verify: bool = True
) -> tuple[Manifest, list[str]]:
    """The manifest (verified) and the graphs to load; a `UserError` before anything loads."""
    manifest = load_manifest(bundle, verify=verify)
    names = list(manifest.graphs) if graphs is None else list(graphs)
    unknown = [g for g in names if g not in manifest.graphs]
    if unknown:
        raise UserError(f"no graph(s) {unknown} in {bundle} (has: {sorted(manifest.graphs)})")
    return manifest, names


def _claim_stdio():
    """(frames in, frames out): private copies of fds 0 and 1; fd 1 then points at stderr."""
    out = os.fdopen(os.dup(1), "wb")
    inp = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    return inp, out


def _field(header: dict, name: str, default: Any = None) -> str:
    value = header.get(name, default)
    if not isinstance(value, str) or not value:
        raise UserError(f"request '{header.get('op')}' needs '{name}' (a non-empty string)")
    return value


class Server:
    """The request handlers over one Session (frames are read and written by `serve`)."""

    def __init__(self, session) -> None:
        self.session = session

    def handle(self, header: dict, arrays: dict) -> tuple[dict, dict | None]:
        op = header.get("op")
        handler: Callable | None = getattr(self, f"op_{op}", None) if op in OPS else None
        if handler is None:
            raise UserError(f"unknown op {op!r} (the ops are: {', '.join(OPS)})")
        return handler(header, arrays)

    def op_describe(self, header, arrays):
        return {
            "protocol": wp.PROTOCOL,
            "manifest": self.session.manifest.to_json(),
            "loaded": self.session.graphs(),
        }, None

    def op_load_graph(self, header, arrays):
        self.session.load_graph(_field(header, "graph"))
        return {}, None

    def op_run(self, header, arrays):
        graph, function = _field(header, "graph"), _field(header, "function")
        state = _field(header, "state", "default")
        start = time.perf_counter()
        out = self.session.run(graph, function, arrays, state=state)
        ms = (time.perf_counter() - start) * 1e3
        return {"ms": ms}, {k: wp.wire_array(k, v) for k, v in out.items()}

    def op_reset_state(self, header, arrays):
        self.session.reset_state(_field(header, "graph"), _field(header, "state", "default"))
        return {}, None

    def op_read_state(self, header, arrays):
        st = self.session.read_state(_field(header, "graph"), _field(header, "state", "default"))
        return {}, {k: wp.wire_array(k, v) for k, v in st.items()}

    def op_close(self, header, arrays):
        return {}, None


def serve(
    bundle: Path | str, graphs: list[str] | None = None, verify: bool = True, quiet: bool = False
) -> int:
    """Serve `bundle` on this process's stdin/stdout until `close` or end of input."""
    from .runtime import Session

    inp, out = _claim_stdio()
    read = wp.stream_reader(inp)
    try:
        session = Session(bundle, graphs=[], verify=verify, quiet=quiet)
        try:
            for g in session.manifest.graphs if graphs is None else graphs:
                session.load_graph(g)
        except BaseException:
            session.close()
            raise
    except Exception as e:
        wp.write_frame(out, wp.error_reply(e, op="ready", protocol=wp.PROTOCOL))
        print(f"voxport serve: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, UserError) else EXIT_FAILED
    server = Server(session)
    try:
        _write_ready(out, session)
        while True:
            try:
                frame = wp.read_frame(read)
            except wp.ProtocolError as e:
                # The stream cannot be resynchronised: say why, then stop.
                wp.write_frame(out, wp.error_reply(e))
                print(f"voxport serve: {e}", file=sys.stderr)
                return EXIT_PROTOCOL
            if frame is None:
                _exit_now(out, session)
            header, arrays = frame
            echo = {"op": header.get("op"), **({"id": header["id"]} if "id" in header else {})}
            try:
                reply, out_arrays = server.handle(header, arrays)
            except Exception as e:
                wp.write_frame(out, wp.error_reply(e, **echo))
                continue
            wp.write_frame(out, {"ok": True, **echo, **reply}, out_arrays)
            if echo["op"] == "close":
                _exit_now(out, session)
    except (BrokenPipeError, KeyboardInterrupt):  # the client went away
        return EXIT_OK
    finally:
        session.close()


def _write_ready(out, session) -> None:
    ready = {
        "ok": True,
        "op": "ready",
        "protocol": wp.PROTOCOL,
        "model": session.manifest.model,
        "graphs": session.graphs(),
        "pid": os.getpid(),
    }
    wp.write_frame(out, ready)


def _exit_now(out, session) -> NoReturn:
    """End the worker once its last frame is out, without closing the session (that, or the
    interpreter's exit, once aborted a worker after every reply: `runtime.end_process`). The OS
    frees what the runtime holds, but not the lowered assets on disk: those are removed first."""
    from .runtime import end_process

    out.flush()
    session.discard_lowered()
    end_process(EXIT_OK)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conversion.core.serve",
        description="Serve a bundle's graphs over stdin/stdout (docs/worker-protocol.md).",
    )
    add_arguments(p)
    p.add_argument("--no-verify", action="store_true", help="skip the bundle's hash check")
    args = p.parse_args(argv)
    try:
        _, names = check(args.bundle, parse_graphs(args.graphs), verify=not args.no_verify)
    except UserError as e:
        print(f"voxport: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    return serve(args.bundle, names, verify=False)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags `voxport serve` and `python -m conversion.core.serve` share."""
    p.add_argument("bundle", metavar="BUNDLE", help="the bundle folder to serve")
    p.add_argument(
        "--graphs",
        default=None,
        metavar="A,B",
        help="graphs to load before 'ready' (default: all; '' loads none, see op load_graph)",
    )


def parse_graphs(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [g for g in (s.strip() for s in value.split(",")) if g]


if __name__ == "__main__":
    sys.exit(main())
