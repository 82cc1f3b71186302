"""The text rung: voxport's text path (the bundle's tokenizer.json through `TextTokenizer`)
against the publisher's (`punc_norm`, its tokenizer, SOT/EOT, via the oracle), piece by piece
over voxport's split of each case text (`gates.text_pieces`, shared with Turbo's gate).
"""

from __future__ import annotations

from pathlib import Path

from gates import text_pieces
from gates.ladder import Rung

from ..config import ChatterboxConfig
from ..export import TOKENIZER
from ..text import TextChunk, TextTokenizer

# The text rung: voxport's text path (the bundle's tokenizer.json through TextTokenizer) vs
# the publisher's generate() text path (punc_norm, EnTokenizer, SOT/EOT), sentence by sentence.
# Not in the rung: empty text, which the publisher answers with a stock sentence ("You need
# to add some text for me to talk.") and voxport refuses with a one-line UserError.
# Texts over the budget (reduced 60 ids, published 300): voxport splits them, the rung holds
# each piece against the publisher's text path.
TEXT_CASES = text_pieces.TEXT_CASES
TEXT_LONG_CASES = text_pieces.TEXT_LONG_CASES


def text_chunk(bundle: Path, config: ChatterboxConfig, text: str) -> TextChunk:
    """`text` through voxport's text path (the bundle's tokenizer.json), as `speak` sees it."""
    chunks = TextTokenizer(Path(bundle) / TOKENIZER).chunks(text, config.text_budget)
    if len(chunks) != 1:
        raise ValueError(f"the gate's utterance {text!r} must be one chunk, got {len(chunks)}")
    return chunks[0]


def text_rung(
    model, bundle: Path, config: ChatterboxConfig, cases=TEXT_CASES + TEXT_LONG_CASES
) -> Rung:
    """Voxport's text path vs the publisher's, per split piece.

    Voxport: `TextTokenizer.chunks` over the bundle's tokenizer.json (its split and its ids).
    Publisher: voxport's split of the text (`text_pieces.publisher_pieces`), each piece
    through `generate`'s own steps (`punc_norm`, `tokenizer.text_to_tokens`, SOT/EOT) as the
    oracle runs them. The short cases are one piece each (punctuation edge cases); the long
    ones exceed the budget and exercise `split_to_fit` (sentences, clauses, words, characters).
    """
    from ..oracle.t3 import _text_tokens

    return text_pieces.text_rung(
        lambda: TextTokenizer(Path(bundle) / TOKENIZER),
        text_pieces.oracle_text_ids(_text_tokens, model),
        config.text_budget,
        cases,
    )
