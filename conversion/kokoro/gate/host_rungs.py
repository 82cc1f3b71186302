"""The host rungs, which need no runtime call: voxport's G2P, ids and voice row against the
publisher's, its word timings against `KPipeline.join_timestamps` on the oracle's durations, and
the host's harmonic source against the `har` the oracle's vocoder was given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gates.ladder import Measured, Rung

from .. import host
from ..pipeline import KokoroPipeline
from ..text.timings import word_timings
from .cases import Case, publisher_pipeline, publisher_timestamps

# The host's harmonic source against the oracle's: the same float32 torch ops and draws, only
# the final STFT runs in float64 numpy (~1e-6 from torch's float32 FFT, source.py).
HAR_MAX_ABS = 1e-4


def complex_spectrum(har: np.ndarray) -> np.ndarray:
    """``har`` ([1, 2·bins, n]: magnitudes then phases) as the real and imaginary parts of
    its spectrum, [2, bins, n]: a phase near ±π compares by its value, not its wrap."""
    har = np.asarray(har, np.float64)
    bins = har.shape[1] // 2
    mag, phase = har[0, :bins], har[0, bins:]
    return np.stack([mag * np.cos(phase), mag * np.sin(phase)])


def harmonic_source_rung(pipeline: KokoroPipeline, case: Case) -> Rung:
    """The host's harmonic source (`host.harmonic_source`, the bundle's source weights) on
    the oracle's F0 and draws, against the `har` the oracle's vocoder was given."""
    fx = case.fixture.intermediates

    def compute():
        draws = case.draws()
        ours = host.harmonic_source(
            fx["F0"],
            pipeline.source_weight,
            pipeline.source_bias,
            draws["rand_ini"],
            draws["sine_noise"],
        )
        return complex_spectrum(fx["har"]), complex_spectrum(ours)

    return Rung(
        "host: harmonic source (oracle F0, draws) vs oracle har", "max_abs", HAR_MAX_ABS, compute
    )


def host_inputs_rung(cases: Sequence[Case]) -> Rung:
    """voxport's ids and voice row for its own phonemes against the publisher's for the same
    phonemes (KModel's vocabulary, KPipeline's `pack[len(ps) - 1]`): the share of sentences
    where both are equal. A G2P mismatch is the G2P rung's; this one holds the host steps
    after it (`phonemes_to_ids`, `load_voice`, `ref_s_for`)."""

    def compute() -> Measured:
        bad = []
        for c in cases:
            ps = c.chunk.phonemes
            ids = [0, *[c.vocab[p] for p in ps if p in c.vocab], 0]
            row = np.asarray(c.publisher_pack, np.float32).reshape(-1, 256)[len(ps) - 1]
            what = [
                n
                for n, ok in (
                    ("ids", c.chunk.ids == ids),
                    ("voice row", np.array_equal(np.asarray(c.ref_s).reshape(-1), row)),
                )
                if not ok
            ]
            if what:
                bad.append(f"{c.text!r}: {' and '.join(what)} differ")
        return Measured(1.0 - len(bad) / max(len(cases), 1), "; ".join(bad) or "all equal")

    return Rung(
        f"host: voxport's ids and voice row = the publisher's over {len(cases)} sentence(s)",
        "sentence_agreement",
        1.0,
        compute,
    )


def phoneme_agreement(texts: Sequence[str], ours: Sequence[str], theirs: Sequence[str]):
    """The share of sentences whose phoneme strings are equal, the mismatches in the note."""
    bad = [(t, a, b) for t, a, b in zip(texts, ours, theirs, strict=True) if a != b]
    note = "; ".join(f"{t!r}: voxport {a!r} vs KPipeline {b!r}" for t, a, b in bad)
    return Measured(1.0 - len(bad) / max(len(texts), 1), note or "all equal")


def g2p_rung(cases: Sequence[Case]) -> Rung:
    """voxport's G2P (the bundle side's phonemes) against KPipeline's (the oracle's)."""
    return Rung(
        f"G2P: voxport phonemes = KPipeline's over {len(cases)} sentence(s)",
        "sentence_agreement",
        1.0,
        lambda: phoneme_agreement(
            [c.text for c in cases],
            [c.chunk.phonemes for c in cases],
            [c.oracle_phonemes for c in cases],
        ),
    )


def publisher_word_timings(text: str, pred_dur: np.ndarray) -> list[tuple[str, float, float]]:
    """`KPipeline.join_timestamps` over the publisher's own tokens of `text` (one chunk)."""
    (result,) = list(publisher_pipeline()(text))
    return publisher_timestamps(result.tokens, pred_dur)


def word_timings_rung(cases: Sequence[Case]) -> Rung:
    """voxport's word timings (its own chunk's tokens, `text/timings.py`) against the
    publisher's `join_timestamps` over its own tokens, both on the oracle's durations: the
    share of sentences where every word's text, start and end are equal."""

    def compute() -> Measured:
        bad = []
        for c in cases:
            pred_dur = np.asarray(c.fixture.intermediates["pred_dur"]).reshape(-1)
            ours = [(w.text, w.start, w.end) for w in word_timings(c.chunk.tokens, pred_dur)]
            theirs = publisher_word_timings(c.text, pred_dur)
            if ours != theirs:
                first = next(
                    (f"{a} vs {b}" for a, b in zip(ours, theirs, strict=False) if a != b),
                    f"{len(ours)} vs {len(theirs)} words",
                )
                bad.append(f"{c.text!r}: {first}")
        return Measured(1.0 - len(bad) / max(len(cases), 1), "; ".join(bad) or "all equal")

    return Rung(
        f"host: word timings = KPipeline.join_timestamps over {len(cases)} sentence(s)",
        "sentence_agreement",
        1.0,
        compute,
    )
