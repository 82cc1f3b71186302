"""The Python side of VoxportTextTests' MisakiLetterRulesTests.swift: the letter-rule fallback.

    .venv/bin/python conversion/kokoro/fallback/swift_case.py OUT [--sentences] [--subset]

Writes into OUT (created if missing):

    fallback/       write_fallback's folder (what Swift reads)
    tokens.jsonl    one JSON array per token text: [text, phonemes, rating], the rules'
                    answer (``letter_rules()(token)``) for every held-out lexicon word, then
                    2,000 seeded random strings and the edge cases ``EDGE_CASES``
    summary.json    counts (and, with --sentences, the corpus comparison below)

With ``--sentences`` also ``tokenizer/``, ``tagger/``, ``lexicon/`` (as english_case.py writes
them) and ``sentences.jsonl``: per sentence of english_case.py's corpus,
[set, corpus, index, text, rules, espeak, calls]: misaki's phoneme string with the rules as its
fallback (``english_g2p("rules")``), with espeak-ng (``english_g2p("espeak")``, the publisher's),
and how many times the rules were asked. ``--subset`` keeps english_case.py's ``in_subset``
sentences only.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from conversion.kokoro.fallback.metrics import edit_distance  # noqa: E402
from conversion.kokoro.fallback.rules import letter_rules, write_fallback  # noqa: E402
from conversion.kokoro.fallback.words import held_out_words  # noqa: E402

RANDOM_STRINGS = 2_000
SEED = 31
# Scalars the random strings draw from: ASCII letters of both cases (most), digits, apostrophes,
# separators, accents precomposed and combining, and scalars NFKD turns into ASCII letters
# (ligature, full-width, long s, ordinal, Roman numeral, squared unit) or drops (other scripts).
ALPHABET = (
    "abcdefghijklmnopqrstuvwxyz" * 3
    + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    + "0123456789'’‘- .,_/"
    + "éïÇñÅøßæœ\u0301\u0308ﬁＡｂſªⅫ㎏²αжΩ日本😀\u00a0\u200b"
)
EDGE_CASES = (
    "",
    "'",
    "’s",
    "-",
    "xkcd",
    "NTH",
    "y",
    "Y",
    "rhythm",
    "a",
    "ʃ",
    "McDonald's",
    "rock'n'roll",
    "co-op",
    "C3PO",
    "R2-D2",
    "naïveté",
    "Zoë",
    "ﬂuﬀ",
    "ＡＢＣ",
    "ⅫⅣ",
    "straße",
    "αβγ",
    "e\u0301e\u0301",
    "hello world",
    "aaaaaaaaaaaaaaaaaaaa",
    "qqqqqqqqqqqq",
    "eeeeeeee",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
)


def random_strings(n: int = RANDOM_STRINGS, seed: int = SEED) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14))) for _ in range(n)]


def token_texts() -> list[str]:
    return [w for w, _ in held_out_words()] + random_strings() + list(EDGE_CASES)


def write_tokens(out: Path) -> int:
    rules = letter_rules()
    texts = token_texts()
    with (out / "tokens.jsonl").open("w", encoding="utf-8") as f:
        for text in texts:
            ps, rating = rules(SimpleNamespace(text=text))
            f.write(json.dumps([text, ps, rating], ensure_ascii=False) + "\n")
    return len(texts)


def write_sentences(out: Path, subset: bool) -> dict[str, float]:
    from conversion.kokoro.lexicon.english_case import sentences
    from conversion.kokoro.lexicon.g2p_case import Recording
    from conversion.kokoro.lexicon.writer import write_lexicon
    from conversion.kokoro.tagger.writer import write_tagger
    from conversion.kokoro.text.g2p import english_g2p
    from conversion.kokoro.tokenizer.writer import write_tokenizer

    espeak = english_g2p("espeak")
    ruled = Recording(english_g2p("rules"))
    write_tokenizer(out / "tokenizer", espeak.nlp)
    write_tagger(out / "tagger", espeak.nlp)
    write_lexicon(out / "lexicon")
    rows = sentences(subset)
    same = calls = edits = length = 0
    with (out / "sentences.jsonl").open("w", encoding="utf-8") as f:
        for kind, name, i, text in rows:
            theirs = espeak(text)[0]
            ours = ruled.run(text)[0]
            calls += len(ruled.fallbacks)
            same += ours == theirs
            edits += edit_distance(list(ours), list(theirs))
            length += len(theirs)
            row = [kind, name, i, text, ours, theirs, len(ruled.fallbacks)]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {
        "sentences": len(rows),
        "rules_equal_espeak": same,
        "per_rules_vs_espeak": edits / length,
        "rules_calls": calls,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--sentences", action="store_true", help="also the corpus, end to end")
    ap.add_argument("--subset", action="store_true", help="english_case.py's in_subset only")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write_fallback(args.out / "fallback")
    summary: dict[str, float] = {"tokens": write_tokens(args.out)}
    if args.sentences:
        summary |= write_sentences(args.out, args.subset)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
