"""The values the verbs' flags and arguments take, checked where argparse reads them (or, for
text, by `main._validate`) so a bad one is refused before any weights or bundle load.

Seeds: 0 .. 2**32 - 1 for every seed flag. The draws feed them to numpy's generators (which
refuse a negative seed), to torch's (which refuse one past 2**64 - 1), and derive more from
them (`seed * 1000 + chunk`, `seed + 1000 * (part + 1)`), as the Swift hosts do in Int
arithmetic that traps on overflow; 32 bits keep every derived seed far inside all of them, and
one range for every model means a seed that works for one works for all.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

SEED_MAX = 2**32 - 1


def seed(value: str) -> int:
    """`--seed`, `--weights-seed` (argparse type): a whole number in 0 .. SEED_MAX."""
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or not 0 <= n <= SEED_MAX:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 0 to {SEED_MAX}, got '{value}'"
        )
    return n


def seed_list(value: str) -> list[int]:
    """`0,1,2` -> [0, 1, 2] (argparse type), each seed as `seed` takes it."""
    words = [s for s in value.split(",") if s.strip()]
    if not words:
        raise argparse.ArgumentTypeError("give at least one seed")
    try:
        return [seed(s) for s in words]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"'{value}' is not a comma-separated list of seeds, each from 0 to {SEED_MAX}"
        ) from None


def count(value: str) -> int:
    """A number of times, such as `--repeats` (argparse type): a whole number of at least 1
    (0 would be taken for "not given" and run the default, a negative one fails late)."""
    try:
        n = int(value)
    except ValueError:
        n = None
    if n is None or n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got '{value}'")
    return n


def number_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` to `high` (a rate such as `--speed`; a
    value far outside a model's range fails only after the bundle has loaded, or silently)."""

    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and low <= x <= high):
            raise argparse.ArgumentTypeError(
                f"must be a finite number from {low:g} to {high:g}, got '{value}'"
            )
        return x

    return parse


def utf8_problem(text: str) -> str | None:
    """What in `text` is not UTF-8, or None. Bytes of argv that do not decode reach Python as
    lone surrogates (PEP 383: U+DC80..U+DCFF for the byte 0x80..0xFF); every tokenizer and G2P
    downstream fails on them with a traceback."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(text[e.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        return f"{what} at character {e.start}"
    return None
