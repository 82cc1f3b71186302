"""Kokoro's gate ladder: each graph, the whole pipeline, every bucket, and the speech.

The oracle is the publisher's `kokoro.KModel` on the same weights, with every intermediate
and random draw recorded (oracle.py). Rungs, in order:

1. each graph fed the oracle's own inputs, compared on the real region (cosine, fp32 ≥ 0.9999):
   predictor (durations, d, t_en; and the rounded durations exactly), prosody (asr, F0, N),
   vocoder (waveform, given the oracle's har);
2. end to end with the oracle's SineGen draws injected: magnitude-spectrogram corr ≥ 0.999;
3. every bucket that fits gives the unpadded oracle's real-region output;
4. two runs are bit-identical;
5. speech: Whisper tiny.en WER of the bundle's audio ≤ the oracle's WER + 0.05.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from conversion.core.progress import progress_steps
from gates.asr import transcribe, word_error_rate
from gates.ladder import Rung, run_ladder
from gates.report import emit
from oracles import Fixture

from . import host
from .oracle import record
from .pipeline import KokoroBundle

# Read aloud by the full gate's ASR rung (≥ 10, as the issue asks); plain words Whisper knows.
FIXTURE_SENTENCES = (
    "The weather is lovely today, so let's go for a walk in the park.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "She sells sea shells by the sea shore.",
    "The quick brown fox jumps over the lazy dog.",
    "I would like a cup of coffee with milk and no sugar.",
    "The train to the city leaves at seven in the morning.",
    "Reading a good book is the best way to spend a quiet evening.",
    "We need to finish the report before the meeting on Friday.",
    "The children played in the garden until the sun went down.",
    "Turn left at the next corner and you will see the library.",
    "My favorite season is autumn because the leaves change color.",
    "Thank you very much for your help with the project.",
)
# Fits the smallest buckets: what CI gates with the real weights.
SHORT_SENTENCES = ("Hello.",)
COS_MIN = 0.9999
MAGSPEC_MIN = 0.999
# Per bundle precision: (graph cosine, end-to-end magnitude-spectrogram corr). fp32 is the
# issue's bar; fp16 rounds every activation to 11 bits, so its bar is one digit lower.
THRESHOLDS = {"fp32": (COS_MIN, MAGSPEC_MIN), "fp16": (0.999, 0.99), "int8": (0.99, 0.98)}
WER_MARGIN = 0.05
GATE_VOICE = "jf_alpha"


@dataclass
class Case:
    """One fixture sentence: its chunk, voice row and the oracle's record."""

    text: str
    chunk: host.Chunk
    ref_s: np.ndarray
    fixture: Fixture

    def draws(self) -> dict[str, np.ndarray]:
        d = self.fixture.draws
        return {"rand_ini": d["rand/0"], "sine_noise": d["randn_like/0"]}


def make_cases(kmodel, sentences: Sequence[str], voice: str, seed: int, on_case=None) -> list[Case]:
    pack = host.load_voice(voice)
    cases = []
    for i, text in enumerate(sentences):
        chunks = host.text_to_chunks(text)
        if len(chunks) != 1:
            raise ValueError(f"fixture sentence must be one chunk: {text!r}")
        chunk = chunks[0]
        ref_s = host.ref_s_for(pack, chunk.n_phonemes)
        fx = record(kmodel, chunk.ids, ref_s, seed=seed + i, text=text, phonemes=chunk.phonemes)
        cases.append(Case(text, chunk, ref_s, fx))
        if on_case is not None:
            on_case(i + 1, len(sentences), text)
    return cases


def _pair_cos(name: str, compute) -> Rung:
    return Rung(name, "cosine", COS_MIN, compute)


