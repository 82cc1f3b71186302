"""Write misaki's gold and silver dictionaries in the line format Swift reads.

One UTF-8 file per dictionary (``us_gold.tsv``, ``us_silver.tsv``), a header line then one
entry per line, keys in code-point order so two writes are byte-identical:

    key TAB phonemes                              a plain entry
    key TAB TAB tag=phonemes TAB tag ...          an entry keyed by part of speech;
                                                  a bare ``tag`` is misaki's ``None``

The empty second field marks a tagged entry (misaki has no empty phoneme string; the writer
checks it). Tab, newline and ``=`` never occur in keys, tags or phonemes (checked too), so the
Swift reader splits bytes without unescaping. Plain text rather than JSON: Swift reads it with
one pass over bytes instead of a general JSON tree (a JSON reader would also have to keep
keys' exact scalars, which ``JSONSerialization`` does not).

The files hold the dictionaries as misaki packages them (``us_gold.json``, ``us_silver.json``),
not grown: the reader grows them as ``Lexicon.grow_dictionary`` does (each key of two or more
letters also under its other capitalisation), which halves the files (9.2 MB grown). Keys are
ASCII (checked): the Swift reader grows them with ASCII case rules, which are Python's there.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from pathlib import Path
from typing import Any

# v2: written as packaged, grown on load (v1 files were grown: a v2 reader refuses them).
HEADER = "# misaki 0.9.4 en lexicon v2: key\\tphonemes | key\\t\\ttag=phonemes\\t...\n"
DICTIONARIES = ("us_gold", "us_silver")


@functools.cache
def packaged_dictionary(name: str) -> dict[str, Any]:
    """misaki's packaged ``{name}.json`` (read once per process; callers must not mutate it)."""
    from misaki import data

    text = importlib.resources.files(data).joinpath(f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def grown_dictionary(name: str) -> dict[str, Any]:
    """misaki's ``Lexicon.grow_dictionary`` over its packaged ``{name}.json``: what
    ``Lexicon`` looks words up in (read once per process; callers must not mutate it)."""
    from misaki import en

    return en.Lexicon.grow_dictionary(packaged_dictionary(name))


def _field(text: str, what: str) -> str:
    if not text or any(c in text for c in "\t\n\r="):
        raise ValueError(f"misaki lexicon {what} {text!r} is empty or holds a tab, newline or '='")
    return text


def encode_dictionary(d: dict[str, Any]) -> bytes:
    lines = [HEADER]
    for key in sorted(d):
        value = d[key]
        if not _field(key, "key").isascii():
            raise ValueError(
                f"misaki lexicon key {key!r} is not ASCII: the reader grows ASCII keys"
            )
        if isinstance(value, str):
            lines.append(f"{key}\t{_field(value, 'phonemes')}\n")
            continue
        fields = []
        for tag in sorted(value):
            v = value[tag]
            fields.append(
                _field(tag, "tag") if v is None else f"{_field(tag, 'tag')}={_field(v, 'phonemes')}"
            )
        lines.append(f"{key}\t\t" + "\t".join(fields) + "\n")
    return "".join(lines).encode("utf-8")


def decode_dictionary(raw: bytes) -> dict[str, Any]:
    """The reader's rule in Python (the round-trip test's other half)."""
    lines = raw.decode("utf-8").split("\n")
    if lines[0] + "\n" != HEADER or lines[-1] != "":
        raise ValueError("not a misaki lexicon file (header or final newline missing)")
    out: dict[str, Any] = {}
    for line in lines[1:-1]:
        key, *fields = line.split("\t")
        if len(fields) == 1:
            out[key] = fields[0]
        else:
            out[key] = {t: (v[0] if v else None) for t, *v in (f.split("=", 1) for f in fields[1:])}
    return out


def write_lexicon(dest: Path, grown: bool = False) -> list[Path]:
    """Write ``us_gold.tsv`` and ``us_silver.tsv`` into ``dest`` (created), as packaged (what a
    reader grows) or, with ``grown``, as misaki grows them (the Swift grow test's other half);
    their paths."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in DICTIONARIES:
        path = dest / f"{name}.tsv"
        d = grown_dictionary(name) if grown else packaged_dictionary(name)
        path.write_bytes(encode_dictionary(d))
        written.append(path)
    return written
