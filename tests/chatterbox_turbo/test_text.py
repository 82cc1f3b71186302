"""Voxport's Chatterbox Turbo text path (TurboTextTokenizer) against the publisher's generate()
text path — its Turbo `punc_norm`, then the tokenizer.json through transformers'
`PreTrainedTokenizerFast` called as `generate` calls `AutoTokenizer` — on the whole tokenizer
corpus, over GPT-2's byte-level BPE (Whisper's copy in GPT-2's shape: the snapshot's file is
not reachable here); and the Swift fixtures it writes are the committed ones."""

from __future__ import annotations

import json

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest

from conversion.chatterbox_turbo import text_fixtures
from conversion.chatterbox_turbo.text import TurboTextTokenizer
from conversion.core.errors import UserError
from conversion.fixtures.text import corpus as text_corpus


@pytest.fixture(scope="module")
def tokenizer_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    path.write_text(json.dumps(text_fixtures.gpt2_shaped(), ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def publisher(tokenizer_json):
    """`generate`'s text path: tts_turbo.punc_norm, then the tokenizer as from_local sets it up."""
    from chatterbox.tts_turbo import punc_norm
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json))
    tok.pad_token = tok.eos_token = "<|endoftext|>"

    def run(text: str) -> tuple[str, list[int]]:
        normalized = punc_norm(text)
        return normalized, tok(normalized, padding=True, truncation=True).input_ids

    return run


def test_ids_are_the_publishers_on_the_whole_corpus(tokenizer_json, publisher):
    ours = TurboTextTokenizer(tokenizer_json)
    strings = text_corpus.corpus()
    differ = [s for s in strings if ours.ids(s).tolist() != publisher(s)[1]]
    assert len(strings) > 7_000 and differ == [], f"{len(differ)} differ, first {differ[:3]!r}"


def test_the_corpus_tells_turbos_punc_norm_from_chatterboxs():
    """The fixtures hold Turbo's own table: on enough strings it gives another text than
    Chatterbox's (no "..." / " - " / ";" replacements)."""
    from chatterbox.tts import punc_norm as chatterbox_norm
    from chatterbox.tts_turbo import punc_norm as turbo_norm

    strings = text_corpus.corpus()
    differ = [i for i, s in enumerate(strings) if turbo_norm(s) != chatterbox_norm(s)]
    assert len(differ) > 200
    assert sum(text_corpus.is_held_out(i) for i in differ) > 40


@pytest.mark.parametrize("text", ["Wait... what?", "a - b; c: d", "Hello there", "  hi  …  x "])
def test_text_that_fits_is_the_publishers(tokenizer_json, publisher, text):
    chunks = TurboTextTokenizer(tokenizer_json).chunks(text, 60)
    want_text, want_ids = publisher(text)
    assert [c.text for c in chunks] == [want_text]
    np.testing.assert_array_equal(chunks[0].ids, want_ids)


def test_text_over_the_budget_is_split_at_sentences_then_packed(tokenizer_json, publisher):
    tok = TurboTextTokenizer(tokenizer_json)
    text = "First one here. Second one here. Third sentence is a bit longer than the others."
    chunks = tok.chunks(text, 9)  # the first two are 4 ids each, the third 10
    assert [c.text for c in chunks] == [
        "First one here. Second one here.",
        "Third sentence is a bit longer than the.",
        "Others.",
    ]
    assert all(c.ids.size <= 9 for c in chunks)
    for c in chunks:  # each chunk is what the publisher makes of that piece
        np.testing.assert_array_equal(c.ids, publisher(c.text)[1])
    for blank in ("", "   \n\t "):
        with pytest.raises(UserError, match="empty"):
            tok.chunks(blank, 40)


def test_committed_swift_fixtures_are_current(tmp_path):
    """Regenerate: voxport fixtures swift"""
    text_fixtures.write_text_fixtures(tmp_path)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(text_fixtures.FILES)
    committed = text_fixtures.FOLDER
    assert sorted(p.name for p in committed.iterdir()) == written
    stale = [n for n in written if (tmp_path / n).read_bytes() != (committed / n).read_bytes()]
    assert stale == [], f"{stale} differ: run voxport fixtures swift"
