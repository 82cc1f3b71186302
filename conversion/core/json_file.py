"""JSON files a user hands voxport (snapshot configs, indexes, manifests, reports), read so
that every way such a file can be broken is one error the caller names in one line.

`json.loads` fails three ways besides a missing file: bytes that are not UTF-8
(`UnicodeDecodeError`), text that is not JSON (`JSONDecodeError`), and nesting deeper than
the parser recurses (`RecursionError`: ~1,000 brackets — not a ValueError, so a caller's
`except ValueError` let it through as a traceback). All three are a `JsonFileError` here. The
nesting is measured before parsing (`MAX_DEPTH`): where a library has raised Python's
recursion limit, the parser would go on recursing, and past the C stack the process dies.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

#: No file voxport reads nests deeper than ~10; a hand-made one past this is refused unparsed.
MAX_DEPTH = 256

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonFileError(ValueError):
    """A file that is not JSON; the message says why in a few words (no path: callers name it)."""


def load_json_file(path: Path | str) -> Any:
    """The JSON value in `path` (UTF-8). OSError (missing, unreadable, a folder) passes through."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise JsonFileError(f"not UTF-8 text (byte 0x{raw[e.start]:02x} at {e.start})") from None
    if nesting_depth(text) > MAX_DEPTH:
        raise JsonFileError(f"nested too deeply to be read (over {MAX_DEPTH} levels)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonFileError(f"not JSON ({e})") from None
    except RecursionError:
        raise JsonFileError("nested too deeply to be read") from None


def nesting_depth(text: str) -> int:
    """How deep the brackets of JSON `text` nest (outside its strings)."""
    steps = (_STEP[b] for b in _BRACKET.findall(_STRING.sub("", text)))
    return max(itertools.accumulate(steps, initial=0))


def load_json_object(path: Path | str) -> dict[str, Any]:
    """`load_json_file`, and the value must be an object (`{...}`)."""
    doc = load_json_file(path)
    if not isinstance(doc, dict):
        raise JsonFileError(f"a JSON {type(doc).__name__}, not an object")
    return doc
