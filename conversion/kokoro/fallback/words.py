"""The training and held-out words: misaki's own gold and silver lexicons, letters only.

Every plain entry of ``us_gold.json`` then ``us_silver.json`` (a part-of-speech entry gives its
``DEFAULT`` reading) whose key, lowercased, is two or more ASCII letters. Where two keys lowercase
to the same word (``Gary``/``gary``, gold/silver) the gold one wins, then the key that was already
lowercase: the reading misaki itself would give the lowercase word. Keys with apostrophes,
hyphens, digits or accents are left out: the rules read runs of a-z (see ``rules.py``), and
single letters are letter names, not letter-to-sound evidence.

A word is held out (never trained on; the accuracy figures are measured on it) when
``sha256(word) % 10 == 0``: about a tenth of the words, the same on every machine.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json

DICTIONARIES = ("us_gold", "us_silver")
STRESSES = "ˈˌ"
HELD_OUT_MODULUS = 10


@functools.cache
def raw_dictionary(name: str) -> dict[str, object]:
    """misaki's packaged ``{name}.json`` as shipped (not grown)."""
    from misaki import data

    return json.loads(importlib.resources.files(data).joinpath(f"{name}.json").read_text("utf-8"))


def is_held_out(word: str) -> bool:
    return int(hashlib.sha256(word.encode("utf-8")).hexdigest(), 16) % HELD_OUT_MODULUS == 0


def is_trainable(word: str) -> bool:
    return len(word) >= 2 and word.isascii() and word.isalpha()


@functools.cache
def lexicon_words() -> tuple[tuple[str, str], ...]:
    """(lowercase word, misaki's phonemes) for every usable entry, sorted by word."""
    best: dict[str, tuple[tuple[int, bool], str]] = {}
    for rank, name in enumerate(DICTIONARIES):
        d = raw_dictionary(name)
        for key in sorted(d):
            value = d[key]
            if isinstance(value, dict):
                value = value.get("DEFAULT")
            word = key.lower()
            if not isinstance(value, str) or not value or not is_trainable(word):
                continue
            priority = (rank, key != word)
            if word not in best or priority < best[word][0]:
                best[word] = (priority, value)
    return tuple((w, best[w][1]) for w in sorted(best))


def training_words() -> list[tuple[str, str]]:
    return [(w, p) for w, p in lexicon_words() if not is_held_out(w)]


def held_out_words() -> list[tuple[str, str]]:
    return [(w, p) for w, p in lexicon_words() if is_held_out(w)]


def units(phonemes: str) -> list[str]:
    """The phoneme string as symbols, a stress mark riding with the symbol after it."""
    out: list[str] = []
    mark = ""
    for c in phonemes:
        if c in STRESSES:
            mark += c
        else:
            out.append(mark + c)
            mark = ""
    if mark:
        out.append(mark)
    return out
