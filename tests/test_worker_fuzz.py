"""The worker protocol survives any frame (issue 21, deliverable 3).

Three layers: `read_frame` on each malformed frame that once killed `voxport serve` (a
`ProtocolError`, never another exception); the same parser over thousands of mutated frames in
this process; and one real `voxport serve --assets` worker fed thousands of random and mutated
frames, which must answer every frame it can delimit with a well-formed reply and end only with
exit status 3 after a `ProtocolError` reply (or 0 after `close`), never a traceback.
"""

from __future__ import annotations

import io
import json
import os
import random
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conversion.core.errors import UserError
from conversion.core.runtime import serve
from conversion.core.runtime import worker_protocol as wp
from conversion.core.runtime.session import Session

SEED = 21
FRAMES = 3000  # sent to the real worker (each mutation is one frame, or a few run together)
PARSER_FRAMES = 20000  # parsed in this process
DEADLINE_S = 60  # per reply: a worker that does not answer is hung (a failure, not a wait)


def _frame(header: bytes | str | dict, payload: bytes = b"") -> bytes:
    """The bytes of one frame: `header` as JSON text (a dict is dumped), then `payload`."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    if isinstance(header, str):
        header = header.encode("utf-8", "surrogatepass")
    return len(header).to_bytes(4, "little") + header + payload


def _entry(**fields) -> dict:
    return {"name": "x", "dtype": "float32", "shape": [2], "nbytes": 8, **fields}


class _NoHugeReads:
    """A `read(n)` over `data` that fails the test for a read a real pipe could not serve
    without allocating gigabytes (what `stream_reader` over a pipe does for `read(n)`)."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def __call__(self, n: int) -> bytes:
        if n > 1 << 30:
            raise MemoryError(f"read({n}) would allocate {n} bytes")
        return self.stream.read(n)


# Malformed frames: (the bytes, whether the stream is lost). Before issue 21 the first 15 killed
# `voxport serve` (exit 1 and a traceback, no reply; NaN and the others through the echo of
# their id), the next two were served as if well-formed, the last two already were refused.
# Now each is a ProtocolError: a whole frame refused (`FrameRejected`, the next frame reads)
# where its sizes are sound, else the end of the stream.
FATAL, REJECTED = True, False
MALFORMED = {
    # np.prod in int64 wrapped 2**64 to 0, so nbytes 0 passed the check (then reshape raised)
    "shape-wraps-int64": (_frame({"arrays": [_entry(shape=[2**32, 2**32], nbytes=0)]}), REJECTED),
    "dimension-2**70": (_frame({"arrays": [_entry(shape=[2**70], nbytes=2**72)]}), FATAL),
    "empty-but-overflowing": (_frame({"arrays": [_entry(shape=[0, 2**62], nbytes=0)]}), REJECTED),
    "4-TiB-consistent": (
        _frame({"arrays": [_entry(dtype="uint8", shape=[4 << 40], nbytes=4 << 40)]}),
        FATAL,
    ),
    "nbytes-float": (_frame({"arrays": [_entry(nbytes=8.0)]}, b"\0" * 8), FATAL),
    "dtype-list": (_frame({"arrays": [_entry(dtype=[])]}, b"\0" * 8), REJECTED),
    "dtype-object": (_frame({"arrays": [_entry(dtype={"a": 1})]}, b"\0" * 8), REJECTED),
    "name-list": (_frame({"arrays": [_entry(name=[1])]}, b"\0" * 8), REJECTED),
    "name-object": (_frame({"arrays": [_entry(name={})]}, b"\0" * 8), REJECTED),
    "too-many-dims": (_frame({"arrays": [_entry(shape=[0] * 65, nbytes=0)]}), REJECTED),
    "nested-200000": (_frame("[" * 200_000), FATAL),
    "NaN": (_frame('{"op":"describe","id":NaN}'), REJECTED),
    "Infinity": (_frame('{"op":"describe","id":-Infinity}'), REJECTED),
    "float-overflows": (_frame('{"op":"describe","id":1e400}'), REJECTED),
    "int-5000-digits": (_frame('{"op":"describe","id":' + "9" * 5000 + "}"), REJECTED),
    "nbytes-bool": (_frame({"arrays": [_entry(dtype="uint8", shape=[1], nbytes=True)]}), FATAL),
    "nested-500": (_frame('{"id":' + "[" * 500 + "]" * 500 + "}"), REJECTED),
    "nbytes-string": (_frame({"arrays": [_entry(nbytes="8")]}, b"\0" * 8), FATAL),
    "entry-not-object": (_frame({"arrays": [[1, 2]]}), FATAL),
}
NEXT = _frame({"op": "describe", "id": 9})


