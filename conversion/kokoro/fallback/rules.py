"""Letter-to-sound rules learned from misaki's own lexicons: the out-of-vocabulary fallback
Kokoro can ship (misaki's default, espeak-ng, is GPL-3 and cannot go into an iOS app).

Why rules and not a neural G2P: the same answer must come out of Python (the gate, the
publisher's pipeline with this fallback) and Swift (the app) for every word, and a table of
letter contexts read with integer counts and string operations only gives that exactly, with no
runtime, no graph and no floating point on the device; it is small (one text file) and it is
rebuilt deterministically from misaki's lexicons by ``python -m conversion.kokoro.fallback.train``.

How a word is read (``LetterRules.word``): each letter, padded with ``#`` for the word's ends,
looks up its widest context first -- ``LEVELS`` windows, each one letter wider than the last,
alternately on the right then the left, up to six letters each side -- and takes the phoneme
chunk (0-2 symbols, stress marks riding with their vowel) of the first context the table holds;
the one-letter context is always there. Then the stress rule: misaki's lexicon words carry
exactly one primary stress when they have a vowel (183,087 of 183,562 entries), so the rules'
output is brought to one (``one_primary``).

How a token is read (``LetterRules.__call__``, misaki's ``fallback=`` signature): NFKD, then
ASCII letters are lowercased and kept, apostrophes and every other non-ASCII scalar (the
combining accents NFKD split off, letters of other scripts) are dropped, and any other ASCII
character (space, hyphen, digit, punctuation) ends a word. A word with no vowel letter
(``aeiouy``) is spelled out with misaki's gold letter names, stressed as misaki's ``get_NNP``
stresses an acronym (primary on the last letter, secondary before). Words are joined by a
space; rating 2 as misaki's ``EspeakFallback`` gives; ``(None, None)`` when no letter is left.
"""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path
from typing import Any

HEADER = (
    "# voxport letter rules v1 (misaki 0.9.4 us_gold+us_silver): context\\tchunk | LETTER\\tname\n"
)
DATA_FILE = Path(__file__).with_name("letter_rules.tsv")
FILE_NAME = DATA_FILE.name
PAD = "#"
LEVELS = 13  # windows of 1..13 letters, up to six each side (see span)
EDGE = LEVELS // 2
RATING = 2
PRIMARY, SECONDARY = "ˈ", "ˌ"
VOWELS = frozenset("AIOQWYaiuæɑɒɔəɛɜɪʊʌᵻ")  # misaki's en.VOWELS
VOWEL_LETTERS = frozenset("aeiouy")
ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def span(level: int) -> tuple[int, int]:
    """(left, right) letters of the window of ``level``: the right side grows first."""
    return level // 2, level - level // 2


def window(padded: str, i: int, level: int) -> str:
    """The context of letter ``i`` of a word padded with ``EDGE`` marks each side."""
    left, right = span(level)
    return padded[EDGE + i - left : EDGE + i + right + 1]


def words_of(text: str) -> list[str]:
    """The lowercase a-z words a token's text holds (see the module docstring)."""
    words, current = [], []
    for c in unicodedata.normalize("NFKD", text):
        if c in ASCII_LETTERS:
            current.append(c.lower())
        elif c == "'" or not c.isascii():
            continue
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def one_primary(ps: str) -> str:
    """Exactly one primary stress where there is a vowel: the last primary stays (earlier ones
    become secondary); with none, the first secondary is promoted, else the first vowel gets it.
    (Keeping the last and promoting beat keeping the first and marking the first vowel by a
    point of word accuracy each on words held out of training.)"""
    last = ps.rfind(PRIMARY)
    if last >= 0:
        return ps[:last].replace(PRIMARY, SECONDARY) + ps[last:]
    if SECONDARY in ps:
        return ps.replace(SECONDARY, PRIMARY, 1)
    for i, c in enumerate(ps):
        if c in VOWELS:
            return ps[:i] + PRIMARY + ps[i:]
    return ps


def encode(rules: dict[str, str], names: dict[str, str]) -> bytes:
    lines = [HEADER]
    table = {**rules, **{k.upper(): v for k, v in names.items()}}
    for key in sorted(table):
        value = table[key]
        if not key or any(c in value for c in "\t\n\r"):
            raise ValueError(f"letter rule {key!r} -> {value!r} holds a tab or newline")
        lines.append(f"{key}\t{value}\n")
    return "".join(lines).encode("utf-8")


def decode(raw: bytes) -> tuple[dict[str, str], dict[str, str]]:
    lines = raw.decode("utf-8").split("\n")
    if lines[0] + "\n" != HEADER or lines[-1] != "":
        raise ValueError("not a letter rules file (header or final newline missing)")
    rules, names = {}, {}
    for line in lines[1:-1]:
        key, value = line.split("\t")
        if key.isupper():
            names[key.lower()] = value
        else:
            rules[key] = value
    return rules, names


class LetterRules:
    """misaki's ``fallback=``: a token to ``(phonemes, rating)`` by the learned rules."""

    def __init__(self, rules: dict[str, str], names: dict[str, str]) -> None:
        self.rules = rules
        self.names = names

    @classmethod
    def read(cls, path: Path = DATA_FILE) -> LetterRules:
        return cls(*decode(path.read_bytes()))

    def letters(self, word: str) -> list[str]:
        """The chunk each letter of a lowercase a-z word reads as, before the stress rule."""
        padded = PAD * EDGE + word + PAD * EDGE
        out = []
        for i in range(len(word)):
            for level in range(LEVELS - 1, -1, -1):
                chunk = self.rules.get(window(padded, i, level))
                if chunk is not None:
                    out.append(chunk)
                    break
            else:
                raise ValueError(f"letter rules have no entry for {word[i]!r}")
        return out

    def spell(self, word: str) -> str:
        ps = "".join(self.names[c] for c in word).replace(SECONDARY, "").replace(PRIMARY, SECONDARY)
        head, sep, tail = ps.rpartition(SECONDARY)
        return head + PRIMARY + tail if sep else ps

    def word(self, word: str) -> str:
        if not any(c in VOWEL_LETTERS for c in word):
            return self.spell(word)
        return one_primary("".join(self.letters(word)))

    def __call__(self, token: Any) -> tuple[str | None, int | None]:
        parts = [p for p in (self.word(w) for w in words_of(token.text)) if p]
        if not parts:
            return None, None
        return " ".join(parts), RATING


@functools.cache
def letter_rules() -> LetterRules:
    """The committed rules, read once per process."""
    return LetterRules.read()


def write_fallback(dest: Path) -> list[Path]:
    """Write the rules file into ``dest`` (created; the Kokoro bundle's ``g2p/fallback/``)."""
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / FILE_NAME
    path.write_bytes(DATA_FILE.read_bytes())
    return [path]
