"""Letter-to-phoneme alignment by deterministic hard EM (Viterbi training).

Each letter of a word takes 0, 1 or 2 phoneme symbols, in order, covering the reading exactly
(``x`` -> ``ks``, a silent ``e`` -> nothing). An alignment scores the sum over letters of
``log P(chunk | letter)`` with the stress marks left out (stress is learned later, from
context; leaving it out here keeps ``a``->``ˈæ`` and ``a``->``æ`` one piece of evidence).
The first estimate counts every chunk any alignment could give a letter near the diagonal;
then each round aligns every word by its best path and recounts.

The dynamic programme runs in numpy over all words of one (letters, symbols) shape at once
(pure Python took a minute a round). Ties keep the first path in a fixed order (one symbol,
then none, then two), so the result is the same on every run. The scores are log
probabilities rounded to whole micro-nats, so every path's score is a sum of integers (exact
in float64): no summation order or last-bit difference of a machine's log can change a
comparison, and the data file holds strings chosen by integer counts only.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from conversion.kokoro.fallback.words import STRESSES, units

ROUNDS = 4
# Add-lambda for a (letter, chunk) pair never counted: unlikely, never impossible.
SMOOTHING = 0.1
LETTERS = 26
SCORE_SCALE = 1e6  # scores are whole millionths of a nat (see _scores)
_STRIP = str.maketrans("", "", STRESSES)
Chunks = tuple[str, ...]


class _Shape:
    """The words of one (letters n, symbols m) shape as id arrays: each word's letters, the
    chunk id of its symbol j (``one``) and of its symbols j, j+1 (``two``)."""

    def __init__(
        self, n: int, m: int, rows: list[int], letters: list, one: list, two: list
    ) -> None:
        self.n, self.m, self.rows = n, m, rows
        self.letters = np.array(letters, np.int64).reshape(len(rows), n)
        self.one = np.array(one, np.int64).reshape(len(rows), max(m, 1))
        self.two = np.array(two, np.int64).reshape(len(rows), max(m - 1, 1))


def _shapes(words: list[tuple[str, list[str]]]) -> tuple[list[_Shape], dict[str, int]]:
    ids: dict[str, int] = {"": 0}
    by_shape: dict[tuple[int, int], list[int]] = defaultdict(list)
    for r, (word, bare) in enumerate(words):
        by_shape[len(word), len(bare)].append(r)
    shapes = []
    for (n, m), rows in sorted(by_shape.items()):
        letters: list[int] = []
        one: list[int] = []
        two: list[int] = []
        for r in rows:
            word, bare = words[r]
            letters += [ord(c) - 97 for c in word]
            one += [ids.setdefault(x, len(ids)) for x in bare] or [0]
            pairs = [a + b for a, b in zip(bare, bare[1:], strict=False)]
            two += [ids.setdefault(x, len(ids)) for x in pairs] or [0]
        shapes.append(_Shape(n, m, rows, letters, one, two))
    return shapes, ids


def _first_counts(shapes: list[_Shape], size: int) -> np.ndarray:
    """Every chunk within two symbols of the diagonal, once per letter; silence once."""
    counts = np.zeros((LETTERS, size), np.int64)
    for s in shapes:
        for i in range(s.n):
            np.add.at(counts, (s.letters[:, i], 0), 1)
            centre = i * s.m // s.n
            for j in range(max(0, centre - 2), min(s.m, centre + 3)):
                np.add.at(counts, (s.letters[:, i], s.one[:, j]), 1)
                if j + 1 < s.m:
                    np.add.at(counts, (s.letters[:, i], s.two[:, j]), 1)
    return counts


def _scores(counts: np.ndarray) -> np.ndarray:
    """log P(chunk | letter) in whole micro-nats: a path's score is then a sum of integers,
    exact in float64 in any order, and a libm or SIMD log that differs in its last bits moves
    no score (one would have to sit within 1e-10 of a rounding edge)."""
    totals = counts.sum(axis=1, keepdims=True)
    return np.round(np.log((counts + SMOOTHING) / (totals + 1)) * SCORE_SCALE)


def _viterbi(s: _Shape, score: np.ndarray) -> np.ndarray:
    """Symbols taken by each letter (0, 1 or 2), shape (words, n)."""
    w, n, m = len(s.rows), s.n, s.m
    prev = np.full((w, m + 1), -np.inf)
    prev[:, 0] = 0.0
    backs = []
    for i in range(n):
        row_letter = s.letters[:, i : i + 1]
        best = np.full((w, m + 1), -np.inf)
        arg = np.ones((w, m + 1), np.int8)
        if m >= 1:
            best[:, 1:] = prev[:, :-1] + score[row_letter, s.one[:, :m]]
        stay = prev + score[s.letters[:, i], 0][:, None]
        better = stay > best
        best = np.where(better, stay, best)
        arg[better] = 0
        if m >= 2:
            pair = np.full((w, m + 1), -np.inf)
            pair[:, 2:] = prev[:, :-2] + score[row_letter, s.two[:, : m - 1]]
            better = pair > best
            best = np.where(better, pair, best)
            arg[better] = 2
        backs.append(arg)
        prev = best
    takes = np.zeros((w, n), np.int8)
    j = np.full(w, m)
    at = np.arange(w)
    for i in range(n - 1, -1, -1):
        k = backs[i][at, j]
        takes[:, i] = k
        j = j - k
    return takes


def _recount(shapes: list[_Shape], takes: list[np.ndarray], size: int) -> np.ndarray:
    counts = np.zeros((LETTERS, size), np.int64)
    for s, t in zip(shapes, takes, strict=True):
        j = np.zeros(len(s.rows), np.int64)
        for i in range(s.n):
            k = t[:, i].astype(np.int64)
            one = s.one[np.arange(len(j)), np.minimum(j, s.one.shape[1] - 1)]
            two = s.two[np.arange(len(j)), np.minimum(j, s.two.shape[1] - 1)]
            chunk = np.where(k == 1, one, np.where(k == 2, two, 0))
            np.add.at(counts, (s.letters[:, i], chunk), 1)
            j = j + k
    return counts


def align(pairs: list[tuple[str, str]], rounds: int = ROUNDS) -> list[tuple[str, Chunks]]:
    """(word, one chunk per letter with its stress marks) for every pair that aligns (a
    reading longer than two symbols a letter does not), in the order given."""
    full = [(w, units(p)) for w, p in pairs]
    fits = [r for r, (w, syms) in enumerate(full) if len(syms) <= 2 * len(w)]
    words = [(full[r][0], [x.translate(_STRIP) for x in full[r][1]]) for r in fits]
    shapes, ids = _shapes(words)
    counts = _first_counts(shapes, len(ids))
    takes: list[np.ndarray] = []
    for _ in range(rounds):
        score = _scores(counts)
        takes = [_viterbi(s, score) for s in shapes]
        counts = _recount(shapes, takes, len(ids))
    chunks: list[Chunks] = [()] * len(words)
    for s, t in zip(shapes, takes, strict=True):
        for k, r in enumerate(s.rows):
            syms, j, out = full[fits[r]][1], 0, []
            for step in t[k].tolist():
                out.append("".join(syms[j : j + step]))
                j += step
            chunks[r] = tuple(out)
    return [(words[r][0], chunks[r]) for r in range(len(words))]