@pytest.mark.parametrize("raw,fatal", MALFORMED.values(), ids=MALFORMED.keys())
def test_each_malformed_frame_is_a_protocol_error(raw, fatal):
    read = _NoHugeReads(raw + NEXT)
    with pytest.raises(wp.ProtocolError) as err:
        wp.read_frame(read)
    assert isinstance(err.value, wp.FrameRejected) is not fatal, err.value
    if not fatal:  # the frame was read to its end: the next one reads
        assert wp.read_frame(read) == ({"op": "describe", "id": 9}, {})
        json.dumps(err.value.header, allow_nan=False)  # what a reply echoes can be encoded


def test_array_and_frame_sizes_are_capped():
    # The caps are checked before any byte of the arrays is read (or memory taken for them).
    assert 1 << 30 < wp.MAX_ARRAY_BYTES <= wp.MAX_FRAME_BYTES
    over = wp.MAX_ARRAY_BYTES + 1
    raw = _frame({"arrays": [_entry(dtype="uint8", shape=[over], nbytes=over)]})
    with pytest.raises(wp.ProtocolError, match="over the protocol's limit"):
        wp.read_frame(_NoHugeReads(raw))
    at_cap = wp.MAX_ARRAY_BYTES
    many = [_entry(name=str(i), dtype="uint8", shape=[at_cap], nbytes=at_cap) for i in range(5)]
    with pytest.raises(wp.ProtocolError, match="arrays of the frame"):
        wp.read_frame(_NoHugeReads(_frame({"arrays": many})))


def test_a_frame_with_bad_array_entries_is_skipped_whole():
    """Entries whose sizes are sound but whose names, dtypes or shapes are not: the frame's
    end is known (the `nbytes` say it), so the reader rejects the frame and the next one reads."""
    bad = _frame(
        {"op": "run", "id": 5, "arrays": [_entry(dtype="complex64"), _entry(name="y")]},
        b"\1" * 16,
    )
    good = _frame({"op": "describe", "id": 6})
    read = wp.stream_reader(io.BytesIO(bad + good))
    with pytest.raises(wp.FrameRejected, match="dtype 'complex64'") as err:
        wp.read_frame(read)
    assert err.value.header == {"op": "run", "id": 5, "arrays": json.loads(bad[4:-16])["arrays"]}
    assert wp.read_frame(read) == ({"op": "describe", "id": 6}, {})
    assert wp.read_frame(read) is None


def test_error_messages_stay_short():
    """A ProtocolError quotes what it refuses, cut short: a 16 MiB name is not echoed."""
    raw = _frame({"arrays": [{"name": "n" * 100_000, "dtype": 1}]})
    with pytest.raises(wp.ProtocolError) as err:
        wp.read_frame(_NoHugeReads(raw))
    assert len(str(err.value)) < 400


def test_a_reply_that_cannot_be_encoded_is_sent_as_an_error():
    """A handler's reply JSON cannot carry (a bug) must not end the server: it is answered as
    an error reply to the same op and id, and the stream stays a frame sequence."""
    out = io.BytesIO()
    serve._send(out, {"ok": True, "op": "run", "id": 3, "ms": float("nan")})
    serve._send(out, {"ok": True, "op": "describe", "id": 4})
    read = wp.stream_reader(io.BytesIO(out.getvalue()))
    reply, _ = wp.read_frame(read)
    assert reply["ok"] is False and (reply["op"], reply["id"]) == ("run", 3)
    assert reply["error"]["type"] == "ValueError" and reply["error"]["user"] is False
    assert wp.read_frame(read) == ({"ok": True, "op": "describe", "id": 4}, {})


# -- the parser under mutation -------------------------------------------------------------------

DTYPES = list(wp.DTYPES)
OPS = ["describe", "load_asset", "run", "unload_asset", "close", "load_graph", "reset_state",
       "read_state", "ready", "", "frobnicate"]  # fmt: skip
EDGE_INTS = [0, 1, -1, 7, 2**31, 2**32, 2**53 + 1, 2**63, 2**64, 2**70, -(2**63)]
EDGE_TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "8.0", "0.5", "-0.0", "true",
               "false", "null", "9" * 4301, "[]", "{}", '""', '"\\ud800"', '"\\u0000"']  # fmt: skip


