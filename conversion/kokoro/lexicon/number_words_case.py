"""The Python side of VoxportTextTests' EnglishNumberWordsTests.swift.

    .venv/bin/python conversion/kokoro/lexicon/number_words_case.py

Prints one line per case, ``kind<TAB>input<TAB>num2words' answer`` (``!raises`` where
num2words raises), for what misaki's ``get_number`` asks of num2words 0.5.14's English:
``cardinal`` and ``ordinal`` of ``int(digits)`` (0..2000, random integers of every length to
306 digits, powers of ten and their neighbours, leading zeros, 10^306 and beyond), ``year``
(-100..3000 and random to 99,999; misaki passes four digits), and ``float`` of ``float(text)``
(seeded texts of digits around one ".", as misaki meets them, and doubles next to powers of
ten written out whole). num2words is called, never imitated: the Swift side has its own words.
Deterministic: a fixed seed.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterator
from decimal import Decimal

from num2words import num2words

MAX_DIGITS = 306  # num2words raises from 10^306 on


def integer_texts(rnd: random.Random) -> list[str]:
    texts = [str(n) for n in range(2001)] + ["00", "007", "0000", "000100", "0" * 30 + "42"]
    for digits in range(1, MAX_DIGITS + 4):
        # two of each length to 30 digits, one beyond (num2words takes ~3 ms on 300 digits)
        for _ in range(2 if digits <= 30 else 1):
            texts.append(str(rnd.randrange(10 ** (digits - 1), 10**digits)))
        # a few groups set, the rest zero: where "and" and "," are decided
        groups = range(digits // 3 + 1)
        n = sum(rnd.randrange(1000) * 1000**g for g in rnd.sample(groups, min(3, len(groups))))
        texts.append(str(n % 10**digits))
    for k in range(MAX_DIGITS + 3):
        texts += [str(10**k - 1), str(10**k), str(10**k + 1)]
    return texts


def float_texts(rnd: random.Random) -> list[str]:
    texts = [
        "3.14", ".5", "5.", "0.5", "10.05", "0.001", "2.675", "0.1", "0.30", "100.50", "1.0", "0.0",
        "00.50", "3.141592653589793", "12345678.9", "33.3333333333333333", "1.0000000000000002",
        "0.00001", "0." + "0" * 299 + "1", "0." + "0" * 306 + "1", "0." + "0" * 309 + "1",
        "1" + "0" * 305 + ".5", "9" * 306 + ".0", "1" + "0" * 400 + ".5", ".",
    ]  # fmt: skip
    for _ in range(700):
        wide = [rnd.randrange(3, 16), rnd.randrange(16, 40), rnd.randrange(40, 310)]
        digits = rnd.choice([1, 1, 1, 2, 3, *wide])
        whole = rnd.randrange(10**digits) if rnd.random() > 0.2 else 0
        places = rnd.choice([1, 1, 2, 2, 3, rnd.randrange(1, 25)])
        lead = rnd.choice(["", "", "", "0" * rnd.randrange(1, 8)])
        fraction = lead + "".join(rnd.choice("0123456789") for _ in range(places))
        texts.append(f"{whole}.{fraction}")
    # the doubles at and either side of each 10^3k, written out whole: the float reading
    # compares with 10^3k exactly and divides by its nearest double, which can carry a whole
    # thousand into a group
    for m in range(3, MAX_DIGITS + 1, 3):
        p = float(10**m)
        for v in (math.nextafter(p, 0), p, math.nextafter(p, math.inf)):
            text = format(Decimal(v), "f")
            texts.append(text if "." in text else text + ".0")
    return texts


def answer(number: int | float, to: str) -> str:
    try:
        return num2words(number, lang="en", to=to)
    except (OverflowError, ValueError):
        return "!raises"


def cases() -> Iterator[tuple[str, str, str]]:
    rnd = random.Random(20260)
    for text in integer_texts(rnd):
        yield "cardinal", text, answer(int(text), "cardinal")
        yield "ordinal", text, answer(int(text), "ordinal")
    years = list(range(-100, 3001)) + [rnd.randrange(100_000) for _ in range(400)]
    for year in years:
        yield "year", str(year), answer(year, "year")
    for text in float_texts(rnd):
        try:
            number = float(text)
        except ValueError:  # "." (misaki's float() raises too)
            yield "float", text, "!raises"
            continue
        yield "float", text, answer(number, "cardinal")


def main() -> None:
    out = sys.stdout
    for kind, text, expected in cases():
        out.write(f"{kind}\t{text}\t{expected}\n")


if __name__ == "__main__":
    main()
