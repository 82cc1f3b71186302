"""The speech rungs: Whisper's WER of the bundle's audio (absolute, and against the oracle's), and
the GE2E speaker cosine of bundle vs oracle audio; `_Speech` makes each side's audio and
transcript once and both rungs read them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gates.asr import transcribe, word_error_rate
from gates.ladder import Measured, Rung

from .. import host
from ..pipeline import KokoroPipeline
from .cases import GATE_VOICE, SCALE_VOICE, Case
from .graph_rungs import _CaseRuns

WER_MARGIN = 0.05
WER_MAX = 0.10  # the absolute bar: the bundle's own WER, whatever the oracle's
SPEAKER_COS_MIN = 0.95


class _Speech:
    """The bundle's audio for each speech case, spoken from voxport's own chunk (G2P, ids,
    voice row) with the case's seed, and both sides' transcripts; memoised, shared by the
    ASR and speaker rungs. When voxport's ids and voice row are the oracle's, the seeded
    draws are the oracle's too (`host.draw_source_noise`), so for the graph case that audio
    is the end-to-end rung's, which is reused rather than run again."""

    def __init__(
        self, pipeline: KokoroPipeline, cases: Sequence[Case], runs: _CaseRuns | None
    ) -> None:
        self.pipeline, self.cases, self.runs = pipeline, list(cases), runs
        self._audio: dict[int, np.ndarray] = {}
        self._text: dict[tuple[str, int], str] = {}

    def bundle_audio(self, i: int) -> np.ndarray:
        if i not in self._audio:
            c = self.cases[i]
            same_inputs = c.chunk.ids == c.oracle_ids and np.array_equal(
                np.asarray(c.ref_s).reshape(-1), np.asarray(c.oracle_ref_s).reshape(-1)
            )
            audio = None
            if self.runs is not None and c is self.runs.case and same_inputs:
                audio = self._end_to_end_audio()
            if audio is None:
                audio = self.pipeline.synthesize_ids(c.chunk.ids, c.ref_s, seed=c.seed).audio
            self._audio[i] = audio
        return self._audio[i]

    def _end_to_end_audio(self) -> np.ndarray | None:
        """The end-to-end rung's audio, None when it cannot be made: a port whose frame count
        is not the oracle's cannot take the oracle's draws (a ValueError, which fails that
        rung), and is then heard from its seed like any other case, not failed here too."""
        assert self.runs is not None
        try:
            return self.runs.e2e()
        except ValueError:
            return None

    def oracle_audio(self, i: int) -> np.ndarray:
        return self.cases[i].fixture.outputs["audio"]

    def transcript(self, side: str, i: int) -> str:
        if (side, i) not in self._text:
            audio = self.bundle_audio(i) if side == "bundle" else self.oracle_audio(i)
            self._text[side, i] = transcribe(audio, host.SAMPLE_RATE)
        return self._text[side, i]

    def wer(self, side: str) -> float:
        reference = " ".join(c.text for c in self.cases)
        hypothesis = " ".join(self.transcript(side, i) for i in range(len(self.cases)))
        return word_error_rate(reference, hypothesis)


def asr_rungs(speech: _Speech) -> list[Rung]:
    """The bundle's WER: ≤ WER_MAX outright, and ≤ the oracle's (KPipeline phonemes) + margin."""
    n = len(speech.cases)

    def absolute() -> Measured:
        ours = speech.wer("bundle")
        heard = " | ".join(speech.transcript("bundle", i) for i in range(n))
        return Measured(ours, f"oracle WER {speech.wer('oracle'):.4f}; bundle heard: {heard}")

    def relative() -> float:
        # The bar is the publisher's own WER on the same sentences, known only now.
        rel.threshold = speech.wer("oracle") + WER_MARGIN
        return speech.wer("bundle")

    whisper = f"Whisper tiny.en WER over {n} sentence(s)"
    rel = Rung(
        f"ASR: {whisper} ≤ oracle + {WER_MARGIN}",
        "wer_value",
        1.0,
        relative,
        higher_is_better=False,
    )
    return [
        Rung(f"ASR: {whisper} ≤ {WER_MAX}", "wer_value", WER_MAX, absolute, higher_is_better=False),
        rel,
    ]


def speaker_rung(speech: _Speech, voice: str = GATE_VOICE, other: str = SCALE_VOICE) -> Rung:
    """GE2E cosine of the bundle's and the oracle's audio over all speech cases, same voice;
    the oracle's `voice` vs `other` on the same sentences is the scale (in the note: the name
    stays the same for any seed, so a seed sweep lines the runs' rungs up)."""
    from gates.speaker import speaker_cosine

    n = len(speech.cases)

    def compute() -> Measured:
        oracle = [speech.oracle_audio(i) for i in range(n)]
        value = speaker_cosine(oracle, [speech.bundle_audio(i) for i in range(n)], host.SAMPLE_RATE)
        note = "no scale voice recorded"
        scale = [c.scale_audio for c in speech.cases]
        if all(a is not None for a in scale):
            between = speaker_cosine(oracle, scale, host.SAMPLE_RATE)
            note = f"oracle {voice} vs oracle {other} (two voices, the scale): {between:.4f}"
        return Measured(value, note)

    name = f"speaker: GE2E cosine bundle vs oracle, {voice}, {n} sentence(s); scale: {other}"
    return Rung(name, "speaker_cosine", SPEAKER_COS_MIN, compute)
