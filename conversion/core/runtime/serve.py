"""`voxport serve`: `voxport-worker/1` frames on stdin/stdout, in one of two modes.

- `voxport serve BUNDLE`: one `Session` over a bundle's graphs, states kept in the server.
- `voxport serve --assets`: single `.aimodel` assets loaded by path (`AssetRuntime`), described
  from the runtime itself, run with states the client owns and sends with every call.

The server starts its runtime, sends one `ready` frame, then answers each request frame with one
reply frame, in order, until `close` or the end of stdin: one frame loop (`_serve`) for both
modes, each mode a handler class (`Server`, `AssetServer`). A request that fails (a wrong input
shape, an unknown graph, a runtime error the runtime survives) gets an error reply and the
server keeps serving, as does a frame whose header or arrays are malformed but whose end is
known (`worker_protocol.FrameRejected`); only a stream that is no longer a frame sequence ends it
(an error reply, then exit 3). A runtime abort ends the process: the client sees the end of
stdout and reads the exit status. The server also ends when its parent process dies
(`parent_watch`), so a killed client does not leave it computing.

Nothing but frames goes to stdout: the real stdout is taken over at start and fd 1 (Python's
`print`, the runtime's own logging) is pointed at stderr. Protocol: docs/worker-protocol.md and
`conversion.core.runtime.worker_protocol`. Also runnable as
`python -m conversion.core.runtime.serve BUNDLE` (what `IsolatedSession` spawns) or
`python -m conversion.core.runtime.serve --assets`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from conversion.core import bundle_lock
from conversion.core.bundle import Manifest, check_key, load_manifest
from conversion.core.errors import UserError
from conversion.core.paths import remove_claimed_temp_folder
from conversion.core.runtime import ending, parent_watch
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.program_check import check_asset

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PROTOCOL = 0, 1, 2, 3

BUNDLE_OPS = ("describe", "load_graph", "run", "reset_state", "read_state", "close")
ASSET_OPS = ("load_asset", "run", "unload_asset", "describe", "close")

#: The values of `load_asset`'s `compute_units` option (what VoxportKit's CoreAI mirror sends).
COMPUTE_UNITS = ("default", "cpu-only", "cpu", "gpu", "ane")


def check(
    bundle: Path | str,
    graphs: list[str] | None = None,
    verify: bool = True,
    key: str | None = None,
) -> tuple[Manifest, list[str]]:
    """The manifest (verified; made from `key`, a manifest key digest, when given) and the
    graphs to load; a `UserError` before anything loads."""
    manifest = load_manifest(bundle, verify=verify)
    check_key(Path(bundle), manifest, key)
    names = list(manifest.graphs) if graphs is None else list(graphs)
    unknown = [g for g in names if g not in manifest.graphs]
    if unknown:
        raise UserError(f"no graph(s) {unknown} in {bundle} (has: {sorted(manifest.graphs)})")
    for g in names:  # what the runtime would abort on, refused in one line (no ready frame)
        check_asset(Path(bundle) / manifest.graphs[g]["asset"], full=verify)
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


def _echo(header: dict) -> dict[str, Any]:
    """The request's op and id, as its reply repeats them."""
    return {"op": header.get("op"), **({"id": header["id"]} if "id" in header else {})}


def _int_field(header: dict, name: str, what: str) -> int:
    value = header.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise UserError(f"request '{header.get('op')}' needs '{name}' ({what})")
    return value


class Handlers:
    """One mode's request handlers: `op_<name>` for each of `OPS`, the `ready` frame's own
    fields, and the end of its runtime. Frames are read and written by `_serve`."""

    MODE = ""
    OPS: tuple[str, ...] = ()

    def handle(self, header: dict, arrays: dict) -> tuple[dict, dict | None]:
        op = header.get("op")
        handler: Callable | None = getattr(self, f"op_{op}", None) if op in self.OPS else None
        if handler is None:
            ops = ", ".join(self.OPS)
            other = next((m for m, o in MODE_OPS.items() if m != self.MODE and op in o), None)
            if other is not None:
                raise UserError(
                    f"op {op!r} belongs to {other} mode (voxport serve {MODE_USAGE[other]}); "
                    f"this worker is in {self.MODE} mode (its ops are: {ops})"
                )
            raise UserError(f"unknown op {op!r} (the ops are: {ops})")
        return handler(header, arrays)

    def ready(self) -> dict[str, Any]:
        return {}

    def op_close(self, header, arrays):
        return {}, None

    def discard_lowered(self) -> None:
        """Remove the lowered assets on disk (the process is about to end by `os._exit`)."""

    def close(self) -> None:
        """Release the runtime (the loop ended without `_exit_now`)."""


