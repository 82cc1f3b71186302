"""The bundle's graph and pipeline rungs: each graph fed the oracle's own inputs, end to end with
the oracle's draws, two runs bit-identical, and every other bucket that fits; `_CaseRuns` runs
the bundle once per case and memoises what several rungs read.
"""

from __future__ import annotations

from pathlib import Path

from gates.ladder import Rung

from .. import host
from ..pipeline import KokoroPipeline
from .cases import Case

COS_MIN = 0.9999
MAGSPEC_MIN = 0.999
# Per bundle precision: (graph cosine, end-to-end magnitude-spectrogram corr). fp32 is the
# issue's bar; fp16 rounds every activation to 11 bits, so its bar is one digit lower.
THRESHOLDS = {"fp32": (COS_MIN, MAGSPEC_MIN), "fp16": (0.999, 0.99), "int8": (0.99, 0.98)}


def _pair_cos(name: str, compute) -> Rung:
    return Rung(name, "cosine", COS_MIN, compute)


class _CaseRuns:
    """The bundle's graphs and pipeline on one case's oracle inputs; `cached` memoises."""

    def __init__(self, pipeline: KokoroPipeline, case: Case, plot: Path | None) -> None:
        self.pipeline, self.case, self.plot = pipeline, case, plot
        self.fx = case.fixture.intermediates
        self._cache: dict[str, object] = {}

    # The graph rungs and the end-to-end rung feed the oracle's own ids and voice row.

    def predictor(self, bucket=None):
        return self.pipeline.predictor(self.case.oracle_ids, self.case.oracle_ref_s, bucket)

    def prosody(self, bucket=None):
        fx, ref_s = self.fx, self.case.oracle_ref_s
        return self.pipeline.prosody(fx["d"], fx["t_en"], fx["pred_dur"], ref_s, bucket)

    def vocoder(self, bucket=None):
        fx, ref_s = self.fx, self.case.oracle_ref_s
        return self.pipeline.vocoder(fx["asr"], fx["F0"], fx["N"], fx["har"], ref_s, bucket)

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def synthesize(self):
        case = self.case
        return self.pipeline.synthesize_ids(
            case.oracle_ids, case.oracle_ref_s, draws=case.draws()
        ).audio

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


def _bucket_rungs(pipeline, case, n_tok, frames, predictor, prosody, vocoder, max_frames):
    fx = case.fixture.intermediates
    rungs = []
    for b in pipeline.tables["predictor"]:
        if b["T"] >= n_tok and b != pipeline.tables["predictor"].select(T=n_tok):
            rungs.append(
                _pair_cos(
                    f"bucket predictor {b.label}: d",
                    lambda b=b: (fx["d"], predictor(b)["d"]),
                )
            )
    for b in pipeline.tables["prosody"]:
        if (
            b["T"] >= n_tok
            and b["L"] >= frames
            and b != pipeline.tables["prosody"].select(T=n_tok, L=frames)
            and b["L"] <= 4 * max_frames
        ):
            rungs.append(
                _pair_cos(
                    f"bucket prosody {b.label}: F0",
                    lambda b=b: (fx["F0"], prosody(b)["F0"]),
                )
            )
    for b in pipeline.tables["vocoder"]:
        if frames <= b["L"] <= max_frames and b != pipeline.tables["vocoder"].select(L=frames):
            rungs.append(
                _pair_cos(
                    f"bucket vocoder {b.label}: waveform",
                    lambda b=b: (case.fixture.outputs["audio"], vocoder(b)),
                )
            )
    return rungs
