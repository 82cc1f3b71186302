"""Each word's start and end in a chunk's audio, from the predictor's durations: the rule of the
publisher's `KPipeline.join_timestamps` (kokoro 0.9.4), written here over plain tokens so the
host needs no torch and no misaki; the gate holds the two equal (`gate/host_rungs.py`).

`pred_dur[k]` is how many frames (600 samples at 24 kHz, 1/40 s) id k is held, ids being the
chunk's phonemes between two pads. The rule counts in half-frames, so a space between words is
shared: half to the end of the word before it, half to the start of the word after:

- the clock starts at the first pad's frames less 3 (never below 0);
- a token with phonemes spans its phonemes' ids; it starts where the last one left off and ends
  after twice its frames plus its trailing space's (in half-frames);
- a token without phonemes (skipped by the G2P) still moves past its space, if it has one;
- tokens past the end of `pred_dur` (a chunk cut short) get no time.

A chunk whose ids drop a phoneme symbol the vocabulary lacks is counted as the publisher counts
it: by the phoneme string, so later words drift by that id; only misaki's own symbols reach here.
"""

from __future__ import annotations

from collections.abc import Sequence

from conversion.core.speak import WordTiming

from .g2p import Token

# Half-frames per second: a frame is 1/40 s.
HALF_FRAMES_PER_SECOND = 80
# Frames of the first pad not counted as speech (the publisher's offset, with its own "TODO").
LEAD_IN_FRAMES = 3


def word_timings(tokens: Sequence[Token], pred_dur: Sequence[int]) -> list[WordTiming]:
    """The timed tokens of one chunk, in seconds from its first sample."""
    if not tokens:  # a chunk made from phonemes, or cut from one long word: nothing to time
        return []
    dur = [int(d) for d in pred_dur]
    if len(dur) < 3:  # a pad, a phoneme, a pad
        return []
    left = right = 2 * max(0, dur[0] - LEAD_IN_FRAMES)
    i = 1  # the first phoneme's id, after the pad
    out: list[WordTiming] = []
    for t in tokens:
        if i >= len(dur) - 1:
            break
        if not t.phonemes:
            if t.whitespace:
                # Two ids for the one space the token had: the publisher's count, kept.
                i += 1
                left = right + dur[i]
                right = left + dur[i]
                i += 1
            continue
        j = i + len(t.phonemes)
        if j >= len(dur):
            break
        space = dur[j] if t.whitespace else 0
        start = left
        left = right + 2 * sum(dur[i:j]) + space
        out.append(
            WordTiming(t.text, start / HALF_FRAMES_PER_SECOND, left / HALF_FRAMES_PER_SECOND)
        )
        right = left + space
        i = j + (1 if t.whitespace else 0)
    return out


def shifted(words: Sequence[WordTiming], seconds: float) -> list[WordTiming]:
    """`words` moved `seconds` later: a chunk's timings placed in the joined utterance."""
    return [WordTiming(w.text, w.start + seconds, w.end + seconds) for w in words]
