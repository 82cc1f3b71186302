"""The Python side of VoxportTextTests' SpacyTokenizerTests.swift.

    .venv/bin/python conversion/kokoro/tokenizer/swift_case.py OUT [--subset]

Writes into OUT (created if missing):

    tokenizer/      write_tokenizer's folder (the Swift tokenizer loads it)
    cases.json      {"strings": [{"source", "index", "held_out", "text",
                     "tokens": [[text, whitespace, norm, lexeme norm]]}]}: spaCy's own
                     ``nlp.tokenizer(text)`` on every string of the tagger corpus, the lexicon
                     corpus and the seeded fuzz (fuzz.py); with --subset every fourth corpus
                     sentence (and all the fuzz), for a debug-build test

The token's norm is spaCy's ``token.norm_`` (a special case's NORM where one is set), the
lexeme's norm ``token.lex.norm_``: where they are equal no special case changed it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from conversion.kokoro.lexicon.corpus import corpus as lexicon_corpus
from conversion.kokoro.tagger.corpus import corpus as tagger_corpus
from conversion.kokoro.tagger.pipeline import tagger_pipeline
from conversion.kokoro.text.prose import is_held_out
from conversion.kokoro.tokenizer.fuzz import fuzz_strings
from conversion.kokoro.tokenizer.writer import write_tokenizer


def write_case(out: Path, subset: bool) -> None:
    nlp = tagger_pipeline()
    write_tokenizer(out / "tokenizer", nlp)
    sources = [("tagger", tagger_corpus()), ("lexicon", lexicon_corpus()), ("fuzz", fuzz_strings())]
    strings = []
    for name, texts in sources:
        for i, text in enumerate(texts):
            if subset and name != "fuzz" and i % 4 != 0:
                continue
            doc = nlp.tokenizer(text)
            tokens = [[t.text, t.whitespace_, t.norm_, t.lex.norm_] for t in doc]
            strings.append(
                {
                    "source": name,
                    "index": i,
                    "held_out": is_held_out(i),
                    "text": text,
                    "tokens": tokens,
                }
            )
    case = {"strings": strings}
    (out / "cases.json").write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--subset", action="store_true", help="every fourth corpus sentence")
    args = parser.parse_args()
    write_case(args.out, args.subset)


if __name__ == "__main__":
    main()
