"""The text rung: voxport's text path (the bundle's tokenizer.json through `TurboTextTokenizer`)
against the publisher's (Turbo's `punc_norm` and the loaded model's own tokenizer, as the oracle
runs `generate`'s text path), piece by piece over voxport's split of each case text
(`gates.text_pieces`, shared with Chatterbox's gate).
"""

from __future__ import annotations

from pathlib import Path

from gates import text_pieces
from gates.ladder import Rung

from ..config import TurboConfig
from ..export import TOKENIZER
from ..text import TextChunk, TurboTextTokenizer

# Punctuation edge cases, one piece each at the reduced budget (24 ids): Turbo's punc_norm
# keeps "..." and " - " and ";" that Chatterbox's rewrites.
# Not in the rung: empty text, which voxport refuses with a one-line UserError.
# Texts over the budget (reduced 24 ids, published 256): voxport splits them at sentences,
# clauses, words, characters; the rung holds each piece against the publisher's text path.
TEXT_CASES = text_pieces.TEXT_CASES
TEXT_LONG_CASES = text_pieces.TEXT_LONG_CASES


def text_chunk(bundle: Path, config: TurboConfig, text: str) -> TextChunk:
    """`text` through voxport's text path (the bundle's tokenizer.json), as `speak` sees it."""
    chunks = TurboTextTokenizer(Path(bundle) / TOKENIZER).chunks(text, config.text_budget)
    if len(chunks) != 1:
        raise ValueError(f"the gate's utterance {text!r} must be one chunk, got {len(chunks)}")
    return chunks[0]


def text_rung(model, bundle: Path, config: TurboConfig, cases=TEXT_CASES + TEXT_LONG_CASES) -> Rung:
    """Voxport's text path vs the publisher's, per split piece: the same pieces, text and ids
    (the short cases are one piece each; the long ones exceed the budget and are split)."""
    from ..oracle.t3 import _text_tokens

    return text_pieces.text_rung(
        lambda: TurboTextTokenizer(Path(bundle) / TOKENIZER),
        text_pieces.oracle_text_ids(_text_tokens, model),
        config.text_budget,
        cases,
    )
