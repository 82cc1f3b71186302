"""The Python side of VoxportEndToEndTests' text benches (TextBenchTests.swift).

    .venv/bin/python ios/Tests/VoxportEndToEndTests/text_bench_case.py make OUT

`make` reuses the reduced random-weight bundles the end-to-end cases use (their `bundle_path`,
chatterbox_case.py's, chatterbox_turbo_case.py's and audio8_case.py's: exported there first when
missing or stale), runs `voxport tokenize chatterbox|chatterbox_turbo|audio8_tts TEXT --weights
random --config reduced` (the CLI's own entry, in this process) on each of TEXTS, asks each
Python front end for its error on blank text, and writes OUT/case.json:

    bundles     {MODEL: path} for each of MODELS
    cases       [{"text": TEXT, MODEL: tokenize's JSON, ...}]
    blank       {"text": BLANK, MODEL: message, ...}
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import audio8_case
import chatterbox_case
import chatterbox_turbo_case

from conversion.cli.main import main
from conversion.core.errors import UserError

MODELS = ("chatterbox", "chatterbox_turbo", "audio8_tts")
TEXTS = (
    "Hello there.",
    # non-ASCII: Latin accents, typographic punctuation (punc_norm rewrites some), CJK, emoji
    "Ça va? Über naïve café — «très» bien… 東京へ行きます。 Voilà 🙂",
    # several sentences and one long run-on sentence: both front ends split it into chunks
    "This is the first sentence of a long text. "
    + "It goes on, and on, with clauses joined by commas, semicolons; and a few more words, " * 6
    + "until it ends! Does it split? Yes:   it   does,\nacross lines too.",
)
BLANK = "  \n\t "


def tokenize(model: str, text: str) -> dict:
    """`voxport tokenize MODEL TEXT --weights random --config reduced`'s stdout, parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["tokenize", model, text, "--weights", "random", "--config", "reduced"])
    if code != 0:
        raise SystemExit(f"voxport tokenize {model} {text!r}: exit {code}")
    return json.loads(out.getvalue())


def blank_errors() -> dict[str, str]:
    """Each front end's own error on blank text (the CLI refuses blank TEXT before them)."""
    from conversion.audio8_tts.port import PORT as AUDIO8
    from conversion.audio8_tts.prompt import split_text
    from conversion.audio8_tts.tokenizer import load_tokenizer
    from conversion.chatterbox.export import TOKENIZER
    from conversion.chatterbox.port import PORT as CHATTERBOX
    from conversion.chatterbox.text import TextTokenizer
    from conversion.chatterbox_turbo.port import PORT as TURBO
    from conversion.chatterbox_turbo.text import TurboTextTokenizer

    messages = {}
    folder, config = CHATTERBOX.resolve("random", "reduced", 0)
    try:
        TextTokenizer(Path(folder) / TOKENIZER).chunks(BLANK, config.text_budget)
    except UserError as e:
        messages["chatterbox"] = str(e)
    folder, config = TURBO.resolve("random", "reduced", 0)
    try:
        TurboTextTokenizer(Path(folder) / TOKENIZER).chunks(BLANK, config.text_budget)
    except UserError as e:
        messages["chatterbox_turbo"] = str(e)
    folder, config = AUDIO8.resolve("random", "reduced", 0)
    try:
        split_text(load_tokenizer(folder), config, BLANK, 8)
    except UserError as e:
        messages["audio8_tts"] = str(e)
    return messages


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundles = {
        "chatterbox": str(chatterbox_case.bundle_path()),
        "chatterbox_turbo": str(chatterbox_turbo_case.bundle_path()),
        "audio8_tts": str(audio8_case.bundle_path()[0]),
    }
    cases = [{"text": text, **{m: tokenize(m, text) for m in MODELS}} for text in TEXTS]
    case = {"bundles": bundles, "cases": cases, "blank": {"text": BLANK, **blank_errors()}}
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"usage: {sys.argv[0]} make OUT")
    make(path)
