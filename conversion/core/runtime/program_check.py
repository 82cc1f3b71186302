"""An asset's program file checked before the runtime reads it (issue 29).

The runtime's bytecode reader aborts the whole process (SIGABRT: `std::bad_cast`, or
"attempting to parse N bytes when only M remain" then `terminate`) on a program file that is
garbage or truncated — and a bundle whose manifest was re-hashed over such a file passes its
verification. So the file is checked here first, in one line naming it:

- the **header** of MLIR bytecode, what every `.aimodel`'s `main.mlirb` starts with: the magic
  `ML\\xefR`, a version varint (`MAX_VERSION` at most), the producer string ending in a NUL;
- its **size**: the sections that follow (an id byte, its high bit "aligned"; a length
  varint; for an aligned section an alignment varint and 0xCB padding) cover the file exactly,
  each section at most once and every section the reader needs present (`REQUIRED`);
- when the asset has one, its `main.hash` (the sha256 of the program the converter wrote)
  agrees — with `full=True` only: it reads the whole file (a verified load hashes anyway),
  once per process and file (N workers opened on one bundle do not read it N times).

Measured on this toolkit's assets (coreai-core 1.0.0b3): version 6, sections 1, 3, 2, 4, 6,
5 (aligned: the weights), 0, 8, ending exactly at the file's end. The walk reads a few bytes
per section: microseconds, whatever the weights' size.
"""

from __future__ import annotations

import os
from pathlib import Path

from conversion.core.bundle import file_sha256
from conversion.core.errors import BundleIntegrityError

MAGIC = b"ML\xefR"

#: The newest bytecode version this reader knows (MLIR's `kVersion` for LLVM 22: 6).
MAX_VERSION = 6

#: MLIR bytecode's section ids: string, dialect, attr/type, attr/type offsets, IR, resource,
#: resource offsets, dialect versions, properties.
SECTIONS = 9

#: The sections the reader cannot do without: strings, dialects, attributes and types (data
#: and offsets), the IR; properties from version 5 on (`kNativePropertiesEncoding`).
REQUIRED = {0, 1, 2, 3, 4}

_PAD = 0xCB


class _Truncated(Exception):
    pass


class _Reader:
    def __init__(self, f, size: int) -> None:
        self.f, self.size, self.pos = f, size, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > self.size:
            raise _Truncated(f"{n} bytes needed at byte {self.pos}")
        data = os.pread(self.f, n, self.pos)
        if len(data) != n:
            raise _Truncated(f"{n} bytes needed at byte {self.pos}")
        self.pos += n
        return data

    def varint(self) -> int:
        """MLIR's prefix varint: the first byte's trailing zeros + 1 is its length in bytes
        (a zero byte: 8 more bytes follow)."""
        first = self.take(1)[0]
        if first & 1:
            return first >> 1
        if first == 0:
            return int.from_bytes(self.take(8), "little")
        n = (first & -first).bit_length()
        return int.from_bytes(bytes([first]) + self.take(n - 1), "little") >> n


def program_file(asset: Path) -> Path:
    """The program file of asset folder `asset` (`main.mlirb`)."""
    return Path(asset) / "main.mlirb"


def problem(path: Path) -> str | None:
    """What is wrong with program file `path` as MLIR bytecode (None: nothing found)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return "it is missing"
    except OSError as e:
        return f"it cannot be read ({e.strerror})"
    size = 0
    try:
        size = os.fstat(fd).st_size
        r = _Reader(fd, size)
        version, why = _header(r)
        return why or _sections(r, version)
    except _Truncated as e:
        return f"truncated: {e} of a {size}-byte file"
    finally:
        os.close(fd)


def _header(r: _Reader) -> tuple[int, str | None]:
    """(the bytecode version, what is wrong with the header: None when nothing)."""
    if r.size < len(MAGIC) or r.take(len(MAGIC)) != MAGIC:
        return 0, "it does not start with the MLIR bytecode header (garbage)"
    version = r.varint()
    if not 1 <= version <= MAX_VERSION:
        return version, f"bytecode version {version} (this runtime reads 1 to {MAX_VERSION})"
    producer = b""
    while (c := r.take(1)) != b"\0":
        producer += c
        if len(producer) > 256:
            return version, "its producer string does not end (garbage)"
    return version, None


def _sections(r: _Reader, version: int) -> str | None:
    """What is wrong with the sections from `r`'s position to the end (None: nothing)."""
    seen: set[int] = set()
    while r.pos < r.size:
        head = r.take(1)[0]
        section, aligned = head & 0x7F, bool(head & 0x80)
        if section >= SECTIONS or section in seen:
            return f"section id {section} at byte {r.pos - 1} (garbage)"
        seen.add(section)
        length = r.varint()
        if aligned:
            alignment = r.varint()
            if alignment == 0 or alignment & (alignment - 1) or alignment > 1 << 32:
                return f"section {section}'s alignment {alignment} (garbage)"
            while r.pos % alignment:
                if r.take(1)[0] != _PAD:
                    return f"section {section}'s padding (garbage)"
        if r.pos + length > r.size:
            return (
                f"truncated: section {section} runs {r.pos + length - r.size} bytes past "
                f"the end of the file ({r.size} bytes)"
            )
        r.pos += length
    missing = sorted((REQUIRED | ({8} if version >= 5 else set())) - seen)
    if missing:
        return f"truncated: section(s) {missing} are missing ({r.size} bytes)"
    return None


# The program files whose hash this process has compared, as (device, inode, size, mtime): a
# pipeline opening N workers on one bundle reads each program once, not N times.
_HASHED: set[tuple[int, int, int, int]] = set()


def _hash_problem(path: Path) -> str | None:
    recorded = path.with_suffix(".hash")
    try:
        want = recorded.read_bytes()
        st = os.stat(path)
    except OSError:
        return None  # an asset without one: nothing to compare
    seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    if seen in _HASHED:
        return None
    if file_sha256(path) != want.hex():
        return f"its sha256 is not the one in {recorded.name} (modified after export)"
    _HASHED.add(seen)
    return None


def check_asset(asset: Path, full: bool = False) -> None:
    """A `BundleIntegrityError` (a `UserError`: one line, exit 2) naming the program file of
    `asset` when the runtime could not read it; `full` also compares it with its `main.hash`."""
    path = program_file(asset)
    why = problem(path) or (_hash_problem(path) if full else None)
    if why is not None:
        raise BundleIntegrityError(
            f"{path} is not a Core AI program the runtime can read: {why}; re-export the "
            "bundle (or restore the asset)"
        )
