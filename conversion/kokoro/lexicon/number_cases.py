"""Generated number tokens for misaki's ``Lexicon.__call__`` (and so ``get_number``).

``number_calls(lexicon)`` calls the real lexicon on every token ``number_tokens()`` makes: integers
from 0 to 10^15 in edge and random forms (with commas, as ordinals, negative, plural), years
by tag, decimals, currency amounts, and the contexts misaki passes (``is_head``,
``num_flags``, a token stress). Exceptions misaki raises are swallowed here (a recorder
wrapping ``__call__`` keeps them). Deterministic: a fixed seed.
"""

from __future__ import annotations

import random
from typing import Any

EDGE_INTEGERS = [
    0, 1, 2, 9, 10, 11, 12, 13, 19, 20, 21, 30, 42, 99, 100, 101, 110, 111, 115, 200, 999,
    1000, 1001, 1010, 1100, 1200, 2000, 2001, 2010, 9999, 10000, 10001, 99999, 100000,
    100001, 1000000, 1000001, 1001000, 2000100, 10**9, 10**12, 10**12 + 1, 10**15 - 1, 10**15,
    10**18, 10**21 + 7, 10**305, 10**306 - 1, 10**306,
]  # fmt: skip
ORDINAL_WORDS = [
    "1st",
    "2nd",
    "3rd",
    "4th",
    "11th",
    "12th",
    "13th",
    "21st",
    "101st",
    "111th",
    "0th",
    "1th",
    "22nd",
    "1,000th",
    "1,001st",
]
DECIMALS = [
    "3.14", "0.5", ".5", "10.05", "1.0", "5.", "0.001", "100.10", "1,000.5", "2.675", "0.1",
    "1.2.3", "192.168.0.1", "3.141592653589793", "0.00001", "12345678.9", "1.999", "07.5",
    "123456789012345678.5", "1." + "0" * 20 + "1", "0." + "0" * 310 + "1",
    "100000000000000000000000.0",
]  # fmt: skip
CURRENCY_AMOUNTS = [
    "5", "5.50", "0.99", "3", "1.5", "1,000,000", "1", "1.01", "0.01", "1.00", "5.999", ".5", "5.",
    "0", "0.0", "2.5.0", "12", "1990", "100.05",
]  # fmt: skip
PLURALS = [
    "1990s",
    "80s",
    "1900s",
    "5s",
    "5's",
    "70's",
    "10ing",
    "2ed",
    "3'd",
    "1,000s",
    "1.5s",
    "2000s",
]
NUM_FLAGS = ["", "a", "&", "n", "an", "&n", "a&n"]
STRESSES = [None, None, None, -1, 2, 0.5, -0.7]
TAGS = ["CD", "NN", "NNS", "JJ", "CD"]


def _ordinal(n: int) -> str:
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def number_tokens(seed: int = 31) -> list[tuple[str, str | None]]:
    """(text, currency) pairs; the contexts come later."""
    rng = random.Random(seed)
    ints = EDGE_INTEGERS + [rng.randrange(10 ** rng.randint(1, 15)) for _ in range(400)]
    words: list[str] = []
    for n in ints:
        words += [str(n), f"{n:,}", _ordinal(n), f"-{n}", f"{n}s"]
    words += [str(y) for y in range(1900, 2100)] + [f"{y}s" for y in range(1900, 2100, 10)]
    words += ORDINAL_WORDS + DECIMALS + PLURALS
    for _ in range(300):
        whole, places = rng.randrange(10 ** rng.randint(1, 9)), rng.randint(1, 6)
        words.append(f"{whole}.{rng.randrange(10**places):0{places}d}")
    words += ["-" + w for w in DECIMALS[:8]] + [
        "0042",
        "007",
        "050",
        "305",
        "120",
        "1,2,3",
        "1,,000",
    ]
    tokens: list[tuple[str, str | None]] = [(w, None) for w in words]
    for amount in CURRENCY_AMOUNTS:
        tokens += [(amount, c) for c in ("$", "£", "€")]
    tokens += [
        (f"{rng.randrange(10 ** rng.randint(1, 7))}.{rng.randrange(100):02d}", "$")
        for _ in range(100)
    ]
    return tokens


def number_calls(lexicon: Any, seed: int = 31) -> int:
    """Calls ``lexicon`` on every generated token in a few contexts; returns the call count."""
    from misaki.en import TokenContext
    from misaki.token import MToken

    rng = random.Random(seed + 1)
    made = 0
    for text, currency in number_tokens(seed):
        for is_head in (True, False):
            flags, stress, tag = rng.choice(NUM_FLAGS), rng.choice(STRESSES), rng.choice(TAGS)
            tk = MToken(
                text=text,
                tag=tag,
                whitespace=" ",
                _=MToken.Underscore(
                    is_head=is_head,
                    num_flags=flags,
                    prespace=False,
                    stress=stress,
                    currency=currency,
                ),
            )
            made += 1
            try:
                lexicon(
                    tk, TokenContext(future_vowel=rng.choice([None, True, False]), future_to=False)
                )
            except Exception:  # noqa: BLE001 - recorded by the wrapper; the Swift side must agree
                pass
    return made
