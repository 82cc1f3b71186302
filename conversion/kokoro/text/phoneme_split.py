"""A ready phoneme string split into chunks by the chunker's own rules (``chunks.py``).

A host that gets phonemes rather than text (``voxport phonemize`` output, a device G2P)
still has to fit each utterance into its bundle's largest token bucket. The string is cut
into the tokens a G2P would have produced (a run of symbols is a word; each mark of
``. ! ? … , ; : —``, closing and opening quotes/brackets is a token of its own; the spaces
after a token are its whitespace), so ``tokens_phonemes`` rebuilds the string exactly, and
the chunker's sentence -> clause -> word -> symbol packing runs on them unchanged. The Swift
host (``VoxportHost/Kokoro/PhonemeChunker.swift``) reproduces this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .chunks import (
    CLAUSE_ENDS,
    CLOSERS,
    SENTENCE_ENDS,
    Chunk,
    _pack,
    chunk_from_phonemes,
    split_after,
)
from .ids import MAX_IDS, has_speech

OPENERS = frozenset("(“«")
MARKS = SENTENCE_ENDS | CLAUSE_ENDS | CLOSERS | OPENERS
_TOKEN = re.compile(
    "([" + re.escape("".join(sorted(MARKS))) + "]|[^\\s" + re.escape("".join(sorted(MARKS)))
    + "]+)(\\s*)"
)  # fmt: skip


@dataclass
class PhonemeToken:
    text: str
    phonemes: str
    whitespace: str


def phoneme_tokens(phonemes: str) -> list[PhonemeToken]:
    """The tokens of a phoneme string (leading whitespace dropped)."""
    return [
        PhonemeToken(m.group(1), m.group(1), m.group(2)) for m in _TOKEN.finditer(phonemes.lstrip())
    ]


def split_phonemes(
    phonemes: str, max_ids: int = MAX_IDS, vocab: Mapping[str, int] | None = None
) -> list[Chunk]:
    """Chunks of at most ``max_ids`` ids (pads included) from one phoneme string, split at
    sentences, then clauses, words and symbols; chunks with nothing to say are left out.
    Each chunk's ``text`` is its phoneme string."""
    if max_ids < 3:
        raise ValueError(f"max_ids must leave room for a phoneme between the pads: {max_ids}")
    budget = max_ids - 2
    chunks = []
    for sentence in split_after(phoneme_tokens(phonemes), SENTENCE_ENDS):
        for _, ps, _tokens in _pack([sentence], budget, 0):
            chunk = chunk_from_phonemes(ps, ps, vocab, max_ids)
            if has_speech(chunk.ids, vocab):
                chunks.append(chunk)
    return chunks