def _json_text(rng: random.Random, depth: int = 0) -> str:
    """Random JSON text, edge cases included (some of it not JSON at all: NaN, 1e400)."""
    r = rng.random()
    if r < 0.2:
        return str(rng.choice(EDGE_INTS) if rng.random() < 0.5 else rng.randrange(-999, 999))
    if r < 0.35:
        return rng.choice(EDGE_TOKENS)
    if r < 0.45:
        return repr(rng.uniform(-1e6, 1e6))
    if r < 0.65:
        alphabet = 'ab_/.x é\u2603\x00\n"\\' + "".join(DTYPES[:3]) + "".join(OPS[:3])
        return json.dumps("".join(rng.choice(alphabet) for _ in range(rng.randrange(12))))
    if r < 0.7:
        # past ~1000 levels Python's parser gives up: a broken stream (and a respawn)
        n = rng.choice([30, 63, 64, 65, 120, 900, 5000 if rng.random() < 0.2 else 64])
        return "[" * n + "]" * n
    if depth > 3:
        return "0"
    items = [_json_text(rng, depth + 1) for _ in range(rng.randrange(4))]
    if r < 0.85:
        return "[" + ",".join(items) + "]"
    keys = [json.dumps(rng.choice(["name", "dtype", "shape", "nbytes", "op", "id", "k"]))]
    return "{" + ",".join(f"{rng.choice(keys)}:{v}" for v in items) + "}"


def _valid(rng: random.Random) -> tuple[dict, dict[str, np.ndarray]]:
    """A well-formed request (the worker answers most with an error: no asset is loaded)."""
    op = "close" if rng.random() < 0.005 else rng.choice(OPS[:4] + OPS[5:])  # close: a respawn
    header: dict = {"op": op, "id": rng.randrange(1 << 20)}
    for field, value in (("asset", 1), ("function", "main"), ("path", "nope.aimodel"),
                         ("graph", "mlp"), ("state", "default"), ("states", ["s"]),
                         ("options", {"compute_units": "cpu"})):  # fmt: skip
        if rng.random() < 0.3:
            header[field] = value
    arrays = {}
    for i in range(rng.randrange(4)):
        dtype = wp.DTYPES[rng.choice(DTYPES)]
        shape = [rng.randrange(4) for _ in range(rng.randrange(4))]
        arrays[f"a{i}"] = np.frombuffer(rng.randbytes(int(np.prod(shape)) * dtype.itemsize), dtype)
        arrays[f"a{i}"] = arrays[f"a{i}"].reshape(shape)
    return header, arrays


def _encode(header: dict, arrays: dict) -> bytes:
    return b"".join(bytes(p) for p in wp.encode_frame(header, arrays))


PLACEHOLDER = "\0PLACEHOLDER\0"


def _with_text(obj: dict, text: str) -> str:
    """`obj` as JSON text with its one `PLACEHOLDER` value replaced by raw JSON `text`."""
    return json.dumps(obj).replace(json.dumps(PLACEHOLDER), text)


