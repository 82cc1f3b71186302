"""The Python side of VoxportTextTests' MisakiG2PTests.swift.

    .venv/bin/python conversion/kokoro/lexicon/g2p_case.py OUT

Writes into OUT (created if missing):

    lexicon/      write_lexicon's files (the Swift lexicon loads them)
    cases.jsonl   one JSON array per corpus sentence, misaki's G2P as Kokoro builds it
                  (``english_g2p()``: spaCy small tagger, espeak-ng fallback, ``unk=""``):
                  [set, index, text, spacy, fallbacks, phonemes, tokens]
                  set: "dev" / "held" (``prose.is_held_out`` of the sentence's index) /
                  "extra" (EXTRA_SENTENCES, after the corpus);
                  spacy: ``self.nlp(text)``'s tokens as [text, tag_, whitespace_];
                  fallbacks: every call of the fallback in call order, as
                  [token text, token tag, phonemes, rating];
                  phonemes, tokens: what ``G2P.__call__`` returned, each token as
                  [text, tag, whitespace, phonemes, _.rating, rating attribute, start_ts, end_ts]
                  (misaki sets ``w.rating`` beside ``w._.rating`` for words its loop reads)
    pieces.jsonl  direct checks of two stages on seeded random strings and every spaCy token
                  text of the run: ["subtokenize", s, misaki's ``subtokenize(s)``] and
                  ["preprocess", s, text, words, [[word index, feature], ...]]
    summary.json  counts (sentences, fallback calls, pieces)

With ``--subset`` only the held-out sentences, every third development one (corpus index
% 3 == 0) and the extra ones are run (the Swift test's debug default; ~10 s instead of ~22 s).

spaCy's output and the fallback's answers are recorded by wrapping the G2P's ``nlp`` and
``fallback`` while the real ``__call__`` runs, so the Swift side is fed exactly what misaki saw.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from conversion.kokoro.lexicon.corpus import corpus  # noqa: E402
from conversion.kokoro.lexicon.writer import write_lexicon  # noqa: E402
from conversion.kokoro.text.prose import is_held_out  # noqa: E402

# Sentences beyond the corpus for the stages it barely reaches: every kind of link feature,
# currency, dashes, "2" between letters, camel case, apostrophes, slashes, odd spacing.
EXTRA_SENTENCES = [
    "[Kokoro](/kˈOkəɹO/) reads [New York](/nu jˈɔɹk/) and [Misaki](/misˈɑki/).",
    "Say [hello](-1) to the [world](2) and [read](0.5) it, [again](+0.5) or [not](-0.5).",
    "The year [1990](#n#) had [1](#a#) cat and [2,000](#&#) dogs.",
    "It costs $5.50, £10 or €20.75; $ alone and $1,000,000 too.",
    "He said - and she said – then — nothing.",
    "Meet me 2morrow at 4pm, or face2face, or B2B.",
    "McDonald's iPhone XMLHttpRequest and NASA's JSONParser work.",
    "Rock'n'roll, don't'cha, 'tis, ''quoted'', dogs' toys and James' car.",
    "x-ray, well-known, self-driving, A/B testing, and/or 50/50 odds.",
    "The end of the world; the apple; the hour; the university.",
    "I want to go TO the store, To be or not to be.",
    "Numbers: 1,234.56, -42, 3rd, 21st, 1990s, 0.5, .75 and 10%.",
    '(Parentheses) and "double quotes" and “curly ones” here!',
    "Zxqvwbl frumpish glorbnax snorkelwhistle-ish blargh.",
    "U.S.A. e.g. i.e. Dr. Mr. St. vs. etc.",
    "A_B__C snake_case_name and kebab-case-name.",
    "[link]() [empty](x) [nested [brackets]](1) [a](/) [b](//) [c](##).",
    "  Leading spaces and   double  spaces.",
    "Tabs\tand\nnewlines\n\nhere.",
    "The 2 of us, 2 be, word2word and 4x4.",
]


# Alphabets for the random strings: the characters each stage's rules look at.
SUBTOKEN_ALPHABET = "aAbBzZéÉßǅ'‘’-_,.0192٣ /$x"
LINK_ALPHABET = "[]()ab /#-+05.\n"
PIECES_SEED = 3131


def _random_strings(r: random.Random, alphabet: str, count: int, longest: int) -> list[str]:
    return ["".join(r.choices(alphabet, k=r.randint(1, longest))) for _ in range(count)]


def _pieces(token_texts: set[str]) -> list[list[Any]]:
    from misaki import en

    r = random.Random(PIECES_SEED)
    words = sorted(token_texts) + _random_strings(r, SUBTOKEN_ALPHABET, 4000, 10)
    links = [f"[{a}]({b})" for a, b in zip(*[_random_strings(r, "ab /#", 300, 4)] * 2, strict=True)]
    links += [
        f"x [{w}]({f}) y"
        for w in ("a", "a b")
        for f in (
            "1",
            "-2",
            "+3",
            "0.5",
            "+0.5",
            "-0.5",
            "/p/",
            "/p//",
            "#n#",
            "#n##",
            "/",
            "#",
            "x",
            "12\n",
            "",
        )
    ]
    rows = [["subtokenize", w, en.subtokenize(w)] for w in words]
    for text in links + _random_strings(r, LINK_ALPHABET, 3000, 16):
        result, tokens, features = en.G2P.preprocess(text)
        rows.append(["preprocess", text, result, tokens, [[k, v] for k, v in features.items()]])
    return rows


class Recording:
    """Wraps one G2P's ``nlp`` and ``fallback`` and keeps what each returned for a sentence."""

    def __init__(self, g2p: Any) -> None:
        self.g2p = g2p
        self.spacy: list[list[str]] = []
        self.fallbacks: list[list[Any]] = []
        nlp, fallback = g2p.nlp, g2p.fallback
        if fallback is None:
            raise SystemExit("espeak-ng fallback unavailable: install espeak-ng (phonemizer) first")

        def tagged(text: str) -> Any:
            doc = nlp(text)
            self.spacy = [[tk.text, tk.tag_, tk.whitespace_] for tk in doc]
            return doc

        def answered(token: Any) -> Any:
            ps, rating = fallback(token)
            self.fallbacks.append([token.text, token.tag, ps, rating])
            return ps, rating

        g2p.nlp, g2p.fallback = tagged, answered

    def run(self, text: str) -> tuple[str, list[Any]]:
        """misaki's (phonemes, tokens) for `text`; `spacy` and `fallbacks` are then this call's."""
        self.spacy, self.fallbacks = [], []
        return self.g2p(text)

    def __call__(self, text: str) -> list[Any]:
        phonemes, tokens = self.run(text)
        rows = [
            [
                tk.text,
                tk.tag,
                tk.whitespace,
                tk.phonemes,
                tk._.rating,
                tk.__dict__.get("rating"),
                tk.start_ts,
                tk.end_ts,
            ]
            for tk in tokens
        ]
        return [self.spacy, self.fallbacks, phonemes, rows]


