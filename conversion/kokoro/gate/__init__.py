"""Kokoro's gate ladder: the host steps, each graph, the whole pipeline, every bucket, and the
speech.

The oracle is the publisher's `kokoro.KModel` on the same weights, with every intermediate
and random draw recorded (oracle.py), fed the publisher's own phonemes: `KPipeline`'s G2P
(misaki, offline), `KModel`'s vocabulary and `KPipeline`'s own voice pack loading and row
choice (`publisher_pack`, `publisher_ref_s`), never voxport's. The bundle side of the speech
rungs speaks voxport's G2P, so a G2P bug in voxport fails the gate. Rungs, in order (the host
rungs first: they need no runtime call, so a ladder stopped at its first failure is cheap):

1. host: G2P, voxport's phonemes equal KPipeline's on every gate sentence (mismatches named);
   voxport's ids and voice row equal the publisher's for voxport's phonemes; the harmonic
   source (`host.harmonic_source` on the oracle's F0 and draws) equals the oracle's `har`
   as a complex spectrum (max |Δ| ≤ 1e-4: float64 against float32 FFTs differ by ~1e-6);
2. each graph fed the oracle's own inputs, compared on the real region (cosine, fp32 ≥ 0.9999):
   predictor (durations, d, t_en; and the rounded durations exactly), prosody (asr, F0, N),
   vocoder (waveform, given the oracle's har);
3. end to end with the oracle's SineGen draws injected: magnitude-spectrogram corr ≥ 0.999;
4. two runs are bit-identical;
5. every bucket that fits gives the unpadded oracle's real-region output;
6. speech: Whisper tiny.en WER of the bundle's audio ≤ 0.10 (absolute), and ≤ the oracle's
   WER + 0.05 (relative);
7. speaker: resemblyzer GE2E cosine of bundle vs oracle audio, same voice, ≥ 0.95 (the
   cosine between two different voices is printed beside it as the scale).

The oracle's record (`record_cases`) is made once; `evaluate_bundle` runs the ladder against
any bundle with the port's host steps as they are now (`port_cases`), which is what the
mutation test (`mutants.py`) needs: the same record, a broken port, the same ladder.

Files, by stage: `cases.py` (the sentences, the publisher's side, the oracle's record),
`host_rungs.py` (rung 1), `graph_rungs.py` (rungs 2-5), `speech.py` (rungs 6-7), `ladder.py`
(the rungs in order, `evaluate_bundle`, `run_gate`). This module re-exports what callers use.
"""

from __future__ import annotations

from .cases import (
    FIXTURE_SENTENCES,
    GATE_VOICE,
    REPO_ID,
    SCALE_VOICE,
    SHORT_SENTENCES,
    Case,
    gate_sentences,
    make_cases,
    port_cases,
    publisher_ids,
    publisher_pack,
    publisher_phonemes,
    publisher_pipeline,
    publisher_ref_s,
    record_cases,
)
from .graph_rungs import COS_MIN, MAGSPEC_MIN, THRESHOLDS, _CaseRuns
from .host_rungs import (
    HAR_MAX_ABS,
    complex_spectrum,
    g2p_rung,
    harmonic_source_rung,
    host_inputs_rung,
    phoneme_agreement,
)
from .ladder import evaluate_bundle, first_failure, kokoro_rungs, run_gate
from .speech import SPEAKER_COS_MIN, WER_MARGIN, WER_MAX, _Speech, asr_rungs, speaker_rung

__all__ = [
    "COS_MIN",
    "FIXTURE_SENTENCES",
    "GATE_VOICE",
    "HAR_MAX_ABS",
    "MAGSPEC_MIN",
    "REPO_ID",
    "SCALE_VOICE",
    "SHORT_SENTENCES",
    "SPEAKER_COS_MIN",
    "THRESHOLDS",
    "WER_MARGIN",
    "WER_MAX",
    "Case",
    "_CaseRuns",
    "_Speech",
    "asr_rungs",
    "complex_spectrum",
    "evaluate_bundle",
    "first_failure",
    "g2p_rung",
    "gate_sentences",
    "harmonic_source_rung",
    "host_inputs_rung",
    "kokoro_rungs",
    "make_cases",
    "phoneme_agreement",
    "port_cases",
    "publisher_ids",
    "publisher_pack",
    "publisher_phonemes",
    "publisher_pipeline",
    "publisher_ref_s",
    "record_cases",
    "run_gate",
    "speaker_rung",
]