class _CaseRuns:
    """The bundle's graphs and pipeline on one case's oracle inputs; `cached` memoises."""

    def __init__(self, kb: KokoroBundle, case: Case, plot: Path | None) -> None:
        self.kb, self.case, self.plot = kb, case, plot
        self.fx = case.fixture.intermediates
        self._cache: dict[str, object] = {}

    def predictor(self, bucket=None):
        return self.kb.predictor(self.case.chunk.ids, self.case.ref_s, bucket)

    def prosody(self, bucket=None):
        fx = self.fx
        return self.kb.prosody(fx["d"], fx["t_en"], fx["pred_dur"], self.case.ref_s, bucket)

    def vocoder(self, bucket=None):
        fx = self.fx
        return self.kb.vocoder(fx["asr"], fx["F0"], fx["N"], fx["har"], self.case.ref_s, bucket)

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def synthesize(self):
        case = self.case
        return self.kb.synthesize_ids(case.chunk.ids, case.ref_s, draws=case.draws()).audio

    def e2e(self, key="e2e"):
        return self.cached(key, self.synthesize)

    def e2e_pair(self):
        audio = self.e2e()
        case = self.case
        if self.plot is not None:
            from gates.plot import plot_waveforms

            title = f"kokoro: oracle vs bundle — {case.text}"
            plot_waveforms(case.fixture.outputs["audio"], audio, host.SAMPLE_RATE, self.plot, title)
        return case.fixture.outputs["audio"], audio


def _graph_rungs(runs: _CaseRuns) -> list[Rung]:
    """Each graph fed the oracle's own inputs: predictor, prosody, vocoder."""
    fx, cached = runs.fx, runs.cached
    return [
        _pair_cos(
            "predictor: duration",
            lambda: (fx["duration"].reshape(-1), cached("pred", runs.predictor)["duration"]),
        ),
        _pair_cos("predictor: d", lambda: (fx["d"], cached("pred", runs.predictor)["d"])),
        _pair_cos("predictor: t_en", lambda: (fx["t_en"], cached("pred", runs.predictor)["t_en"])),
        Rung(
            "predictor: rounded durations",
            "token_agreement",
            1.0,
            lambda: (
                list(fx["pred_dur"]),
                list(host.pred_durations(cached("pred", runs.predictor)["duration"])),
            ),
        ),
        _pair_cos("prosody: asr", lambda: (fx["asr"], cached("pros", runs.prosody)["asr"])),
        _pair_cos("prosody: F0", lambda: (fx["F0"], cached("pros", runs.prosody)["F0"])),
        _pair_cos("prosody: N", lambda: (fx["N"], cached("pros", runs.prosody)["N"])),
        _pair_cos(
            "vocoder: waveform (oracle har)",
            lambda: (runs.case.fixture.outputs["audio"], cached("voc", runs.vocoder)),
        ),
    ]


def _pipeline_rungs(runs: _CaseRuns) -> list[Rung]:
    """End to end with the oracle's draws, and two runs bit-identical."""
    return [
        Rung(
            "end to end (oracle draws): magspec corr",
            "magspec_corr",
            MAGSPEC_MIN,
            runs.e2e_pair,
        ),
        Rung(
            "two runs bit-identical: max|Δ|",
            "max_abs",
            0.0,
            lambda: (runs.e2e(), runs.e2e("again")),
        ),
    ]


def _set_thresholds(rungs: list[Rung], precision: str) -> None:
    """The cosine and magspec bars of the bundle's precision (`THRESHOLDS`)."""
    cos_min, magspec_min = THRESHOLDS[precision]
    for r in rungs:
        if r.metric == "cosine":
            r.threshold = cos_min
        elif r.metric == "magspec_corr":
            r.threshold = magspec_min


