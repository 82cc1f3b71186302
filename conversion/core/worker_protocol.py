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
`conversion.core.serve`.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import errors

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

#: Frames up to this size are sent with one write (copied once) by `PipeChannel`.
COALESCE_BYTES = 8 << 20

_LEN = struct.Struct("<I")

Frame = tuple[dict[str, Any], dict[str, np.ndarray]]


class ProtocolError(errors.VoxportError):
    """The byte stream is not a well-formed frame sequence (or ended inside a frame)."""


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


def _array_from(entry: Any, data: bytes | bytearray | memoryview) -> np.ndarray:
    dtype = DTYPES[entry["dtype"]]
    return np.frombuffer(data, dtype=dtype).reshape(entry["shape"])


def _check_entries(entries: Any) -> list[dict[str, Any]]:
    if not isinstance(entries, list):
        raise ProtocolError(f"header 'arrays' must be a list, got {type(entries).__name__}")
    names = set()
    for e in entries:
        if not isinstance(e, dict) or not {"name", "dtype", "shape", "nbytes"} <= set(e):
            raise ProtocolError(f"array entry {e!r}: needs name, dtype, shape and nbytes")
        if e["dtype"] not in DTYPES:
            raise ProtocolError(
                f"array '{e['name']}': dtype {e['dtype']!r} (use one of {list(DTYPES)})"
            )
        shape = e["shape"]
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise ProtocolError(f"array '{e['name']}': shape {shape!r} is not a list of sizes")
        want = int(np.prod(shape, dtype=np.int64)) * DTYPES[e["dtype"]].itemsize
        if e["nbytes"] != want:
            raise ProtocolError(
                f"array '{e['name']}': nbytes {e['nbytes']} != {want} for {e['dtype']} {shape}"
            )
        if e["name"] in names:
            raise ProtocolError(f"array '{e['name']}' is listed twice")
        names.add(e["name"])
    return entries


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
    A stream that ends inside a frame, or a malformed header, is a `ProtocolError`.
    """
    raw = read(_LEN.size)
    if not raw:
        return None
    if len(raw) < _LEN.size:
        raise ProtocolError("the stream ended inside a frame's length")
    (n,) = _LEN.unpack(raw)
    if n > MAX_HEADER_BYTES:
        raise ProtocolError(f"header length {n} is over {MAX_HEADER_BYTES} bytes: not a frame")
    text = read(n)
    if len(text) < n:
        raise ProtocolError("the stream ended inside a frame's header")
    try:
        header = json.loads(bytes(text).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"the header is not UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"the header is a JSON {type(header).__name__}, not an object")
    arrays: dict[str, np.ndarray] = {}
    for e in _check_entries(header.get("arrays", [])):
        data = read(e["nbytes"]) if e["nbytes"] else b""
        if len(data) < e["nbytes"]:
            raise ProtocolError(f"the stream ended inside array '{e['name']}'")
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
