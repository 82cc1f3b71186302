"""JSON files a user hands voxport (snapshot configs, indexes, manifests, reports), read so
that every way such a file can be broken is one error the caller names in one line.

`json.loads` fails three ways besides a missing file: bytes that are not UTF-8
(`UnicodeDecodeError`), text that is not JSON (`JSONDecodeError`), and nesting deeper than
the parser recurses (`RecursionError`: ~1,000 brackets — not a ValueError, so a caller's
`except ValueError` let it through as a traceback). All three are a `JsonFileError` here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class JsonFileError(ValueError):
    """A file that is not JSON; the message says why in a few words (no path: callers name it)."""


def load_json_file(path: Path | str) -> Any:
    """The JSON value in `path` (UTF-8). OSError (missing, unreadable, a folder) passes through."""
    raw = Path(path).read_bytes()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise JsonFileError(f"not UTF-8 text (byte 0x{raw[e.start]:02x} at {e.start})") from None
    except json.JSONDecodeError as e:
        raise JsonFileError(f"not JSON ({e})") from None
    except RecursionError:
        raise JsonFileError("nested too deeply to be read") from None


def load_json_object(path: Path | str) -> dict[str, Any]:
    """`load_json_file`, and the value must be an object (`{...}`)."""
    doc = load_json_file(path)
    if not isinstance(doc, dict):
        raise JsonFileError(f"a JSON {type(doc).__name__}, not an object")
    return doc
