"""The Python side of VoxportTextTests' MisakiLexiconTests.swift.

    .venv/bin/python conversion/kokoro/lexicon/swift_case.py OUT

Writes into OUT (created if missing):

    lexicon/      write_lexicon's files (the Swift lexicon loads them and grows them)
    grown/        the same dictionaries as misaki's ``Lexicon.grow_dictionary`` grows them
                  (``write_lexicon(grown=True)``): the Swift grow's expected side
    cases.jsonl   one JSON array per distinct call of misaki's ``Lexicon.__call__``:
                  [set, text, alias, tag, token stress, currency, is_head, future_vowel,
                   future_to, num_flags, outcome, phonemes, rating]
                  set: "dev" / "held" (the corpus sentence's index % 5 == 4) / "extra"
                  (direct calls with non-ASCII and odd tokens) / "number" (direct calls on
                  generated number tokens, ``number_cases.py``); outcome: "word" (phonemes and
                  rating are what ``__call__`` returned), "number" (the same, by way of
                  ``get_number``) or "raises" (``get_number`` raised; phonemes is the
                  exception's type)
    summary.json  counts (calls made, distinct calls, number calls, sentences)

Every call and answer is recorded by wrapping the real ``Lexicon.__call__`` while misaki's
``G2P`` runs over the corpus with no fallback (misaki then tries every sub-span of a word it
cannot read: more lexicon calls) and, with ``--kokoro-pass``, again as Kokoro's pipeline
builds it (espeak fallback; 21 s more for ~150 more distinct calls, so the Swift test leaves
it out).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script by the Swift test: the repo root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from conversion.kokoro.lexicon.corpus import corpus  # noqa: E402
from conversion.kokoro.lexicon.number_cases import number_calls  # noqa: E402
from conversion.kokoro.lexicon.writer import write_lexicon  # noqa: E402
from conversion.kokoro.text.prose import is_held_out  # noqa: E402

# Direct calls beyond the corpus: Unicode the corpus lacks (NFKC, other scripts' digits, case
# rules outside ASCII) and the context branches of the special cases.
EXTRA_TEXTS = [
    "café",
    "naïve",
    "Straße",
    "STRASSE",
    "ı.b.",
    "İstanbul",
    "ΣΟΦΙΑ",
    "σοφία",
    "Ｈｅｌｌｏ",
    "ﬁle",
    "ﬁles",
    "Ⅻ",
    "٣",
    "❶",
    "²",
    "x²",
    "e\u0301",
    "cafe\u0301",
    "K",
    "\u212a",
    "ǅemal",
    "ǈ",
    "o’clock",
    "‘tis",
    "rock’n’roll",
    "'",
    "''",
    "-",
    "—",
    "a.b.c.",
    "U.S.A.",
    "u.s.",
    "A.",
    "AM",
    "am",
    "Am",
    "AN",
    "an",
    "An",
    "I",
    "i",
    "by",
    "BY",
    "By",
    "to",
    "To",
    "TO",
    "in",
    "IN",
    "In",
    "the",
    "THE",
    "The",
    "vs",
    "VS",
    "vs.",
    "Vs.",
    "used",
    "USED",
    "Used",
    "&",
    "%",
    "+",
    "@",
    ".",
    "/",
    "dogs'",
    "James'",
    "boss's",
    "running",
    "RUNNING",
    "Running",
    "hopped",
    "tried",
    "boxes",
    "ladies",
    "cats",
    "CATS",
    "iPhone",
    "McDonald",
    "O'Neil",
    "NASA's",
    "x-ray",
    "X-RAY",
    "ab",
    "AB",
    "Ab",
    "zzz",
    "Zzz",
    "ZZZ",
    "bbbing",
    "kicking",
    "cutting",
    "stopped",
    "needed",
    "wanted",
    "batted",
    "visited",
    "liked",
    "5",
    "5s",
    "1990s",
    "3rd",
    "-4",
]
EXTRA_TAGS = ["NN", "NNP", "VBD", "IN", "DT", "PRP", "RB", "JJ", "TO", "ADD", "NNS", "VBG"]
EXTRA_CONTEXTS = [(None, False), (True, False), (False, True)]


def _snapshot(tk: Any, ctx: Any) -> list[Any]:
    return [
        tk.text,
        tk._.alias,
        tk.tag,
        tk._.stress,
        tk._.currency,
        bool(tk._.is_head),
        ctx.future_vowel,
        bool(ctx.future_to),
        tk._.num_flags,
    ]


class Recorder:
    """Wraps ``Lexicon.__call__`` and ``Lexicon.get_number`` on the class while active."""

    def __init__(self) -> None:
        from misaki import en

        self.en = en
        self.calls: dict[tuple, list[Any]] = {}
        self.made = 0
        self.set = "dev"
        self._in_number = False

    def __enter__(self) -> Recorder:
        en, recorder = self.en, self
        self._call, self._number = en.Lexicon.__call__, en.Lexicon.get_number

        def number(lexicon: Any, *args: Any) -> Any:
            recorder._in_number = True
            return recorder._number(lexicon, *args)

        def call(lexicon: Any, tk: Any, ctx: Any) -> Any:
            inputs = _snapshot(tk, ctx)
            recorder._in_number = False
            key = json.dumps(inputs, ensure_ascii=False)
            recorder.made += 1
            try:
                ps, rating = recorder._call(lexicon, tk, ctx)
            except Exception as e:
                if not recorder._in_number:
                    raise
                recorder.calls.setdefault(
                    key, [recorder.set, *inputs, "raises", type(e).__name__, None]
                )
                raise
            outcome = "number" if recorder._in_number else "word"
            recorder.calls.setdefault(key, [recorder.set, *inputs, outcome, ps, rating])
            return ps, rating

        en.Lexicon.__call__, en.Lexicon.get_number = call, number
        return self

    def __exit__(self, *exc: Any) -> None:
        self.en.Lexicon.__call__, self.en.Lexicon.get_number = self._call, self._number


def _g2ps(kokoro_pass: bool) -> list[Any]:
    from misaki import en

    from conversion.kokoro.text.g2p import english_g2p, offline_spacy_model

    with offline_spacy_model():
        bare = en.G2P(trf=False, british=False, fallback=None, unk="")
    return [bare, english_g2p()] if kokoro_pass else [bare]


def _extra_calls(recorder: Recorder, lexicon: Any) -> None:
    from misaki.en import TokenContext
    from misaki.token import MToken

    recorder.set = "extra"
    for text in EXTRA_TEXTS:
        for tag in EXTRA_TAGS:
            for vowel, to in EXTRA_CONTEXTS:
                for stress, currency in ((None, None), (-1, None), (2, "$"), (0.5, None)):
                    tk = MToken(
                        text=text,
                        tag=tag,
                        whitespace=" ",
                        _=MToken.Underscore(
                            is_head=True,
                            num_flags="",
                            prespace=False,
                            stress=stress,
                            currency=currency,
                        ),
                    )
                    lexicon(tk, TokenContext(future_vowel=vowel, future_to=to))


def write_case(out: Path, kokoro_pass: bool = False) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    write_lexicon(out / "lexicon")
    write_lexicon(out / "grown", grown=True)
    sentences = corpus()
    g2ps = _g2ps(kokoro_pass)
    with Recorder() as recorder:
        for g2p in g2ps:
            for i, s in enumerate(sentences):
                recorder.set = "held" if is_held_out(i) else "dev"
                g2p(s)
        _extra_calls(recorder, g2ps[0].lexicon)
        recorder.set = "number"
        number_calls(g2ps[0].lexicon)
    rows = list(recorder.calls.values())
    with (out / "cases.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {
        "sentences": len(sentences),
        "calls_made": recorder.made,
        "distinct_calls": len(rows),
        "number_calls": sum(r[10] == "number" for r in rows),
        "raising_calls": sum(r[10] == "raises" for r in rows),
        **{f"{s}_calls": sum(r[0] == s for r in rows) for s in ("dev", "held", "extra", "number")},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument(
        "--kokoro-pass",
        action="store_true",
        help="also record under Kokoro's G2P (espeak fallback)",
    )
    args = ap.parse_args()
    print(json.dumps(write_case(args.out, args.kokoro_pass)))


if __name__ == "__main__":
    main()
