"""The Python side of VoxportTextTests' MisakiEnglishTests.swift: misaki's English G2P end to end.

    .venv/bin/python conversion/kokoro/lexicon/english_case.py OUT [--subset]

Writes into OUT (created if missing):

    tokenizer/    write_tokenizer's folder   } of the very spaCy pipeline misaki runs
    tagger/       write_tagger's folder      } (``english_g2p().nlp``)
    lexicon/      write_lexicon's folder
    cases.jsonl   one JSON array per sentence, misaki's G2P as Kokoro builds it (``english_g2p()``):
                  [set, corpus, index, text, fallbacks, phonemes, spacy]
                  set: "dev" / "held" (``prose.is_held_out`` of the sentence's index in its own
                  corpus); corpus: "lexicon" or "tagger" (the lexicon's corpus first, then the
                  tagger's sentences it does not already hold);
                  fallbacks: every call of the fallback (espeak-ng) in call order, as
                  [token text, token tag, phonemes, rating];
                  phonemes: the phoneme string ``G2P.__call__(text)`` returned;
                  spacy: ``self.nlp(text)``'s tokens as [text, tag_, whitespace_] (to explain a
                  difference; the Swift side computes its own)
    summary.json  counts

With ``--subset`` only the sentences :func:`in_subset` picks are run (the Swift test's debug
default). The fallback's answers are recorded by wrapping the G2P's ``fallback`` while the
real ``__call__`` runs; nothing else of misaki is replaced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from conversion.kokoro.lexicon import corpus as lexicon_corpus  # noqa: E402
from conversion.kokoro.lexicon.g2p_case import Recording  # noqa: E402
from conversion.kokoro.lexicon.writer import write_lexicon  # noqa: E402
from conversion.kokoro.tagger import corpus as tagger_corpus  # noqa: E402
from conversion.kokoro.tagger.writer import write_tagger  # noqa: E402
from conversion.kokoro.text.prose import is_held_out  # noqa: E402
from conversion.kokoro.tokenizer.writer import write_tokenizer  # noqa: E402

SUBSET_EVERY = 25


def in_subset(index: int) -> bool:
    """Every 25th development and every 25th held-out sentence of each corpus (index % 25 in
    {0, 4}): a debug-build Swift run (tokenizer + tagger + G2P) stays well under 40 s."""
    return index % SUBSET_EVERY in (0, 4)


def sentences(subset: bool) -> list[tuple[str, str, int, str]]:
    """(set, corpus, index, text): the lexicon's corpus, then the tagger's new sentences."""
    rows: list[tuple[str, str, int, str]] = []
    seen: set[str] = set()
    for name, texts in (("lexicon", lexicon_corpus.corpus()), ("tagger", tagger_corpus.corpus())):
        for i, s in enumerate(texts):
            if s in seen:
                continue
            seen.add(s)
            if not subset or in_subset(i):
                rows.append(("held" if is_held_out(i) else "dev", name, i, s))
    return rows


def write_case(out: Path, subset: bool = False) -> dict[str, int]:
    from conversion.kokoro.text.g2p import english_g2p

    g2p = english_g2p()
    out.mkdir(parents=True, exist_ok=True)
    write_tokenizer(out / "tokenizer", g2p.nlp)
    write_tagger(out / "tagger", g2p.nlp)
    write_lexicon(out / "lexicon")
    record = Recording(g2p)
    rows = sentences(subset)
    fallbacks = 0
    with (out / "cases.jsonl").open("w", encoding="utf-8") as f:
        for kind, name, i, s in rows:
            phonemes, _ = record.run(s)
            row = [kind, name, i, s, record.fallbacks, phonemes, record.spacy]
            fallbacks += len(row[4])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        "sentences": len(rows),
        "held_out": sum(r[0] == "held" for r in rows),
        "fallback_calls": fallbacks,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--subset", action="store_true", help="only the sentences in_subset picks")
    args = ap.parse_args()
    print(json.dumps(write_case(args.out, args.subset)))


if __name__ == "__main__":
    main()
