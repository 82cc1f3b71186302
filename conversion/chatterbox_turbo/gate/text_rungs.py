"""The text rung: voxport's text path (the bundle's tokenizer.json through `TurboTextTokenizer`)
against the publisher's (Turbo's `punc_norm` and the loaded model's own tokenizer, as the oracle
runs `generate`'s text path), piece by piece over voxport's split of each case text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conversion.core.host.text_split import split_to_fit
from gates.ladder import Measured, Rung

from ..config import TurboConfig
from ..export import TOKENIZER
from ..text import TextChunk, TurboTextTokenizer

# Punctuation edge cases, one piece each at the reduced budget (24 ids): Turbo's punc_norm
# keeps "..." and " - " and ";" that Chatterbox's rewrites.
TEXT_CASES = (
    "Hello from voxport.",
    "hello world",  # lower-case start, no final punctuation
    "Wait... what?  Really?",  # ellipsis, double space, two sentences
    "He said: \u201cyes\u201d \u2014 and left; then\u2026 nothing",  # curly quotes, dashes
    "It\u2019s 5 o\u2019clock - tea time , isn\u2019t it",  # apostrophes, spaced dash, " ,"
    "Numbers 1, 2 and 3!   ",  # trailing spaces
    "  leading spaces, lower case",  # punc_norm capitalises only a first character
    "Two sentences. The second one (in brackets) ends here",  # sentences in one chunk
)
# Not in the rung: empty text, which voxport refuses with a one-line UserError.
# Texts over the budget (reduced 24 ids, published 256): voxport splits them at sentences,
# clauses, words, characters; the rung holds each piece against the publisher's text path.
_PARAGRAPH = (
    "The first sentence of the paragraph is plain. The second one, which is longer, carries "
    "two clauses; a semicolon joins them. Does the third ask a question? It does! "
)
TEXT_LONG_CASES = (
    "First one here. Second one here. Third sentence is a bit longer than the others.",
    "One long sentence without a full stop, carrying clause after clause, comma after comma, "
    "so that the split falls back on clauses and then on words when a clause alone is too "
    "long for the budget",
    "Antidisestablishmentarianismsupercalifragilisticexpialidociouspneumonoultramicroscopic "
    "is one word too long for any budget here.",
    _PARAGRAPH * 10,
)


def text_chunk(bundle: Path, config: TurboConfig, text: str) -> TextChunk:
    """`text` through voxport's text path (the bundle's tokenizer.json), as `speak` sees it."""
    chunks = TurboTextTokenizer(Path(bundle) / TOKENIZER).chunks(text, config.text_budget)
    if len(chunks) != 1:
        raise ValueError(f"the gate's utterance {text!r} must be one chunk, got {len(chunks)}")
    return chunks[0]


def publisher_pieces(model, text: str, budget: int) -> list[tuple[str, str, np.ndarray]]:
    """`text` as the publisher's text path sees it once voxport has split it: voxport's split
    (`split_to_fit`, sentences packed, fitting by the publisher's own id count; a text that
    fits whole is one piece taken as given), then each piece through generate()'s text path
    (Turbo's `punc_norm`, `model.tokenizer`): (piece, normalised text, ids) each."""
    from ..oracle.t3 import _text_tokens

    def ids(piece: str) -> np.ndarray:
        return _text_tokens(model, piece)[1][0].numpy().astype(np.int64)

    if ids(text).size <= budget:
        pieces = [text]
    else:
        pieces = split_to_fit(text, lambda p: ids(p).size <= budget, merge_sentences=True)
    return [(p, _text_tokens(model, p)[0], ids(p)) for p in pieces]


def _text_case(model, tok: TurboTextTokenizer, text: str, budget: int) -> str | None:
    """None when voxport's chunks of `text` are the publisher's pieces (same count, each
    piece's normalised text and ids, every chunk within the budget) and the pieces re-join to
    the text (its characters, in order, whitespace aside); else what differs."""
    want = publisher_pieces(model, text, budget)
    rejoined = "".join("".join(p for p, _, _ in want).split())
    if rejoined != "".join(text.split()):
        return f"{text[:40]!r}: the split pieces do not re-join to the text ({rejoined[:40]!r})"
    try:
        got = tok.chunks(text, budget)
    except Exception as err:  # noqa: BLE001 - a refusal is a disagreement, named
        return f"{text[:40]!r}: {type(err).__name__}"
    if len(got) != len(want):
        return f"{text[:40]!r}: {len(got)} chunks vs the publisher's {len(want)} pieces"
    for k, (chunk, (_, want_text, want_ids)) in enumerate(zip(got, want, strict=True)):
        if chunk.ids.size > budget:
            return f"{text[:40]!r} piece {k}: {chunk.ids.size} ids > budget {budget}"
        if chunk.text != want_text:
            return f"{text[:40]!r} piece {k}: {chunk.text!r} vs {want_text!r}"
        if not np.array_equal(chunk.ids.astype(np.int64), want_ids):
            return f"{text[:40]!r} piece {k}: ids differ ({chunk.ids.size} vs {want_ids.size})"
    return None


def text_rung(model, bundle: Path, config: TurboConfig, cases=TEXT_CASES + TEXT_LONG_CASES) -> Rung:
    """Voxport's text path vs the publisher's, per split piece: the same pieces, text and ids
    (the short cases are one piece each; the long ones exceed the budget and are split)."""

    def agreement() -> Measured:
        tok = TurboTextTokenizer(Path(bundle) / TOKENIZER)
        budget = config.text_budget
        bad = [m for m in (_text_case(model, tok, t, budget) for t in cases) if m is not None]
        pieces = sum(len(tok.chunks(t, budget)) for t in cases if not bad)
        n = len(cases)
        note = f"{n - len(bad)}/{n} texts: same pieces, text and ids (budget {budget} ids"
        note += f", {pieces} pieces)" if not bad else ")"
        return Measured((n - len(bad)) / n, note + (f"; {'; '.join(bad[:3])}" if bad else ""))

    return Rung("text.ids", "piece_agreement", 1.0, agreement, True)