def _mutant(rng: random.Random) -> bytes:
    """One fuzz input: a valid frame, or one mutated (header fields, array entries, bytes,
    lengths), or raw noise, or one of the probes above. Mostly frames the worker can answer
    and keep serving: a broken stream ends the worker and a respawn costs ~0.3 s, so the
    byte-level mutations are rarer here than in the parser's own fuzz above."""
    header, arrays = _valid(rng)
    raw = _encode(header, arrays)
    payload = raw[4 + int.from_bytes(raw[:4], "little") :]
    entries = [wp.array_entry(k, v) for k, v in arrays.items()]
    header = {**header, "arrays": entries}  # what `raw` carries: mutated below, with `payload`
    kind = rng.choices(
        ["valid", "field", "entry", "flip", "length", "cut", "extend", "noise", "probe"],
        [30, 60, 5, 0.6, 0.3, 0.3, 0.3, 0.15, 0.25],
    )[0]
    if kind == "field":  # any JSON (or not-JSON) in one header field: mostly op-level errors
        fields = ["op", "id", "asset", "function", "path", "graph", "state", "states", "options"]
        key = "arrays" if rng.random() < 0.02 else rng.choice(fields)
        return _frame(_with_text({**header, key: PLACEHOLDER}, _json_text(rng)), payload)
    if kind == "entry" and entries:  # one field of one array entry
        entries[rng.randrange(len(entries))][rng.choice(["name", "dtype", "shape", "nbytes"])] = (
            PLACEHOLDER
        )
        return _frame(_with_text({**header, "arrays": entries}, _json_text(rng)), payload)
    if kind == "flip":
        b = bytearray(raw)
        for _ in range(rng.randrange(1, 5)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == "length":
        n = int.from_bytes(raw[:4], "little")
        new = rng.choice([0, 1, n - 1, n + 1, n + rng.randrange(64), wp.MAX_HEADER_BYTES + 1,
                          0xFFFFFFFF, rng.randrange(1 << 32)])  # fmt: skip
        return new.to_bytes(4, "little") + raw[4:]
    if kind == "cut":
        return raw[: rng.randrange(1, len(raw))]
    if kind == "extend":
        return raw + rng.randbytes(rng.randrange(1, 40))
    if kind == "noise":
        return rng.randbytes(rng.randrange(1, 200))
    if kind == "probe":
        return rng.choice([raw for raw, _ in MALFORMED.values()])
    return raw


def test_the_parser_refuses_mutated_frames_with_protocol_errors_only():
    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    for _ in range(PARSER_FRAMES):
        read = _NoHugeReads(_mutant(rng))
        try:
            while wp.read_frame(read) is not None:
                outcomes["frame"] += 1
        except wp.FrameRejected:
            outcomes["rejected"] += 1
        except wp.ProtocolError:
            outcomes["protocol"] += 1
    print(f"\nparser: {PARSER_FRAMES} inputs -> {dict(outcomes)}")
    assert outcomes["frame"] and outcomes["rejected"] and outcomes["protocol"]


# -- a real worker -------------------------------------------------------------------------------


class _Worker:
    """One `python -m conversion.core.runtime.serve --assets` (no bundle needed: starts in ~0.3 s).
    `ready()` waits for its ready frame, so the next worker can start while this one works."""

    def __init__(self, tmp: Path, n: int) -> None:
        self.log = tmp / f"stderr-{n}.txt"
        env = {**os.environ, "TMPDIR": str(tmp)}
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "conversion.core.runtime.serve", "--assets"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, bufsize=0,
            )  # fmt: skip
        self.chan = wp.PipeChannel(self.proc.stdout.fileno(), self.proc.stdin.fileno())

    def ready(self) -> _Worker:
        frame = self.recv()
        assert frame is not None and frame[0]["ok"] and frame[0]["op"] == "ready", frame
        return self

    def recv(self):
        return self.chan.recv(time.monotonic() + DEADLINE_S)

    def write(self, data: bytes) -> bool:
        """Write all of `data`; False if the worker stopped reading (it ended)."""
        fd, view = self.proc.stdin.fileno(), memoryview(data)
        while view.nbytes:
            _, ready, _ = select.select([], [fd], [], DEADLINE_S)
            assert ready, "the worker neither reads nor ends"
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return False
        return True

    def end_of_input(self) -> None:
        self.proc.stdin.close()

    def finish(self) -> tuple[int, str]:
        """The exit status once stdout has ended, and its stderr."""
        assert self.recv() is None, "a frame after the worker's last reply"
        self.proc.stdin.close()
        self.proc.stdout.close()
        code = self.proc.wait(timeout=DEADLINE_S)
        return code, self.log.read_text(errors="replace")


def _expect(data: bytes) -> tuple[list[dict], str]:
    """What a worker reading `data` sees: the headers of the whole frames it can answer (a
    rejected frame counts: it gets an error reply), and how the input ends: "clean" (between
    frames), "close" (a close request), "cut" (inside a frame: the worker waits for more) or
    "broken" (not a frame sequence); "unknown" if the parser fails otherwise. The oracle is
    the reference parser, the worker's own."""
    read, headers = wp.stream_reader(io.BytesIO(data)), []
    while True:
        try:
            frame = wp.read_frame(read)
        except wp.FrameRejected as e:
            headers.append({"rejected": e.header})
            continue
        except wp.ProtocolError as e:
            return headers, "cut" if "ended inside" in str(e) else "broken"
        except Exception:  # noqa: BLE001 (a parser bug: the worker's own outcome is checked)
            return headers, "unknown"
        if frame is None:
            return headers, "clean"
        headers.append(frame[0])
        if frame[0].get("op") == "close":
            return headers, "close"


