"""Text to T3's text tokens: the publisher's normalisation and tokenizer, split to the budget.

`punc_norm` and `EnTokenizer` are the publisher's own (chatterbox/tts.py, tokenizers/): the
tokens are then what `ChatterboxTTS.generate` feeds T3. The publisher sends any length in one
go; our T3 graph's prefill has a fixed largest bucket, so text longer than `text_budget`
tokens (SOT and EOT included) is split at sentence ends, then clauses, then words — never
truncated. Sentences are packed together up to the budget (`merge_sentences`), so text that
fits is one chunk, normalised and tokenised whole exactly as `generate` does it: kept apart,
"Wait... what?" became two utterances ("Wait," and "What?", punc_norm capitalising the second)
where the publisher says one ("Wait,  what?"), found by the gate's text rung; and text that
fits is normalised as given (split_to_fit collapses whitespace first, so "  hello" was
capitalised, which punc_norm does not do to a leading space).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import UserError
from conversion.core.host.text_split import split_to_fit

from .weights import START_TEXT, STOP_TEXT


@dataclass(frozen=True)
class TextChunk:
    text: str  # after the publisher's punc_norm
    ids: np.ndarray  # int32, SOT + tokens + EOT


class TextTokenizer:
    """The publisher's tokenizer.json through its own `EnTokenizer`."""

    def __init__(self, tokenizer_json: Path) -> None:
        from chatterbox.models.tokenizers import EnTokenizer

        self._tok = EnTokenizer(str(tokenizer_json))

    def ids(self, text: str) -> np.ndarray:
        """SOT + the publisher's tokens of punc_norm(text) + EOT."""
        from chatterbox.tts import punc_norm

        body = self._tok.encode(punc_norm(text))
        return np.asarray([START_TEXT, *body, STOP_TEXT], dtype=np.int32)

    def chunks(self, text: str, budget: int) -> list[TextChunk]:
        """`text` in pieces of at most `budget` ids each (whole when it fits; else split at
        sentence ends, then clauses, then words; never truncated)."""
        from chatterbox.tts import punc_norm

        if not text or not text.strip():
            raise UserError("chatterbox: the text is empty; give it something to say")
        whole = self.ids(text)
        if whole.size <= budget:  # as generate() takes it: punc_norm on the text as given
            return [TextChunk(punc_norm(text), whole)]
        pieces = split_to_fit(text, lambda s: self.ids(s).size <= budget, merge_sentences=True)
        return [TextChunk(punc_norm(p), self.ids(p)) for p in pieces]
