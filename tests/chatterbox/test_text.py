"""Voxport's Chatterbox text path (TextTokenizer.chunks) against the publisher's generate()
text path (punc_norm, EnTokenizer, SOT/EOT), sentence by sentence, on the stand-in tokenizer.
The same cases are a rung of the gate (`text.ids`), there over the bundle's tokenizer.json."""

from __future__ import annotations

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest

from conversion.chatterbox import weights
from conversion.chatterbox.gate.text_rungs import TEXT_CASES
from conversion.chatterbox.text import TextTokenizer
from conversion.core.errors import UserError


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    weights.write_tokenizer(path)
    return path


def _publisher(tokenizer_json, text):
    from chatterbox.models.tokenizers import EnTokenizer
    from chatterbox.tts import punc_norm

    normalized = punc_norm(text)
    ids = EnTokenizer(str(tokenizer_json)).text_to_tokens(normalized)[0].tolist()
    return normalized, [weights.START_TEXT, *ids, weights.STOP_TEXT]


@pytest.mark.parametrize("text", TEXT_CASES)
def test_text_that_fits_is_the_publishers(tokenizer_json, text):
    chunks = TextTokenizer(tokenizer_json).chunks(text, 60)
    want_text, want_ids = _publisher(tokenizer_json, text)
    assert [c.text for c in chunks] == [want_text]
    np.testing.assert_array_equal(chunks[0].ids, want_ids)


def test_edge_cases_are_in_the_rung():
    joined = " ".join(TEXT_CASES)
    for needle in ("...", "\u2026", "\u201c", "\u2019", "\u2014", " - ", ";", ":", "  ", " ,"):
        assert needle in joined, needle
    assert any(c[:1].islower() for c in TEXT_CASES) and any(c[:1] == " " for c in TEXT_CASES)


def test_text_over_the_budget_is_split_at_sentences_then_packed(tokenizer_json):
    tok = TextTokenizer(tokenizer_json)
    text = "First one here. Second one here. Third sentence is a bit longer than the others."
    chunks = tok.chunks(text, 52)  # one id per character, plus SOT and EOT
    assert [c.text for c in chunks] == [
        "First one here. Second one here.",
        "Third sentence is a bit longer than the others.",
    ]
    assert all(c.ids.size <= 52 for c in chunks)
    for c in chunks:  # each chunk is what the publisher makes of that piece
        np.testing.assert_array_equal(c.ids, _publisher(tokenizer_json, c.text)[1])
    with pytest.raises(UserError, match="empty"):
        tok.chunks("   ", 40)