def _well_formed(reply: dict) -> None:
    assert isinstance(reply.get("ok"), bool), reply
    if reply["ok"] is False:
        error = reply["error"]
        assert isinstance(error["type"], str) and error["type"], reply
        assert isinstance(error["message"], str) and isinstance(error["user"], bool), reply


def _check_reply(reply: dict, request: dict | None) -> None:
    """A well-formed reply to `request` (None: to a stream that is not frames)."""
    _well_formed(reply)
    if request is None or "rejected" in request:
        assert reply["ok"] is False and reply["error"]["type"] == "ProtocolError", reply
        request = (request or {}).get("rejected")
    if request is None:
        assert "op" not in reply, reply  # a broken stream: nothing to echo
        return
    assert reply["op"] == request.get("op"), (reply, request)
    assert reply.get("id") == request.get("id"), (reply, request)


def _feed(worker: _Worker, data: bytes, stats: Counter[str]) -> bool:
    """Send one fuzz input and check every reply; True when the worker has ended (as it must:
    exit 3 after a ProtocolError reply, 0 after close, never a traceback)."""
    requests, end = _expect(data)
    stats["frames"] += 1
    stats[end] += 1
    wrote = worker.write(data)
    if end in ("cut", "unknown"):
        worker.end_of_input()  # it waits inside a frame: the end of input breaks it
    for request in requests:
        frame = worker.recv()
        assert frame is not None, f"the worker ended without answering {request!r:.300}"
        _check_reply(frame[0], request)
        stats["replies"] += 1
    if end == "clean":
        assert wrote, "the worker stopped reading between frames"
        return False
    if end in ("cut", "broken"):
        frame = worker.recv()
        assert frame is not None, f"no error reply to a broken stream ({data[:200]!r})"
        _check_reply(frame[0], None)
        stats["replies"] += 1
    while end == "unknown" and (frame := worker.recv()) is not None:
        _well_formed(frame[0])
    code, err = worker.finish()
    stats[f"exit {code}"] += 1
    want = {"close": (0,), "unknown": (0, 3)}.get(end, (3,))  # unknown: a parser bug
    assert code in want, (code, end, data[:300], err[-2000:])
    assert "Traceback" not in err, err[-3000:]
    return True


@pytest.mark.slow  # 30-70 s on 2 shared cores: ~120 respawns at 0.2-0.5 s each
def test_a_real_worker_survives_thousands_of_mutated_frames(tmp_path):
    rng = random.Random(SEED)
    start = time.monotonic()
    stats: Counter[str] = Counter()
    worker, spare = _Worker(tmp_path, 0).ready(), _Worker(tmp_path, 1)
    try:
        for _ in range(FRAMES):
            if _feed(worker, _mutant(rng), stats):
                stats["respawns"] += 1
                worker, spare = spare.ready(), _Worker(tmp_path, stats["respawns"] + 1)
        for w in (worker, spare.ready()):
            w.end_of_input()
            code, err = w.finish()
            assert code == 0 and "Traceback" not in err, err[-3000:]
    finally:  # a failed assert leaves no worker behind
        for w in (worker, spare):
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
    print(f"\nworker fuzz: {dict(stats)} in {time.monotonic() - start:.1f} s")
    assert stats["unknown"] == 0  # the reference parser raised nothing but ProtocolErrors
    assert stats["replies"] >= stats["frames"] // 2 and stats["respawns"] > 10
    assert stats["exit 3"] and stats["exit 0"]  # both ends were reached, not only one
    # nothing left in the workers' temp folder but their logs (no asset was lowered)
    assert all(p.startswith("stderr-") for p in os.listdir(tmp_path))


# -- bundle mode: an unknown graph is an error in every op ---------------------------------------


@pytest.fixture(scope="module")
def bundle_server(core_bundle):
    session = Session(core_bundle, graphs=[])
    yield serve.Server(session)
    session.close()


@pytest.mark.parametrize("op", ["run", "reset_state", "read_state", "load_graph"])
def test_an_unknown_graph_is_an_error_in_every_bundle_op(bundle_server, op):
    with pytest.raises(UserError, match="no graph 'nope'"):
        bundle_server.handle({"op": op, "graph": "nope", "function": "main"}, {})
    # a graph of the bundle that is not loaded yet reads as no state, as before
    assert bundle_server.handle({"op": "read_state", "graph": "mlp"}, {}) == ({}, {})
