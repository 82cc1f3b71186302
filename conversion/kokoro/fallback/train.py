"""Rebuild the committed letter rules from misaki's lexicons.

    .venv/bin/python -m conversion.kokoro.fallback.train [--out PATH]

Reads misaki 0.9.4's us_gold and us_silver (``words.py``: the held-out tenth is never read),
aligns letters to phonemes (``align.py``), keeps the contexts that matter (``learn.py``) and
writes ``letter_rules.tsv`` next to this file (or ``--out``): byte-identical on every run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from conversion.kokoro.fallback.align import align
from conversion.kokoro.fallback.learn import learn_rules
from conversion.kokoro.fallback.rules import DATA_FILE, encode
from conversion.kokoro.fallback.words import raw_dictionary, training_words

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def letter_names() -> dict[str, str]:
    """misaki's gold reading of each capital letter, as its ``get_NNP`` spells acronyms."""
    gold = raw_dictionary("us_gold")
    return {c: str(gold[c.upper()]) for c in LETTERS}


def train(pairs: list[tuple[str, str]] | None = None) -> bytes:
    """The rules file's bytes, learned from ``pairs`` (default: every training word)."""
    aligned = align(training_words() if pairs is None else pairs)
    return encode(learn_rules(aligned), letter_names())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA_FILE)
    args = ap.parse_args(argv)
    started = time.monotonic()
    raw = train()
    args.out.write_bytes(raw)
    print(
        f"wrote {args.out} ({len(raw):,} bytes) in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
