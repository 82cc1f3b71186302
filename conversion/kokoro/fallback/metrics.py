"""Word accuracy and phoneme error rate of a reader against reference readings."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from conversion.kokoro.fallback.words import units


def symbols(phonemes: str) -> list[str]:
    """Every character a symbol, stress marks included (they count as errors of their own)."""
    return list(phonemes)


def edit_distance(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diag, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (x != y))
    return row[-1]


def score(read: Callable[[str], str | None], pairs: Iterable[tuple[str, str]]) -> dict[str, float]:
    """{"words", "accuracy", "per"}: exact-match share and sum(edits) / sum(reference length)."""
    n = right = edits = length = 0
    for word, reference in pairs:
        got = read(word) or ""
        n += 1
        right += got == reference
        edits += edit_distance(symbols(got), symbols(reference))
        length += len(symbols(reference))
    return {"words": n, "accuracy": right / n, "per": edits / length}


__all__ = ["edit_distance", "score", "symbols", "units"]
