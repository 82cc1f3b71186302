"""The worker protocol, `voxport-worker/1`: framed requests and replies over a byte stream.

One protocol for every client of a runtime in another process: `IsolatedSession` (Python,
a crash becomes an exception), VoxportKit's `WorkerRunner` (Swift on Linux or macOS, through
`voxport serve BUNDLE`), or anything else that can spawn a process and use its pipes.
docs/worker-protocol.md is the language-neutral description; this module is its reference.

A frame is

    u32 little-endian  N, the header's length in bytes
    N bytes            the header: one JSON object, UTF-8
    the arrays         for each entry of header["arrays"], in order, its `nbytes` raw bytes:
                       C order, little-endian

and an array entry is `{"name", "dtype", "shape", "nbytes"}` with `dtype` one of `DTYPES`
(numpy's names) and `nbytes == prod(shape) * itemsize`. A header without "arrays" carries
none. The requests and replies are listed in docs/worker-protocol.md; the server is
`conversion.core.runtime.serve`.

`read_frame` takes any byte stream: whatever it is fed, it returns a frame or raises a
`ProtocolError` (never another exception, never an allocation a header merely asks for). The
limits it holds a frame to are the constants below (`MAX_*`).
"""

from __future__ import annotations

import json
import math
import os
import reprlib
import select
import struct
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from conversion.core import errors

PROTOCOL = "voxport-worker/1"

#: The dtypes a frame may carry, by their names in the header (numpy's names, little-endian).
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "float64": np.dtype("<f8"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "bool": np.dtype("|b1"),
    # The narrow integers a Core AI asset can declare (its inputs, outputs and states carry them
    # as they are in `voxport serve --assets`, which does not cast).
    "int8": np.dtype("|i1"),
    "uint8": np.dtype("|u1"),
    "int16": np.dtype("<i2"),
}

#: A header longer than this is refused as a broken stream (headers are small JSON objects).
MAX_HEADER_BYTES = 16 << 20

#: How deep a header's JSON may nest. A request nests 3 levels (header, "arrays", an entry's
#: shape), a `describe` reply 9 (the self-test bundle's manifest); Python's JSON parser
#: recurses per level and fails near 1000, and re-encoding a deep value (an echoed "id")
#: recurses again.
MAX_HEADER_DEPTH = 64

#: The most bytes one array of a frame may carry: 4 GiB. The biggest real arrays are far
#: smaller (a published Chatterbox T3 KV cache, [2, 16, 1024, 64] float32, is 8 MiB; an
#: Audio8 slow-AR cache ~1 MiB; a minute of 44.1 kHz float32 audio ~10 MiB), so this only
#: refuses headers that ask for impossible sizes, before any memory is taken for them.
MAX_ARRAY_BYTES = 4 << 30

#: The most bytes all arrays of one frame may carry together. Assets mode sends every state
#: of a model in one frame: T3's 60 caches are 480 MiB.
MAX_FRAME_BYTES = 16 << 30

#: The most dimensions an array may have (numpy 1's limit; no graph comes near it).
MAX_DIMS = 32

#: How a `ProtocolError` message quotes a refused value: cut short and a few levels deep,
#: so a message never echoes a megabyte of a hostile header (nor recurses through its depth).
_QUOTE = reprlib.Repr()
_QUOTE.maxlevel, _QUOTE.maxstring, _QUOTE.maxother, _QUOTE.maxlist, _QUOTE.maxdict = 3, 60, 60, 6, 4

#: Frames up to this size are sent with one write (copied once) by `PipeChannel`.
COALESCE_BYTES = 8 << 20

_LEN = struct.Struct("<I")

Frame = tuple[dict[str, Any], dict[str, np.ndarray]]


class ProtocolError(errors.VoxportError):
    """The byte stream is not a well-formed frame sequence (or ended inside a frame)."""


class FrameRejected(ProtocolError):
    """One whole frame was read but is refused: its header is JSON but not acceptable (NaN,
    a number that overflows, nesting deeper than `MAX_HEADER_DEPTH`), or its arrays are not
    well-formed (a name that is not a string or is listed twice, an unknown dtype, a shape
    that does not match `nbytes`). The entries' `nbytes` were sound, so the frame's end is
    known and every byte of it consumed: the next frame reads normally. `header` is what a
    reply may echo: the frame's header (NaN and overflowing numbers read as null), or for a
    header nested too deep only its "op" and "id" where they are not."""

    def __init__(self, message: str, header: dict[str, Any]) -> None:
        super().__init__(message)
        self.header = header


