"""The text rung of a model that splits long text into pieces: voxport's text path (its
tokenizer's `chunks(text, budget)`, each chunk with `.text` and `.ids`) against the publisher's,
piece by piece over voxport's split of each case text (`split_to_fit`, fitting by the
publisher's own id count), each piece through the publisher's text path (`text_ids`: its
normalised text and ids).

The cases are English punctuation edge cases (one piece each at a reduced budget) and texts
over any budget (split at sentences, clauses, words, characters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from conversion.core.host.text_split import split_to_fit
from gates.ladder import Measured, Rung

# the publisher's text path on one piece: (normalised text, 1-D int64 ids)
TextIds = Callable[[str], tuple[str, np.ndarray]]

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
# Sentences that pack, a sentence split at its clauses, clauses split at words, a word longer
# than the budget (cut by characters), and a paragraph over a published budget even with a
# real BPE tokenizer (~4 characters an id).
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


def oracle_text_ids(text_tokens: Callable[[Any, str], tuple[str, Any]], model: Any) -> TextIds:
    """The publisher's text path from an oracle's `text_tokens(model, text)`, which gives the
    normalised text and a [1, n] torch tensor of ids."""

    def text_ids(piece: str) -> tuple[str, np.ndarray]:
        normalised, ids = text_tokens(model, piece)
        return normalised, ids[0].numpy().astype(np.int64)

    return text_ids


def publisher_pieces(
    text_ids: TextIds, text: str, budget: int
) -> list[tuple[str, str, np.ndarray]]:
    """`text` as the publisher's text path sees it once voxport has split it: voxport's split
    (`split_to_fit`, sentences packed, fitting by the publisher's own id count; a text that
    fits whole is one piece taken as given), then each piece through `text_ids`: (piece,
    normalised text, ids) each."""

    def fits(piece: str) -> bool:
        return text_ids(piece)[1].size <= budget

    pieces = [text] if fits(text) else split_to_fit(text, fits, merge_sentences=True)
    return [(p, *text_ids(p)) for p in pieces]


def text_case(text_ids: TextIds, tok: Any, text: str, budget: int) -> str | None:
    """None when voxport's chunks of `text` are the publisher's pieces (same count, each
    piece's normalised text and ids, every chunk within the budget) and the pieces re-join to
    the text (its characters, in order, whitespace aside); else what differs."""
    want = publisher_pieces(text_ids, text, budget)
    # every character kept, in order, none added (a word cut by characters re-joins without
    # its pieces' separating space, so whitespace is left out of the comparison)
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


def text_rung(
    tokenizer: Callable[[], Any], text_ids: TextIds, budget: int, cases: Sequence[str]
) -> Rung:
    """`text.ids`: the share of `cases` whose chunks by `tokenizer()` (made when the rung runs,
    so a patched tokenizer is the one measured) are the publisher's pieces (`text_case`)."""

    def agreement() -> Measured:
        tok = tokenizer()
        bad = [m for m in (text_case(text_ids, tok, t, budget) for t in cases) if m is not None]
        pieces = sum(len(tok.chunks(t, budget)) for t in cases if not bad)
        n = len(cases)
        note = f"{n - len(bad)}/{n} texts: same pieces, text and ids (budget {budget} ids"
        note += f", {pieces} pieces)" if not bad else ")"
        return Measured((n - len(bad)) / n, note + (f"; {'; '.join(bad[:3])}" if bad else ""))

    return Rung("text.ids", "piece_agreement", 1.0, agreement, True)
