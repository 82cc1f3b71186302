"""The Python side of VoxportHostTests' KokoroTextChunkerTests.swift: `text_to_chunks` on texts
that exercise every rule of `chunks.py` and `normalize.py`.

    .venv/bin/python conversion/kokoro/text/chunks_case.py OUT

Writes into OUT (created if missing):

    tokenizer/, tagger/, lexicon/   the three writers' folders, of the pipeline misaki runs
                                    (what `MisakiEnglish(folder:)` reads)
    vocab.json                      the published vocabulary, as a bundle carries it
    cases.json                      one object per case: text, max_ids, the fallback's (espeak-ng)
                                    calls in order as [word, phonemes, rating] (`espeak`
                                    false: the case ran without it), and either
                                    `error` (NothingToSayError's / the bad limit's message) or
                                    `chunks` (text, phonemes, ids, tokens as [text, phonemes,
                                    whitespace]) with `warnings` (unpronounced words, dropped
                                    phoneme symbols) in the order Python raised them

The fallback is recorded by wrapping misaki's while the real `text_to_chunks` runs (through
g2p_case's Recording); nothing else is replaced.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from conversion.kokoro.lexicon.g2p_case import Recording  # noqa: E402
from conversion.kokoro.lexicon.writer import write_lexicon  # noqa: E402
from conversion.kokoro.tagger.writer import write_tagger  # noqa: E402
from conversion.kokoro.text.chunks import (  # noqa: E402
    NothingToSayError,
    UnpronouncedWordWarning,
    text_to_chunks,
)
from conversion.kokoro.text.ids import MAX_IDS, UnknownPhonemeWarning, load_vocab  # noqa: E402
from conversion.kokoro.tokenizer.writer import write_tokenizer  # noqa: E402

LONG = (
    "When the sun rises over the quiet hills, the birds begin to sing; the farmers wake, "
    "and the long day begins: slowly, quietly, without any hurry at all."
)
STORY = (
    "Once upon a time, there was a small house. It stood by a river! Did anyone live there? "
    "Nobody knew… The end."
)

# (text, max_ids): every level of the split, every normalisation rule, the errors.
CASES: list[tuple[str, int]] = [
    ("Hello there.", MAX_IDS),
    ("Hello there. How are you today? I'm fine!", MAX_IDS),
    ("First paragraph here.\n\nSecond one, with a comma.\r\nThird line.", MAX_IDS),
    ("One.\rTwo.\u2028Three.\u2029Four.\vFive.\fSix.\x85Seven.", MAX_IDS),
    (LONG, MAX_IDS),
    (LONG, 60),
    (LONG, 40),
    (LONG, 12),
    (LONG, 5),
    ("Supercalifragilisticexpialidocious!", 8),
    ("Supercalifragilisticexpialidocious, indeed.", 3),
    (STORY, MAX_IDS),
    (STORY, 30),
    ('"Stop!" she said. "Now." (Really.) He left.', MAX_IDS),
    ('"Stop!" she said. "Now." (Really.) He left.', 14),
    ("He said, “It’s fine.” Then he left.", MAX_IDS),
    ("(This is in brackets.) And this isn't.", MAX_IDS),
    ("Yes!!! Really?! Fine...", MAX_IDS),
    ("Wait — what? No; yes: maybe.", MAX_IDS),
    ("Wait — what? No; yes: maybe.", 9),
    ("It cost $12.50 on March 3rd, 2021, at 4:30 pm.", MAX_IDS),
    ("I have 3 cats, 2 dogs and 1,000,000 ants.", MAX_IDS),
    ("I have 3 cats, 2 dogs and 1,000,000 ants.", 20),
    ("The year 1999 was 20% better than 1998's.", MAX_IDS),
    ("Dr. Smith lives at 221B Baker St. in London.", MAX_IDS),
    ("Mr. O'Neil's dog; it's 'fine'.", MAX_IDS),
    ("The zyxqv flurbled the grommets.", MAX_IDS),
    ("Cafe\u0301 nai\u0308ve re\u0301sume\u0301.", MAX_IDS),
    ("Hel\u200blo wor\u00adld, \ufeffagain\u200e.", MAX_IDS),
    ("\x07Ring the\x1f bell\t\tnow.", MAX_IDS),
    ("  Spaces   everywhere \u3000 here.  ", MAX_IDS),
    ("Hello.\n…\nBye.", MAX_IDS),
    ("…", MAX_IDS),
    ("?!", MAX_IDS),
    ("... — ;", MAX_IDS),
    ("", MAX_IDS),
    ("   \n\t  \r\n ", MAX_IDS),
    ("\u200b\u200b", MAX_IDS),
    ("Hello there.", 2),
    ("A. B. C. D.", MAX_IDS),
    ("Go! Go! Go! " * 8, 24),
    ("x" * 70 + "?", MAX_IDS),
]
# Run with no fallback (misaki's `unk=""`): words outside the lexicon are skipped, with a warning.
NO_FALLBACK: list[tuple[str, int]] = [
    ("The zyxqv flurbled the grommets.", MAX_IDS),
    ("Hello zyxqv.\nQwrtp there, xqzt.", MAX_IDS),
    ("Zyxqv qwrtp!", MAX_IDS),
]


def _tokens(chunk: Any) -> list[list[Any]]:
    return [[t.text, t.phonemes, t.whitespace] for t in chunk.tokens]


def run_case(
    record: Recording, vocab: dict[str, int], text: str, max_ids: int, espeak: bool = True
) -> dict:
    """`text_to_chunks(text)` with the fallback's calls and the warnings recorded; `espeak`
    False: misaki without its fallback."""
    fallbacks: list[list[Any]] = []
    answered = record.g2p.fallback

    def g2p(paragraph: str) -> tuple[str, list[Any]]:
        out = record.run(paragraph)
        fallbacks.extend([f[0], f[2], f[3]] for f in record.fallbacks)
        return out

    row: dict[str, Any] = {"text": text, "max_ids": max_ids, "espeak": espeak}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record.g2p.fallback = answered if espeak else None
        try:
            chunks = text_to_chunks(text, g2p=g2p, max_ids=max_ids, vocab=vocab)
        except (NothingToSayError, ValueError) as e:
            row["error"] = str(e)
            chunks = None
        finally:
            record.g2p.fallback = answered
    row["fallbacks"] = fallbacks
    row["warnings"] = [
        str(w.message)
        for w in caught
        if issubclass(w.category, (UnpronouncedWordWarning, UnknownPhonemeWarning))
    ]
    if chunks is not None:
        row["chunks"] = [
            {"text": c.text, "phonemes": c.phonemes, "ids": c.ids, "tokens": _tokens(c)}
            for c in chunks
        ]
    return row


def write_case(out: Path) -> dict[str, int]:
    from conversion.kokoro.text.g2p import english_g2p

    g2p = english_g2p()
    out.mkdir(parents=True, exist_ok=True)
    write_tokenizer(out / "tokenizer", g2p.nlp)
    write_tagger(out / "tagger", g2p.nlp)
    write_lexicon(out / "lexicon")
    vocab = load_vocab()
    (out / "vocab.json").write_text(json.dumps({"vocab": vocab}, ensure_ascii=False) + "\n")
    record = Recording(g2p)
    rows = [run_case(record, vocab, text, max_ids) for text, max_ids in CASES]
    rows += [run_case(record, vocab, text, max_ids, espeak=False) for text, max_ids in NO_FALLBACK]
    (out / "cases.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    return {
        "cases": len(rows),
        "errors": sum("error" in r for r in rows),
        "chunks": sum(len(r.get("chunks", [])) for r in rows),
        "fallback_calls": sum(len(r["fallbacks"]) for r in rows),
        "warnings": sum(len(r["warnings"]) for r in rows),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    print(json.dumps(write_case(ap.parse_args().out)))


if __name__ == "__main__":
    main()
