"""Text to Turbo's T3 text tokens: the publisher's normalisation and tokenizer, split to the budget.

`ChatterboxTurboTTS.generate` (chatterbox/tts_turbo.py) runs its own `punc_norm` (Chatterbox's
without the "..." / " - " / ";" replacements) and then the snapshot's tokenizer.json through
`AutoTokenizer` (GPT-2's byte-level BPE) with `padding=True, truncation=True` on one string,
and feeds T3 the ids as they come: no start or stop token around them (T3's `inference_turbo`
adds none; GPT-2's post-processor adds none). Here the same file goes through Hugging Face
`tokenizers` with the post-processor applied (what `AutoTokenizer`'s call does: the tests hold
the two equal on the corpus); padding one string is a no-op, and truncation (at the config's
`model_max_length`, 1,024) never acts on a chunk that fits the budget.

As for Chatterbox (`conversion/chatterbox/text.py`), the T3 prefill has a largest bucket, so
text over `budget` ids is split at sentence ends (packed together up to the budget), then
clauses, then words — never truncated; text that fits is one chunk, normalised whole as given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.errors import UserError
from conversion.core.host.text_split import split_to_fit

EMPTY_TEXT = "chatterbox_turbo: the text is empty; give it something to say"


def punc_norm(text: str) -> str:
    """The publisher's Turbo `punc_norm`, itself."""
    from chatterbox.tts_turbo import punc_norm as publisher_punc_norm

    return publisher_punc_norm(text)


@dataclass(frozen=True)
class TextChunk:
    text: str  # after the publisher's Turbo punc_norm
    ids: np.ndarray  # int32, the tokenizer's ids (no start or stop token)


class TurboTextTokenizer:
    """The snapshot's tokenizer.json through Hugging Face `tokenizers`."""

    def __init__(self, tokenizer_json: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(tokenizer_json))

    def ids(self, text: str) -> np.ndarray:
        """The ids `generate` feeds T3 for `text`: the tokens of punc_norm(text)."""
        return np.asarray(self._tok.encode(punc_norm(text)).ids, dtype=np.int32)

    def chunks(self, text: str, budget: int) -> list[TextChunk]:
        """`text` in pieces of at most `budget` ids each (whole when it fits; else split at
        sentence ends, then clauses, then words; never truncated)."""
        if not text or not text.strip():
            raise UserError(EMPTY_TEXT)
        whole = self.ids(text)
        if whole.size <= budget:  # as generate() takes it: punc_norm on the text as given
            return [TextChunk(punc_norm(text), whole)]
        pieces = split_to_fit(text, lambda s: self.ids(s).size <= budget, merge_sentences=True)
        return [TextChunk(punc_norm(p), self.ids(p)) for p in pieces]
