"""The ladder: the rungs of every stage in order (`kokoro_rungs`) over a bundle, run against the
oracle's recorded cases (`evaluate_bundle`), and the whole gate from a KModel (`run_gate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gates.ladder import LadderReport, Rung, run_ladder, run_rung
from gates.report import emit

from ..pipeline import KokoroPipeline
from .cases import Case, port_cases, record_cases
from .graph_rungs import THRESHOLDS, _bucket_rungs, _CaseRuns, _graph_rungs, _pipeline_rungs
from .host_rungs import g2p_rung, harmonic_source_rung, host_inputs_rung, word_timings_rung
from .speech import _Speech, asr_rungs, speaker_rung


def _set_thresholds(rungs: list[Rung], precision: str) -> None:
    """The cosine and magspec bars of the bundle's precision (`THRESHOLDS`)."""
    cos_min, magspec_min = THRESHOLDS[precision]
    for r in rungs:
        if r.metric == "cosine":
            r.threshold = cos_min
        elif r.metric == "magspec_corr":
            r.threshold = magspec_min


def kokoro_rungs(
    pipeline: KokoroPipeline,
    cases: list[Case],
    asr_cases: list[Case] | None = None,
    every_bucket: bool = True,
    max_bucket_frames: int = 256,
    plot: Path | None = None,
    host_cases: list[Case] | None = None,
) -> list[Rung]:
    """The ladder over a loaded bundle; `cases[0]` drives the graph-level rungs.

    The host rungs (G2P, ids and voice row) read `host_cases`, `asr_cases` when not given;
    the speech rungs (ASR, speaker) are there when `asr_cases` are. Thresholds follow the
    bundle's precision (`THRESHOLDS`); the oracle is always fp32. With `plot`, the
    end-to-end rung also writes oracle vs bundle waveforms there.
    """
    case = cases[0]
    n_tok = len(case.oracle_ids)
    frames = int(case.fixture.intermediates["pred_dur"].sum())
    runs = _CaseRuns(pipeline, case, plot)
    host_cases = host_cases if host_cases is not None else asr_cases
    rungs = (
        [g2p_rung(host_cases), host_inputs_rung(host_cases), word_timings_rung(host_cases)]
        if host_cases
        else []
    )
    rungs += [harmonic_source_rung(pipeline, case), *_graph_rungs(runs), *_pipeline_rungs(runs)]
    if every_bucket:
        rungs += _bucket_rungs(
            pipeline,
            case,
            n_tok,
            frames,
            runs.predictor,
            runs.prosody,
            runs.vocoder,
            max_bucket_frames,
        )
    if asr_cases:
        speech = _Speech(pipeline, asr_cases, runs)
        rungs += [*asr_rungs(speech), speaker_rung(speech)]
    _set_thresholds(rungs, pipeline.manifest.precision)
    return rungs


def first_failure(model: str, rungs: list[Rung]) -> LadderReport:
    """The rungs in order up to and including the first that fails; the rest are not run
    and not reported (not "failed", as `run_ladder`'s stop_on_fail records them)."""
    results = []
    for i, rung in enumerate(rungs, start=1):
        result = run_rung(rung)
        results.append(result)
        verdict = "PASS" if result.passed else "FAIL"
        print(f"[{model}] {i}/{len(rungs)} {rung.name}: {result.value:.6g} {verdict}", flush=True)
        if not result.passed:
            break
    return LadderReport(model=model, rungs=results)


def evaluate_bundle(
    bundle: Path | KokoroPipeline,
    cases: Sequence[Case],
    plot: Path | None = None,
    stop_on_fail: bool = False,
    stop_at_first_failure: bool = False,
    speech: bool = True,
    every_bucket: bool = True,
) -> LadderReport:
    """The ladder over `bundle` (a folder, or a bundle already loaded) against the recorded
    oracle `cases`, with the bundle side's inputs taken from the port as it is now
    (`port_cases`).

    `stop_at_first_failure` runs the rungs only until one fails (`first_failure`);
    `speech=False` leaves out the ASR and speaker rungs and `every_bucket=False` the other
    buckets' (the mutation test's cheap mode, whose rungs are the full ladder's first ones).
    """
    cases = port_cases(cases)
    if not isinstance(bundle, KokoroPipeline):
        with KokoroPipeline(bundle, isolate=True) as pipeline:
            return evaluate_bundle(
                pipeline, cases, plot, stop_on_fail, stop_at_first_failure, speech, every_bucket
            )
    rungs = kokoro_rungs(
        bundle,
        cases,
        asr_cases=cases if speech else None,
        every_bucket=every_bucket,
        plot=plot,
        host_cases=cases,
    )
    if stop_at_first_failure:
        return first_failure("kokoro", rungs)
    return run_ladder("kokoro", rungs, stop_on_fail=stop_on_fail)


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
    cases = record_cases(kmodel, config_name, seed)
    report = evaluate_bundle(bundle, cases, plot=plot, stop_on_fail=stop_on_fail)
    emit(report, json_path, markdown)
    return 0 if report.passed else 1