class FrameTimeout(TimeoutError):
    """The peer did not read or write a frame before the deadline."""


# -- arrays --------------------------------------------------------------------------------------


def wire_array(name: str, value: Any) -> np.ndarray:
    """`value` as an array a frame can carry: C-contiguous, little-endian, a protocol dtype.

    Other integer types (uint16, uint32, uint64) become int64 (lossless but for uint64 beyond
    int64, refused); anything else that is not a protocol dtype is an `InputSpecError` naming
    the input.
    """
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.dtype.name not in DTYPES:
        if arr.dtype.kind in "iu":
            if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
                raise errors.InputSpecError(f"input '{name}': values do not fit int64")
            arr = arr.astype(np.int64)
        else:
            raise errors.InputSpecError(
                f"input '{name}': dtype {arr.dtype} cannot be sent "
                f"(the protocol carries {', '.join(DTYPES)})"
            )
    want = DTYPES[arr.dtype.name]
    if arr.dtype != want:  # a big-endian array of the same kind
        arr = arr.astype(want)
    return np.ascontiguousarray(arr)


def array_entry(name: str, arr: np.ndarray) -> dict[str, Any]:
    return {"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape), "nbytes": arr.nbytes}


def _quote(value: Any) -> str:
    return _QUOTE.repr(value)


def _is_int(value: Any) -> bool:
    """A JSON integer (Python's bool is an int, JSON's true is not a size)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _sizes(entries: Any) -> list[int]:
    """Each entry's `nbytes`: what tells the reader where the frame ends. Without sound sizes
    the stream cannot be followed, so anything wrong here is a (fatal) `ProtocolError`."""
    if not isinstance(entries, list):
        raise ProtocolError(f"header 'arrays' must be a list, got {type(entries).__name__}")
    sizes = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise ProtocolError(f"array entry #{i} {_quote(e)} is not an object")
        n = e.get("nbytes")
        if not _is_int(n) or n < 0:
            raise ProtocolError(
                f"array entry #{i}: nbytes {_quote(n)} is not a byte count (an integer >= 0)"
            )
        if n > MAX_ARRAY_BYTES:
            raise ProtocolError(
                f"array entry #{i}: nbytes {n} is over the protocol's limit of "
                f"{MAX_ARRAY_BYTES} bytes per array (worker_protocol.MAX_ARRAY_BYTES)"
            )
        sizes.append(n)
    if sum(sizes) > MAX_FRAME_BYTES:
        raise ProtocolError(
            f"the arrays of the frame carry {sum(sizes)} bytes, over the protocol's limit of "
            f"{MAX_FRAME_BYTES} (worker_protocol.MAX_FRAME_BYTES)"
        )
    return sizes


def _entry_problem(i: int, e: dict[str, Any], names: set[str]) -> str | None:
    """What is wrong with entry `i` beyond its size (None: nothing). Sizes are Python ints:
    numpy's int64 product wrapped [2**32, 2**32] to 0 bytes, or overflowed on 2**70."""
    name = e.get("name")
    if not isinstance(name, str):
        return f"array entry #{i}: name {_quote(name)} is not a string"
    what = f"array {_quote(name)}"
    dtype = e.get("dtype")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        return f"{what}: dtype {_quote(dtype)} (use one of {list(DTYPES)})"
    shape = e.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(_is_int(d) and 0 <= d <= MAX_ARRAY_BYTES for d in shape)
    ):
        return (
            f"{what}: shape {_quote(shape)} is not a list of at most {MAX_DIMS} sizes "
            f"(integers from 0 to {MAX_ARRAY_BYTES})"
        )
    itemsize = DTYPES[dtype].itemsize
    # numpy refuses even an empty array whose other dimensions overflow its index type
    if math.prod(d for d in shape if d) * itemsize > MAX_ARRAY_BYTES:
        return f"{what}: shape {shape} is over the protocol's limit of {MAX_ARRAY_BYTES} bytes"
    want = math.prod(shape) * itemsize
    if e["nbytes"] != want:
        return f"{what}: nbytes {e['nbytes']} != {want} for {dtype} {shape}"
    if name in names:
        return f"{what} is listed twice"
    names.add(name)
    return None


def _array_from(entry: dict[str, Any], data: bytes | bytearray | memoryview) -> np.ndarray:
    dtype = DTYPES[entry["dtype"]]
    return np.frombuffer(data, dtype=dtype).reshape(entry["shape"])


