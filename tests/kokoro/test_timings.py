"""Kokoro's word timings (`conversion/kokoro/text/timings.py`): the publisher's rule, held to
a hand count, to `KPipeline.join_timestamps` itself on misaki's tokens, and placed in the
joined utterance after each chunk and pause."""

from __future__ import annotations

import numpy as np
import pytest

from conversion.core.speak import WordTiming
from conversion.kokoro.gate.cases import publisher_timestamps
from conversion.kokoro.pipeline import ChunkResult, utterance_words
from conversion.kokoro.text.chunks import WordToken, text_to_chunks
from conversion.kokoro.text.timings import word_timings


def test_a_hand_counted_chunk():
    # ids: pad, h ˈ I, space, ð ˈ ɛ ɹ, pad. Clock from 2·(5 - 3) = 4 half-frames; "Hi" takes
    # 2·(1+2+3) plus its space's 4, ending at 4 + 12 + 4 = 20; "there" starts there and ends
    # after the space's other half: right = 24, + 2·8 = 40.
    tokens = [WordToken("Hi", "hˈI", " "), WordToken("there", "ðˈɛɹ", "")]
    got = word_timings(tokens, [5, 1, 2, 3, 4, 2, 2, 2, 2, 6])
    assert got == [WordTiming("Hi", 4 / 80, 20 / 80), WordTiming("there", 20 / 80, 40 / 80)]


def test_short_or_empty_inputs_time_nothing():
    assert word_timings([], [1, 2, 3]) == []
    assert word_timings([WordToken("a", "ɐ", "")], [1, 2]) == []
    # A token whose phonemes run past the durations (a chunk cut short) gets no time.
    assert word_timings(
        [WordToken("a", "ɐ", " "), WordToken("long", "lˈɔŋ", "")], [3, 1, 1, 3]
    ) == [WordTiming("a", 0.0, 3 / 80)]


def _ours(tokens, pred_dur):
    return [(w.text, w.start, w.end) for w in word_timings(tokens, pred_dur)]


@pytest.mark.parametrize(
    "text",
    [
        "Hello there, my friend.",
        "I read 3 books in 2024 — didn't you?",
        "Dr. Smith’s “quote” isn't here; it's $5.50!",
    ],
)
def test_equal_to_join_timestamps_on_misakis_tokens(text):
    (chunk,) = text_to_chunks(text)
    rng = np.random.default_rng(len(text))
    for _ in range(5):
        pred_dur = rng.integers(0, 12, size=len(chunk.ids))
        ours = _ours(chunk.tokens, pred_dur)
        assert ours == publisher_timestamps(chunk.tokens, pred_dur)
        assert len(ours) == sum(1 for t in chunk.tokens if t.phonemes)


def test_equal_to_join_timestamps_with_unpronounced_tokens_and_a_short_chunk():
    tokens = [
        WordToken("one", "wˈʌn", " "),
        WordToken("zzq", None, " "),  # the G2P gave up on it: its space still moves the clock
        WordToken("two", "tˈu", ""),
        WordToken("!", "!", " "),
        WordToken("gone", "ɡˈɔn", ""),
    ]
    rng = np.random.default_rng(7)
    for n in (14, 9, 5):  # the whole chunk, then durations cut short
        pred_dur = rng.integers(1, 9, size=n)
        assert _ours(tokens, pred_dur) == publisher_timestamps(tokens, pred_dur)


def test_chunk_words_are_placed_after_the_chunks_and_pauses_before():
    a = ChunkResult(
        np.zeros(1200, np.float32), np.array([3, 1, 1, 3]), {}, 0.0, (WordToken("a", "ɐ", ""),)
    )
    b = ChunkResult(
        np.zeros(2400, np.float32), np.array([4, 2, 2, 3]), {}, 0.0, (WordToken("b", "bi", ""),)
    )
    words = utterance_words([a, b], gap_samples=600, sr=24000)
    # b starts after a's 1200 samples and the 600-sample pause: 0.075 s.
    assert words == [
        WordTiming("a", 0.0, 2 / 80),
        WordTiming("b", 0.075 + 2 / 80, 0.075 + 10 / 80),
    ]