def write_case(out: Path, subset: bool = False) -> dict[str, int]:
    from conversion.kokoro.text.g2p import english_g2p

    out.mkdir(parents=True, exist_ok=True)
    write_lexicon(out / "lexicon")
    record = Recording(english_g2p())
    fallbacks = 0
    sentences = corpus()
    sets = ["held" if is_held_out(i) else "dev" for i in range(len(sentences))]
    rows = [
        (i, sets[i], s)
        for i, s in enumerate(sentences)
        if not subset or sets[i] == "held" or i % 3 == 0
    ]
    rows += [(len(sentences) + k, "extra", s) for k, s in enumerate(EXTRA_SENTENCES)]
    with (out / "cases.jsonl").open("w", encoding="utf-8") as f:
        for i, kind, s in rows:
            row = [kind, i, s, *record(s)]
            fallbacks += len(row[4])
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    texts = {
        t[0] for line in (out / "cases.jsonl").open(encoding="utf-8") for t in json.loads(line)[3]
    }
    pieces = _pieces(texts)
    with (out / "pieces.jsonl").open("w", encoding="utf-8") as f:
        for row in pieces:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {"sentences": len(rows), "fallback_calls": fallbacks, "pieces": len(pieces)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--subset", action="store_true", help="held-out, every third and extra only")
    args = ap.parse_args()
    print(json.dumps(write_case(args.out, args.subset)))


if __name__ == "__main__":
    main()
