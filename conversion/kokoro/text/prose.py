"""English prose made offline and deterministically, for the G2P pieces' test corpora
(`conversion/kokoro/tagger/corpus.py`, `conversion/kokoro/lexicon/corpus.py`): the sentences of
Python's own ``pydoc_data.topics`` (prose paragraphs, topics in name order), and the one rule
that holds a fifth of every corpus out of the building loop.
"""

from __future__ import annotations

import re


def is_held_out(index: int) -> bool:
    """Every fifth sentence (index % 5 == 4): nothing is tuned on it, its figures stand alone."""
    return index % 5 == 4


def _paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a pydoc topic: no indented (code, grammar) or underline lines."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        if any(line.startswith((" ", "\t", ">>>")) for line in lines):
            continue
        if any(set(line.strip()) <= set("*=-~^") for line in lines):
            continue
        out.append(" ".join(line.strip() for line in lines))
    return out


def prose_sentences(limit: int, min_words: int) -> list[str]:
    """The first `limit` distinct sentences of `min_words` to 45 words."""
    from pydoc_data.topics import topics

    out: list[str] = []
    seen: set[str] = set()
    for name in sorted(topics):
        for paragraph in _paragraphs(topics[name]):
            for s in re.split(r"(?<=[.!?])\s+(?=[A-Z\"'(])", paragraph):
                s = " ".join(s.split())
                if min_words <= len(s.split()) <= 45 and s not in seen:
                    seen.add(s)
                    out.append(s)
                    if len(out) == limit:
                        return out
    return out
