"""The Python side of VoxportEndToEndTests' `kokoro.text` bench (TextBenchTests.swift).

    .venv/bin/python ios/Tests/VoxportEndToEndTests/kokoro_text_case.py make OUT

`make` writes into OUT:

    bundle/       what `kokoro.text` reads of a Kokoro bundle: the reduced bundle's manifest.json
                  and vocab.json (kokoro_case.py's `bundle_path`, exported first when missing),
                  and g2p/ with misaki's data folders (tokenizer/, tagger/, lexicon/) as the
                  three writers lay them out. The export does not write g2p/ yet, so the
                  manifest copy lists it as a host file by name (never hashed: the bench
                  verifies vocab.json alone) so that the bundle's closed-world check lets it be.
    case.json     {"bundle", "cases": [{"text", "phonemize": `voxport phonemize kokoro TEXT`'s
                  JSON}], "blank": {"text", "error": text_to_chunks' message}}

TEXTS hold only words misaki's lexicon knows: the bench runs misaki with no fallback, Python's
phonemize asks espeak-ng for the others.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import kokoro_case

from conversion.cli.main import main
from conversion.kokoro.text.chunks import NothingToSayError, text_to_chunks

TEXTS = (
    "Hello there.",
    # several sentences, one long enough for its clauses, across lines; non-ASCII: typographic
    # quotes and apostrophe, dashes, an ellipsis
    "The owner’s “quiet” dog said — softly — no… This is the first sentence of a long text. "
    + "It goes on, and on, with words joined by commas; and a few more words, " * 4
    + "until it ends! Does it split? Yes: it does,\nacross lines too.",
)
BLANK = "  \n\t "
G2P = "g2p"


def phonemize(text: str) -> dict:
    """`voxport phonemize kokoro TEXT`'s stdout, parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["phonemize", "kokoro", text])
    if code != 0:
        raise SystemExit(f"voxport phonemize kokoro {text!r}: exit {code}")
    return json.loads(out.getvalue())


def text_bundle(dest: Path) -> Path:
    """The reduced bundle's manifest and vocabulary, with a g2p/ folder beside them."""
    from conversion.kokoro.lexicon.writer import write_lexicon
    from conversion.kokoro.tagger.writer import write_tagger
    from conversion.kokoro.text.g2p import english_g2p
    from conversion.kokoro.tokenizer.writer import write_tokenizer

    source = kokoro_case.bundle_path()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copyfile(source / "vocab.json", dest / "vocab.json")
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["meta"]["files"][G2P] = "a folder: listed by name only"
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    nlp = english_g2p().nlp
    write_tokenizer(dest / G2P / "tokenizer", nlp)
    write_tagger(dest / G2P / "tagger", nlp)
    write_lexicon(dest / G2P / "lexicon")
    return dest


def blank_error() -> str:
    try:
        text_to_chunks(BLANK)
    except NothingToSayError as e:
        return str(e)
    raise SystemExit(f"text_to_chunks({BLANK!r}) did not refuse it")


def make(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    bundle = text_bundle(out / "bundle")
    case = {
        "bundle": str(bundle),
        "cases": [{"text": t, "phonemize": phonemize(t)} for t in TEXTS],
        "blank": {"text": BLANK, "error": blank_error()},
    }
    (out / "case.json").write_text(json.dumps(case, ensure_ascii=False, indent=1) + "\n")


if __name__ == "__main__":
    command, path = sys.argv[1], Path(sys.argv[2])
    if command != "make":
        raise SystemExit(f"usage: {sys.argv[0]} make OUT")
    make(path)