def _parse_header(text: bytes | bytearray) -> tuple[dict[str, Any], str | None]:
    """The header's JSON object, and what is wrong with it if it is not standard JSON within
    the limits (None: nothing). NaN, Infinity, a number that overflows a float and an integer
    longer than Python reads (4300 digits) read as null, so the header can still be followed
    (its arrays skipped) and its op and id echoed; no reply carrying them could be encoded.
    Text that is not a JSON object at all is a `ProtocolError`."""
    problems: list[str] = []

    def refuse(token: str) -> None:
        problems.append(f"{token[:40]} is not a JSON number this protocol carries")

    def number(token: str) -> float | None:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    def integer(token: str) -> int | None:
        try:
            return int(token)
        except ValueError:  # over sys.get_int_max_str_digits()
            return refuse(f"a {len(token)}-digit integer")

    try:
        header = json.loads(
            bytes(text).decode(), parse_constant=refuse, parse_float=number, parse_int=integer
        )
    except RecursionError:  # Python's parser recurses per level: ~1000 levels end it
        raise ProtocolError(f"the header nests deeper than {MAX_HEADER_DEPTH} levels") from None
    except ValueError as e:  # not UTF-8, not JSON
        raise ProtocolError(f"the header is not UTF-8 JSON ({str(e)[:200]})") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"the header is a JSON {type(header).__name__}, not an object")
    # Only a text with that many brackets can nest that deep: most headers skip the walk.
    if text.count(b"[") + text.count(b"{") > MAX_HEADER_DEPTH and _depth(header) > MAX_HEADER_DEPTH:
        problems.append(f"the header nests deeper than {MAX_HEADER_DEPTH} levels")
    return header, (problems[0] if problems else None)


