"""The Python side of VoxportEndToEndTests' `kokoro.text` bench (KokoroTextBenchTests.swift).

    .venv/bin/python ios/Tests/VoxportEndToEndTests/kokoro_text_case.py make OUT

`make` writes OUT/case.json:

    {"bundle": the reduced bundle (kokoro_case.py's `bundle_path`: exported first when missing
               or stale; its g2p/ as the export writes it, letter rules included),
     "cases": [{"text", "phonemize": `voxport phonemize kokoro TEXT --fallback rules`'s JSON}],
     "blank": {"text", "error": text_to_chunks' message},
     "long_number": {"text", "error": cli.py text_to_chunks' message},
     "speak": {"text", "max_ids": the bundle's largest token bucket (at most 510), "phonemize":
               `voxport phonemize kokoro TEXT --fallback rules --max-ids MAX_IDS`'s JSON: the
               chunks `kokoro.speak` and KokoroSpeaker say for TEXT on this bundle}}

One text holds words in no lexicon (names), so the letter rules are what read them on both sides.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import kokoro_case

from conversion.cli.main import main
from conversion.core.errors import UserError
from conversion.kokoro.cli import MAX_NUMBER_DIGITS, text_to_chunks
from conversion.kokoro.text.chunks import NothingToSayError
from conversion.kokoro.text.ids import MAX_IDS

TEXTS = (
    "Hello there.",
    # several sentences, one long enough for its clauses, across lines; non-ASCII: typographic
    # quotes and apostrophe, dashes, an ellipsis
    "The owner’s “quiet” dog said — softly — no… This is the first sentence of a long text. "
    + "It goes on, and on, with words joined by commas; and a few more words, " * 4
    + "until it ends! Does it split? Yes: it does,\nacross lines too.",
    # words in no lexicon: the fallback reads them
    "Zorblatt met Siobhan in Frobtown. Quexilon’s grandmother, Mrs. Vlirp, waved.",
)
BLANK = "  \n\t "
# 301 digits in one run (commas and a zero-width space join it), after some words.
LONG_NUMBER = "The count was 1,234" + "\u200b" + "5" * (MAX_NUMBER_DIGITS - 3) + " exactly."


def phonemize(text: str, max_ids: int | None = None) -> dict:
    """`voxport phonemize kokoro TEXT --fallback rules [--max-ids N]`'s stdout, parsed."""
    out = io.StringIO()
    limit = [] if max_ids is None else ["--max-ids", str(max_ids)]
    with contextlib.redirect_stdout(out):
        code = main(["phonemize", "kokoro", text, "--fallback", "rules", *limit])
    if code != 0:
        raise SystemExit(f"voxport phonemize kokoro {text!r}: exit {code}")
    return json.loads(out.getvalue())


def refusal(text: str, error: type[Exception]) -> str:
    try:
        text_to_chunks(text)
    except error as e:
        return str(e)
    raise SystemExit(f"text_to_chunks({text[:20]!r}…) did not refuse it")


def speaker_limit(bundle: Path) -> int:
    """`KokoroPipeline.chunks`' limit: the largest predictor bucket's T, at most MAX_IDS."""
    graphs = json.loads((bundle / "manifest.json").read_text())["graphs"]
    return min(max(b["T"] for b in graphs["predictor"]["meta"]["buckets"]), MAX_IDS)


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = kokoro_case.bundle_path()
    limit = speaker_limit(bundle)
    case = {
        "bundle": str(bundle),
        "cases": [{"text": t, "phonemize": phonemize(t)} for t in TEXTS],
        "blank": {"text": BLANK, "error": refusal(BLANK, NothingToSayError)},
        "long_number": {"text": LONG_NUMBER, "error": refusal(LONG_NUMBER, UserError)},
        "speak": {"text": TEXTS[-1], "max_ids": limit, "phonemize": phonemize(TEXTS[-1], limit)},
    }
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"usage: {sys.argv[0]} make OUT")
    make(path)