class Server(Handlers):
    """Bundle mode: the request handlers over one Session."""

    MODE, OPS = "bundle", BUNDLE_OPS

    def __init__(self, session) -> None:
        self.session = session

    def ready(self) -> dict[str, Any]:
        return {"model": self.session.manifest.model, "graphs": self.session.graphs()}

    def op_describe(self, header, arrays):
        return {
            "protocol": wp.PROTOCOL,
            "manifest": self.session.manifest.to_json(),
            "loaded": self.session.graphs(),
        }, None

    def _graph(self, header: dict) -> str:
        """The request's graph, one of the bundle's: every op refuses another name (reading
        or resetting the state of a graph that does not exist is a mistake, not an empty
        state)."""
        graph = _field(header, "graph")
        if graph not in self.session.manifest.graphs:
            raise UserError(f"no graph '{graph}' (has: {sorted(self.session.manifest.graphs)})")
        return graph

    def op_load_graph(self, header, arrays):
        self.session.load_graph(self._graph(header))
        return {}, None

    def op_run(self, header, arrays):
        graph, function = self._graph(header), _field(header, "function")
        state = _field(header, "state", "default")
        start = time.perf_counter()
        out = self.session.run(graph, function, arrays, state=state)
        ms = (time.perf_counter() - start) * 1e3
        return {"ms": ms}, {k: wp.wire_array(k, v) for k, v in out.items()}

    def op_reset_state(self, header, arrays):
        self.session.reset_state(self._graph(header), _field(header, "state", "default"))
        return {}, None

    def op_read_state(self, header, arrays):
        st = self.session.read_state(self._graph(header), _field(header, "state", "default"))
        return {}, {k: wp.wire_array(k, v) for k, v in st.items()}

    def discard_lowered(self) -> None:
        self.session.discard_lowered()

    def close(self) -> None:
        self.session.close()


