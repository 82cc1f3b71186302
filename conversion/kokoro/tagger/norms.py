"""The tables behind a lexeme's NORM attribute, each keyed by spaCy's id of the orth string.

A lexeme's norm is the first lookup table holding its text (the pipeline's ``lexeme_norm``,
then spaCy's ``BASE_NORMS``), else ``text.lower()``: ``util.add_lookups`` chains, read here
from the vocab's getter rather than assumed. Tables keyed by hash (spaCy's ``Table``) keep no
strings, so every table is written as string id -> norm (``get_string_id``: the symbol's
number for one of spaCy's symbol names, else the hash). A token's own NORM (set by a tokenizer
special case, e.g. "n't" -> "not") overrides this and is not a lexeme attribute.
"""

from __future__ import annotations

import functools
from typing import Any

from spacy.attrs import NORM
from spacy.lang.lex_attrs import lower
from spacy.strings import get_string_id
from spacy.util import _get_attr_unless_lookup

from .layers import TaggerArchitectureError


def _tables(getter: Any) -> list[Any]:
    """The lookup tables of an ``add_lookups`` chain, first consulted first."""
    if getter is lower:
        return []
    if not (isinstance(getter, functools.partial) and getter.func is _get_attr_unless_lookup):
        raise TaggerArchitectureError(
            f"the vocab's NORM getter is {getter!r}, not lookups over str.lower; "
            "the Swift port computes only that"
        )
    default, lookups = getter.args
    return list(lookups) + _tables(default)


def _keyed_by_id(table: Any) -> dict[int, str]:
    out: dict[int, str] = {}
    for key, value in table.items():
        out[key if isinstance(key, int) else get_string_id(key)] = str(value)
    return out


def norm_tables(vocab: Any) -> list[dict[int, str]]:
    """The NORM lookup tables in the order they are consulted (repeats dropped)."""
    tables: list[dict[int, str]] = []
    for table in _tables(vocab.lex_attr_getters[NORM]):
        keyed = _keyed_by_id(table)
        if keyed not in tables:
            tables.append(keyed)
    return tables


def lexeme_norm(tables: list[dict[int, str]], text: str) -> str:
    """A lexeme's norm from the exported tables (what the Swift port computes)."""
    key = get_string_id(text)
    for table in tables:
        if key in table:
            return table[key]
    return text.lower()
