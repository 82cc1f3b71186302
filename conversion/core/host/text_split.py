"""Split text into pieces that each fit a model's text budget, at the most natural breaks.

Order of preference: sentences (after ``. ! ? …``), then clauses (after ``, ; : —``), then
words; a single word that still does not fit is cut by characters. Nothing is dropped: the
pieces, joined with single spaces, are the input with its whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"')\]])\s+")
_CLAUSE_END = re.compile(r"(?<=[,;:—])\s+")


def _pack(parts: list[str], fits: Callable[[str], bool], finer) -> list[str]:
    out: list[str] = []
    current = ""
    for part in parts:
        candidate = f"{current} {part}" if current else part
        if fits(candidate):
            current = candidate
            continue
        if current:
            out.append(current)
        if fits(part):
            current = part
        else:
            out.extend(finer(part))
            current = ""
    if current:
        out.append(current)
    return out


def _by_characters(word: str, fits: Callable[[str], bool]) -> list[str]:
    out, current = [], ""
    for ch in word:
        if current and not fits(current + ch):
            out.append(current)
            current = ""
        current += ch
    return [*out, current] if current else out


def split_to_fit(
    text: str, fits: Callable[[str], bool], merge_sentences: bool = False
) -> list[str]:
    """Pieces of `text` for which `fits(piece)` holds.

    Sentences are kept apart unless `merge_sentences` (short utterances then stay short);
    a sentence that does not fit is packed clause by clause, then word by word.
    """
    text = " ".join(text.split())
    if not text:
        return []

    def words(clause: str) -> list[str]:
        return _pack(clause.split(" "), fits, lambda w: _by_characters(w, fits))

    def clauses(sentence: str) -> list[str]:
        return _pack(_CLAUSE_END.split(sentence), fits, words)

    sentences = [s for s in _SENTENCE_END.split(text) if s]
    if merge_sentences:
        return _pack(sentences, fits, clauses)
    out: list[str] = []
    for s in sentences:
        out.extend([s] if fits(s) else clauses(s))
    return out