class AssetServer(Handlers):
    """Assets mode: single `.aimodel` assets by path, states owned by the client."""

    MODE, OPS = "assets", ASSET_OPS

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def op_load_asset(self, header, arrays):
        options = _asset_options(header.get("options"))
        asset, functions = self.runtime.load(_field(header, "path"))
        path = str(self.runtime.assets()[asset])
        return {"asset": asset, "path": path, "functions": functions, "options": options}, None

    def op_unload_asset(self, header, arrays):
        self.runtime.unload(_int_field(header, "asset", "an asset id from load_asset"))
        return {}, None

    def op_describe(self, header, arrays):
        assets = {str(i): str(p) for i, p in self.runtime.assets().items()}  # JSON keys: text
        return {"protocol": wp.PROTOCOL, "mode": self.MODE, "assets": assets}, None

    def op_run(self, header, arrays):
        asset = _int_field(header, "asset", "an asset id from load_asset")
        function = _field(header, "function")
        desc = self.runtime.function(asset, function)
        _check_wire_names(function, desc)
        names = header.get("states", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise UserError("request 'run': 'states' must be a list of array names")
        absent = [n for n in names if n not in arrays]
        if absent:
            raise UserError(f"request 'run': states {absent} are listed but no array carries them")
        states = {n: arrays[n] for n in names}
        inputs = {k: v for k, v in arrays.items() if k not in states}
        start = time.perf_counter()
        outputs, states = self.runtime.run(asset, function, inputs, states)
        ms = (time.perf_counter() - start) * 1e3
        out = {k: wp.wire_array(k, v) for k, v in {**outputs, **states}.items()}
        return {"ms": ms, "states": list(states)}, out

    def discard_lowered(self) -> None:
        self.runtime.discard_lowered()

    def close(self) -> None:
        self.runtime.close()


MODE_OPS = {Server.MODE: Server.OPS, AssetServer.MODE: AssetServer.OPS}
MODE_USAGE = {Server.MODE: "BUNDLE", AssetServer.MODE: "--assets"}


def _asset_options(options: Any) -> dict[str, Any]:
    """`load_asset`'s options, checked, with their defaults: what the reply echoes.

    Accepted for the Swift API's sake (its load options) and changing nothing here: the Linux
    runtime has one backend, the CPU, so there is nothing to choose between."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise UserError("request 'load_asset': 'options' must be an object")
    unknown = sorted(set(options) - {"compute_units", "expect_frequent_reshapes"})
    if unknown:
        raise UserError(
            f"request 'load_asset': unknown option(s) {unknown} "
            "(the options are: compute_units, expect_frequent_reshapes)"
        )
    units = options.get("compute_units", "default")
    if units not in COMPUTE_UNITS:
        raise UserError(
            f"request 'load_asset': compute_units {units!r} (one of: {', '.join(COMPUTE_UNITS)})"
        )
    reshapes = options.get("expect_frequent_reshapes", False)
    if not isinstance(reshapes, bool):
        raise UserError("request 'load_asset': expect_frequent_reshapes must be true or false")
    return {"compute_units": units, "expect_frequent_reshapes": reshapes}


def _check_wire_names(function: str, desc: dict) -> None:
    """A frame names its arrays uniquely, so a function whose state shares a name with one of
    its inputs or outputs cannot be called over the protocol (the runtime's descriptor allows an
    input and a state of one name: measured with a buffer exported under its input's name)."""
    states = {d["name"] for d in desc["states"]}
    clash = sorted(states & {d["name"] for d in desc["inputs"] + desc["outputs"]})
    if clash:
        raise UserError(
            f"function '{function}': {clash} name both a state and an input or output; a frame "
            "names each array once, so this function cannot be called over the worker protocol "
            "(re-export it with distinct names)"
        )


# -- the frame loop ------------------------------------------------------------------------------


def _parent_gone() -> None:
    """What `end_process` would remove, short of its flushes (`parent_watch._end`): every
    lowered folder of this process (those of a load under way too), its temp folder."""
    from conversion.core.runtime import lowering

    lowering.discard_all()
    remove_claimed_temp_folder()  # `voxport serve`'s own temp folder (none for `python -m`)


def _send(out, header: dict, arrays: dict | None = None) -> None:
    """Write one reply. One that cannot be encoded (a handler's bug: a value JSON cannot
    carry) is answered as an error instead, so the stream stays a frame sequence."""
    try:
        parts = wp.encode_frame(header, arrays)
    except (TypeError, ValueError, RecursionError) as e:
        echo = {k: header[k] for k in ("op", "id") if k in header}
        parts = wp.encode_frame(wp.error_reply(e, **echo))
    for part in parts:
        out.write(part)
    out.flush()


def _serve(start: Callable[[], Handlers]) -> int:
    """Claim stdio, start the handlers (`start`), then answer frames until `close` or end of
    input. A failed start is an error reply as the `ready` frame (exit 2 for a user error)."""
    inp, out = _claim_stdio()
    read = wp.stream_reader(inp)
    try:
        handlers = start()
    except Exception as e:
        wp.write_frame(out, wp.error_reply(e, op="ready", protocol=wp.PROTOCOL))
        print(f"voxport serve: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, UserError) else EXIT_FAILED
    try:
        ready = {"ok": True, "op": "ready", "protocol": wp.PROTOCOL, "mode": handlers.MODE}
        wp.write_frame(out, {**ready, **handlers.ready(), "pid": os.getpid()})
        while True:
            try:
                frame = wp.read_frame(read)
            except wp.FrameRejected as e:
                # A whole frame refused (bad header values or arrays): the next one reads.
                _send(out, wp.error_reply(wp.ProtocolError(str(e)), **_echo(e.header)))
                continue
            except wp.ProtocolError as e:
                # The stream cannot be resynchronised: say why, then stop.
                _send(out, wp.error_reply(e))
                print(f"voxport serve: {e}", file=sys.stderr)
                return EXIT_PROTOCOL
            if frame is None:
                _exit_now(out, handlers)
            header, arrays = frame
            echo = _echo(header)
            try:
                reply, out_arrays = handlers.handle(header, arrays)
            except Exception as e:
                _send(out, wp.error_reply(e, **echo))
                continue
            _send(out, {"ok": True, **echo, **reply}, out_arrays)
            if echo["op"] == "close":
                _exit_now(out, handlers)
    except (BrokenPipeError, KeyboardInterrupt):  # the client went away
        return EXIT_OK
    finally:
        handlers.close()


def serve(
    bundle: Path | str, graphs: list[str] | None = None, verify: bool = True, quiet: bool = False
) -> int:
    """Serve `bundle` on this process's stdin/stdout until `close` or end of input."""

    def start() -> Server:
        from conversion.core.runtime.session import Session

        session = Session(bundle, graphs=[], verify=verify, quiet=quiet)
        try:
            for g in session.manifest.graphs if graphs is None else graphs:
                session.load_graph(g)
        except BaseException:
            session.close()
            raise
        return Server(session)

    return _serve(start)


def serve_assets(quiet: bool = False) -> int:
    """Serve single `.aimodel` assets on this process's stdin/stdout (`load_asset`, `run`
    with caller-owned states) until `close` or end of input."""

    def start() -> AssetServer:
        from conversion.core.runtime.asset_runtime import AssetRuntime

        return AssetServer(AssetRuntime(quiet=quiet))

    return _serve(start)


def _exit_now(out, handlers: Handlers) -> NoReturn:
    """End the worker once its last frame is out, without closing the runtime (that, or the
    interpreter's exit, once aborted a worker after every reply: `runtime.end_process`). The OS
    frees what the runtime holds, but not the lowered assets on disk: those are removed first."""
    from conversion.core.runtime.ending import end_process

    out.flush()
    handlers.discard_lowered()
    end_process(EXIT_OK)


# -- the command line ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m conversion.core.runtime.serve",
        description="Serve a bundle's graphs, or single assets (--assets), over stdin/stdout "
        "(docs/worker-protocol.md).",
    )
    add_arguments(p)
    p.add_argument("--no-verify", action="store_true", help="skip the bundle's hash check")
    args = p.parse_args(argv)
    try:
        return run_args(args, verify=not args.no_verify)
    except UserError as e:
        print(f"voxport: error: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE


def run_args(args: argparse.Namespace, verify: bool = True) -> int:
    """Serve what the parsed flags say; a `UserError` (before anything loads) for a bundle that
    is missing or tampered, unknown graphs, or neither or both of BUNDLE and --assets."""
    if (args.bundle is None) == (not args.assets):
        raise UserError(
            "give a BUNDLE to serve its graphs, or --assets to serve single .aimodel assets "
            "(one of the two)"
        )
    if args.assets and args.graphs is not None:
        raise UserError("--graphs is for a BUNDLE; with --assets, load them with load_asset")
    # A worker ends at once on SIGTERM or SIGINT, removing what it made (`ending.end_now`):
    # nothing it computes outlives the request its client gave up on.
    ending.install(unwind=False)
    # Watched from here, through the bundle's hash check and the loads (seconds to minutes for
    # a published bundle), not only once frames flow.
    with parent_watch.watching(_parent_gone):
        if args.assets:
            return serve_assets()
        # Held from the check to the process's end: no other process replaces the bundle
        # between the hash check and the loads, nor while this worker serves it.
        with bundle_lock.Use(args.bundle):
            _, names = check(args.bundle, parse_graphs(args.graphs), verify=verify, key=args.key)
            return serve(args.bundle, names, verify=False)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags `voxport serve` and `python -m conversion.core.runtime.serve` share."""
    p.add_argument("bundle", metavar="BUNDLE", nargs="?", help="the bundle folder to serve")
    p.add_argument(
        "--assets",
        action="store_true",
        help="serve single .aimodel assets instead (op load_asset; the client owns the states)",
    )
    p.add_argument(
        "--graphs",
        default=None,
        metavar="A,B",
        help="graphs to load before 'ready' (default: all; '' loads none, see op load_graph)",
    )
    p.add_argument(
        "--key",
        default=None,
        metavar="SHA256",
        help="refuse to serve unless the bundle's manifest key has this digest (what the "
        "parent asked for; cheap, no hashing of the graphs)",
    )


def parse_graphs(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [g for g in (s.strip() for s in value.split(",")) if g]


if __name__ == "__main__":
    # A worker's temp files go into its own folder, removed with it (`paths.claim_temp_folder`),
    # and it ends by `end_process` however `main` ends (`ending.run_program`).
    from conversion.core.runtime.ending import run_program

    run_program(main)