def _depth(value: Any) -> int:
    """How deep `value` nests (counted up to just past `MAX_HEADER_DEPTH`), walked without
    recursion: a deep value is the point."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        deepest = max(deepest, d)
        if deepest > MAX_HEADER_DEPTH:
            return deepest
        todo.extend((item, d + 1) for item in v)
    return deepest


def _shallow(value: Any) -> bool:
    return _depth(value) < MAX_HEADER_DEPTH


def _read_exact(read: Callable[[int], bytes | bytearray], n: int, what: str) -> bytes | bytearray:
    try:
        data = read(n) if n else b""
    except MemoryError:
        raise ProtocolError(f"no memory for {what} ({n} bytes)") from None
    if len(data) < n:
        raise ProtocolError(f"the stream ended inside {what}")
    return data


def _skip(read: Callable[[int], bytes | bytearray], n: int) -> bool:
    """Read and drop `n` bytes, a bounded piece at a time; False if the stream ended first."""
    while n:
        got = len(read(min(n, 1 << 20)))
        if not got:
            return False
        n -= got
    return True


# -- frames --------------------------------------------------------------------------------------


def encode_frame(
    header: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None
) -> list[bytes | memoryview]:
    """The frame's pieces, in order (write them all; nothing is copied but the header).

    `arrays` must already be wire arrays (`wire_array`); their entries replace any "arrays"
    the header has.
    """
    head = dict(header)
    parts: list[bytes | memoryview] = []
    if arrays is not None:
        head["arrays"] = [array_entry(k, v) for k, v in arrays.items()]
        parts = [memoryview(v.reshape(-1).view(np.uint8)) for v in arrays.values() if v.nbytes]
    text = json.dumps(head, separators=(",", ":"), allow_nan=False).encode()
    return [_LEN.pack(len(text)), text, *parts]


def write_frame(
    stream, header: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None
) -> None:
    """Write one frame to a binary stream and flush it."""
    for part in encode_frame(header, arrays):
        stream.write(part)
    stream.flush()


def read_frame(read: Callable[[int], bytes | bytearray]) -> Frame | None:
    """Read one frame through `read(n)` (n bytes, fewer only at end of stream).

    Returns (header, arrays by name), or None when the stream ends cleanly between frames.
    A frame whose header or arrays are malformed but whose sizes are sound is read to its end
    and refused with `FrameRejected` (the stream goes on); anything else malformed — a length,
    a header that is not a JSON object, an entry's `nbytes`, a size over the `MAX_*` limits —
    or a stream that ends inside a frame is a `ProtocolError`: the stream cannot be followed.
    """
    raw = read(_LEN.size)
    if not raw:
        return None
    if len(raw) < _LEN.size:
        raise ProtocolError("the stream ended inside a frame's length")
    (n,) = _LEN.unpack(raw)
    if n > MAX_HEADER_BYTES:
        raise ProtocolError(f"header length {n} is over {MAX_HEADER_BYTES} bytes: not a frame")
    header, problem = _parse_header(_read_exact(read, n, "a frame's header"))
    entries = header.get("arrays", [])
    sizes = _sizes(entries)
    if problem is None:
        names: set[str] = set()
        problem = next(
            (p for i, e in enumerate(entries) if (p := _entry_problem(i, e, names)) is not None),
            None,
        )
    elif _depth(header) > MAX_HEADER_DEPTH:
        header = {k: header[k] for k in ("op", "id") if k in header and _shallow(header[k])}
    if problem is not None:
        if not _skip(read, sum(sizes)):
            raise ProtocolError(f"{problem}; the stream ended inside the frame's arrays")
        raise FrameRejected(problem, header)
    arrays: dict[str, np.ndarray] = {}
    for e in entries:
        data = _read_exact(read, e["nbytes"], f"array {_quote(e['name'])}")
        arrays[e["name"]] = _array_from(e, data)
    return header, arrays


def stream_reader(stream) -> Callable[[int], bytes]:
    """`read(n)` over a blocking binary stream: loops until n bytes or end of stream."""

    def read(n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            b = stream.read(n - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    return read


class PipeChannel:
    """Frames over two pipe fds (read from the peer, write to it), each bounded by a deadline.

    The client side of a worker: every wait goes through `select`, so a peer that hangs
    (neither answers nor reads its input) raises `FrameTimeout` at the deadline instead of
    blocking forever. A peer that went away reads as end of stream (`recv` returns None) or
    raises `BrokenPipeError` on `send`. The fds stay owned by the caller.
    """

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._rfd, self._wfd = read_fd, write_fd
        os.set_blocking(write_fd, False)

    @staticmethod
    def _wait(fd: int, write: bool, deadline: float | None) -> None:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise FrameTimeout("deadline passed")
        ready = select.select([], [fd], [], left) if write else select.select([fd], [], [], left)
        if not (ready[0] or ready[1]):
            raise FrameTimeout("deadline passed")

    def _read(self, n: int, deadline: float | None) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            self._wait(self._rfd, False, deadline)
            k = os.readv(self._rfd, [view[got:]])
            if k == 0:
                break
            got += k
        view.release()
        if got < n:
            del buf[got:]
        return buf

    def send(
        self,
        header: Mapping[str, Any],
        arrays: Mapping[str, np.ndarray] | None = None,
        deadline: float | None = None,
    ) -> None:
        """Write one frame (`deadline` is a `time.monotonic()` value, None for no limit)."""
        parts = encode_frame(header, arrays)
        if sum(len(p) for p in parts) <= COALESCE_BYTES:
            # One write: the peer wakes once per frame, not once per array.
            parts = [b"".join(parts)]
        for part in parts:
            view = memoryview(part)
            while view.nbytes:
                self._wait(self._wfd, True, deadline)
                try:
                    k = os.write(self._wfd, view)
                except BlockingIOError:
                    continue
                view = view[k:]

    def recv(self, deadline: float | None = None) -> Frame | None:
        """Read one frame; None when the peer closed its end between frames."""
        return read_frame(lambda n: self._read(n, deadline))


# -- errors --------------------------------------------------------------------------------------


def error_reply(exc: BaseException, **fields: Any) -> dict[str, Any]:
    """`{"ok": false, ..., "error": {"type", "message", "user"}}` for an exception."""
    return {
        "ok": False,
        **fields,
        "error": {
            "type": type(exc).__name__,
            "message": str(exc),
            "user": isinstance(exc, errors.UserError),
        },
    }


def rebuild_error(error: Mapping[str, Any]) -> Exception:
    """The exception an error reply stands for: voxport's own classes by name, else RuntimeError."""
    name, message = str(error.get("type", "Error")), str(error.get("message", ""))
    cls = getattr(errors, name, None)
    if cls is ProtocolError or name == "ProtocolError":
        return ProtocolError(message)
    if isinstance(cls, type) and issubclass(cls, Exception) and cls is not errors.ExportLintError:
        return cls(message)
    if error.get("user"):
        return errors.UserError(f"{name}: {message}")
    return RuntimeError(f"{name}: {message}")