def kokoro_rungs(
    kb: KokoroBundle,
    cases: list[Case],
    asr_cases: list[Case] | None = None,
    every_bucket: bool = True,
    max_bucket_frames: int = 256,
    plot: Path | None = None,
) -> list[Rung]:
    """The ladder over a loaded bundle; `cases[0]` drives the graph-level rungs.

    Thresholds follow the bundle's precision (`THRESHOLDS`); the oracle is always fp32.
    With `plot`, the end-to-end rung also writes oracle vs bundle waveforms there.
    """
    case = cases[0]
    n_tok = len(case.chunk.ids)
    frames = int(case.fixture.intermediates["pred_dur"].sum())
    runs = _CaseRuns(kb, case, plot)
    rungs = [*_graph_rungs(runs), *_pipeline_rungs(runs)]
    if every_bucket:
        rungs += _bucket_rungs(
            kb, case, n_tok, frames, runs.predictor, runs.prosody, runs.vocoder, max_bucket_frames
        )
    if asr_cases:
        rungs.append(_asr_rung(kb, asr_cases))
    _set_thresholds(rungs, kb.manifest.precision)
    return rungs


def _bucket_rungs(kb, case, n_tok, frames, predictor, prosody, vocoder, max_frames):
    fx = case.fixture.intermediates
    rungs = []
    for b in kb.tables["predictor"]:
        if b["T"] >= n_tok and b != kb.tables["predictor"].select(T=n_tok):
            rungs.append(
                _pair_cos(
                    f"bucket predictor {b.label}: d",
                    lambda b=b: (fx["d"], predictor(b)["d"]),
                )
            )
    for b in kb.tables["prosody"]:
        if (
            b["T"] >= n_tok
            and b["L"] >= frames
            and b != kb.tables["prosody"].select(T=n_tok, L=frames)
            and b["L"] <= 4 * max_frames
        ):
            rungs.append(
                _pair_cos(
                    f"bucket prosody {b.label}: F0",
                    lambda b=b: (fx["F0"], prosody(b)["F0"]),
                )
            )
    for b in kb.tables["vocoder"]:
        if frames <= b["L"] <= max_frames and b != kb.tables["vocoder"].select(L=frames):
            rungs.append(
                _pair_cos(
                    f"bucket vocoder {b.label}: waveform",
                    lambda b=b: (case.fixture.outputs["audio"], vocoder(b)),
                )
            )
    return rungs


def _asr_rung(kb: KokoroBundle, cases: list[Case]) -> Rung:
    """WER of the bundle's audio vs the oracle's, over every case (same draws)."""
    result: dict[str, float] = {}

    def compute() -> float:
        ref_words, ours, theirs = [], [], []
        for c in cases:
            audio = kb.synthesize_ids(c.chunk.ids, c.ref_s, draws=c.draws()).audio
            ours.append(transcribe(audio, host.SAMPLE_RATE))
            theirs.append(transcribe(c.fixture.outputs["audio"], host.SAMPLE_RATE))
            ref_words.append(c.text)
        reference = " ".join(ref_words)
        result["oracle"] = word_error_rate(reference, " ".join(theirs))
        result["bundle"] = word_error_rate(reference, " ".join(ours))
        # The bar is the publisher's own WER on the same sentences, known only now.
        rung.threshold = result["oracle"] + WER_MARGIN
        return result["bundle"]

    rung = Rung(
        f"ASR: Whisper tiny.en WER over {len(cases)} sentence(s) ≤ oracle + {WER_MARGIN}",
        "wer_value",
        1.0,
        compute,
        higher_is_better=False,
    )
    return rung


def run_gate(
    kmodel,
    bundle: Path,
    config_name: str,
    seed: int,
    plot: Path | None = None,
    stop_on_fail: bool = False,
    json_path: Path | None = None,
    markdown: Path | None = None,
) -> int:
    """The oracle on the gate's sentences, then the ladder over `bundle`; the exit code."""
    sentences = SHORT_SENTENCES if config_name == "reduced" else FIXTURE_SENTENCES
    with progress_steps(len(sentences), "kokoro oracle") as bar:
        cases = make_cases(
            kmodel, sentences, GATE_VOICE, seed, on_case=lambda i, n, text: bar.step(text[:40])
        )
    with KokoroBundle(bundle, isolate=True) as kb:
        rungs = kokoro_rungs(kb, cases, asr_cases=cases, plot=plot)
        report = run_ladder("kokoro", rungs, stop_on_fail=stop_on_fail)
    emit(report, json_path, markdown)
    return 0 if report.passed else 1
