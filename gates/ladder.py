"""The gate ladder: named rungs, each one metric against one threshold, run in order.

A model's ``gate.py`` lists rungs from the smallest unit (one graph on a fixture) up to
the end-to-end intelligibility check; ``run_ladder`` runs them and returns a report. The
runner never dies because a rung does: an exception in ``compute`` (a conversion error,
a crashed child process surfaced as an exception, a shape mismatch in the metric) becomes
a failed rung with the message in ``detail``, so one broken graph still leaves a full
report of what works.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gates import metrics
from gates.asr import word_error_rate
from gates.errors import ToleranceFailure

# What a rung's compute returns: a ready value, or the (reference, candidate) pair that
# the rung's metric turns into one.
RungInput = float | tuple[Any, Any]


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: the function and which direction is good."""

    fn: Callable[..., float]
    higher_is_better: bool


METRICS: dict[str, MetricSpec] = {
    "max_abs": MetricSpec(metrics.max_abs, higher_is_better=False),
    "cosine": MetricSpec(metrics.cosine, higher_is_better=True),
    "psnr": MetricSpec(metrics.psnr, higher_is_better=True),
    "waveform_corr": MetricSpec(metrics.waveform_corr, higher_is_better=True),
    "magspec_corr": MetricSpec(metrics.magnitude_spectrogram_corr, higher_is_better=True),
    "token_agreement": MetricSpec(metrics.token_agreement, higher_is_better=True),
    "wer": MetricSpec(word_error_rate, higher_is_better=False),
}


@dataclass
class Rung:
    """One step of the ladder.

    ``higher_is_better`` defaults to ``None``, meaning "the registered direction of
    ``metric``" (so ``Rung("enc", "max_abs", 1e-3, f)`` passes when the error is *below*
    1e-3); for an unregistered metric, whose compute must return a float, ``None`` means
    higher is better. ``options`` are extra keyword arguments for the metric function,
    e.g. ``{"n_fft": 512, "hop": 128}`` for ``magspec_corr``.
    """

    name: str
    metric: str
    threshold: float
    compute: Callable[[], RungInput]
    higher_is_better: bool | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def direction(self) -> bool:
        """True when a larger value is better."""
        if self.higher_is_better is not None:
            return self.higher_is_better
        spec = METRICS.get(self.metric)
        return True if spec is None else spec.higher_is_better


@dataclass
class RungResult:
    """Outcome of one rung. ``value`` is NaN when the rung could not be measured."""

    name: str
    metric: str
    value: float
    threshold: float
    passed: bool
    detail: str
    stats: dict[str, Any] | None
    seconds: float
    higher_is_better: bool = True


def _json_float(x: float | None) -> float | None:
    """JSON has no NaN/Infinity: non-finite numbers are written as null."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass
class LadderReport:
    """All rung results of one model. An empty ladder does not pass (nothing was shown)."""

    model: str
    rungs: list[RungResult]

    @property
    def passed(self) -> bool:
        return bool(self.rungs) and all(r.passed for r in self.rungs)

    @property
    def failures(self) -> list[RungResult]:
        return [r for r in self.rungs if not r.passed]

    def raise_for_failure(self) -> None:
        """Raise ``ToleranceFailure`` for the first failed rung, if any."""
        for r in self.failures:
            raise ToleranceFailure(r.name, r.metric, r.value, r.threshold, r.stats)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary; non-finite values and thresholds (NaN, +-inf) become null."""
        return {
            "model": self.model,
            "passed": self.passed,
            "rungs": [
                {
                    "name": r.name,
                    "metric": r.metric,
                    "value": _json_float(r.value),
                    "threshold": _json_float(r.threshold),
                    "passed": r.passed,
                    "higher_is_better": r.higher_is_better,
                    "detail": r.detail,
                    "seconds": round(r.seconds, 4),
                }
                for r in self.rungs
            ],
        }


def _is_numeric_array(x: Any) -> bool:
    try:
        return metrics.as_array(x).dtype.kind in "biuf"
    except Exception:
        return False


def _failure_stats(reference: Any, candidate: Any) -> tuple[dict[str, Any], str] | None:
    """Tensor stats of both sides plus the worst element, for a failed tensor rung."""
    if not (_is_numeric_array(reference) and _is_numeric_array(candidate)):
        return None
    ref = metrics.as_array(reference)
    cand = metrics.as_array(candidate)
    stats: dict[str, Any] = {
        "reference": metrics.tensor_stats(ref),
        "candidate": metrics.tensor_stats(cand),
    }
    r64, c64 = ref.astype(np.float64), cand.astype(np.float64)
    if r64.shape != c64.shape and np.squeeze(r64).ndim == 1 and np.squeeze(c64).ndim == 1:
        # Audio of different lengths: the audio metrics compare the common prefix.
        n = min(r64.size, c64.size)
        r64, c64 = np.squeeze(r64)[:n], np.squeeze(c64)[:n]
        stats["trimmed_to"] = n
    if r64.shape != c64.shape or r64.size == 0:
        return stats, "shapes differ; no element-wise worst"
    diff = np.abs(r64 - c64)
    diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN is the worst element there is
    flat = int(np.argmax(diff))
    index = [int(i) for i in np.unravel_index(flat, r64.shape)]
    ref_v, cand_v = float(r64.reshape(-1)[flat]), float(c64.reshape(-1)[flat])
    stats["worst"] = {
        "index": index,
        "reference": _json_float(ref_v),
        "candidate": _json_float(cand_v),
        "abs_diff": _json_float(abs(ref_v - cand_v)),
    }
    rs, cs = stats["reference"], stats["candidate"]
    text = (
        f"worst at {index}: ref={ref_v:.6g} cand={cand_v:.6g}; "
        f"ref[min={rs['min']}, max={rs['max']}, nan={rs['nan']}, inf={rs['inf']}] "
        f"cand[min={cs['min']}, max={cs['max']}, nan={cs['nan']}, inf={cs['inf']}]"
    )
    return stats, text


@dataclass(frozen=True)
class Measured:
    """A compute's ready value with a note for the report (e.g. which draws disagreed)."""

    value: float
    note: str = ""


def _measure(rung: Rung) -> tuple[float, Any, str]:
    """Run the rung's compute and metric: the value, the compared pair (or None), a note."""
    out = rung.compute()
    if isinstance(out, Measured):
        return float(out.value), None, out.note
    if isinstance(out, tuple | list) and len(out) == 2:
        spec = METRICS.get(rung.metric)
        if spec is None:
            raise KeyError(f"unknown metric {rung.metric!r}; known: {sorted(METRICS)}")
        return float(spec.fn(out[0], out[1], **rung.options)), out, ""
    if isinstance(out, int | float | np.floating | np.integer) and not isinstance(out, bool):
        return float(out), None, ""
    raise TypeError(
        "compute must return a float, a Measured or a (reference, candidate) pair, got "
        f"{type(out).__name__}"
    )


def _passes(value: float, threshold: float, higher_is_better: bool) -> bool:
    if math.isnan(value):
        return False
    return value >= threshold if higher_is_better else value <= threshold


def run_rung(rung: Rung) -> RungResult:
    """Run one rung; never raises for a failure inside the rung."""
    higher = rung.direction()
    start = time.perf_counter()
    pair = None
    try:
        value, pair, detail = _measure(rung)
        passed = _passes(value, rung.threshold, higher)
    except Exception as exc:  # a broken rung is a failed rung, not a broken runner
        value, passed = float("nan"), False
        detail = f"{type(exc).__name__}: {exc}"
    stats = None
    if not passed and pair is not None:
        found = _failure_stats(pair[0], pair[1])
        if found is not None:
            stats, text = found
            detail = f"{detail}; {text}" if detail else text
    return RungResult(
        name=rung.name,
        metric=rung.metric,
        value=value,
        threshold=float(rung.threshold),
        passed=passed,
        detail=detail,
        stats=stats,
        seconds=time.perf_counter() - start,
        higher_is_better=higher,
    )


def _skipped(rung: Rung, after: str) -> RungResult:
    return RungResult(
        name=rung.name,
        metric=rung.metric,
        value=float("nan"),
        threshold=float(rung.threshold),
        passed=False,
        detail=f"skipped: stop_on_fail after {after!r}",
        stats=None,
        seconds=0.0,
        higher_is_better=rung.direction(),
    )


def _line(model: str, i: int, n: int, r: RungResult) -> str:
    op = ">=" if r.higher_is_better else "<="
    verdict = "PASS" if r.passed else "FAIL"
    text = f"[{model}] {i}/{n} {r.name}: {r.metric}={r.value:.6g} ({op} {r.threshold:g}) {verdict}"
    return f"{text} - {r.detail}" if r.detail else text


def run_ladder(
    model: str, rungs: list[Rung], stop_on_fail: bool = False, progress: bool = True
) -> LadderReport:
    """Run ``rungs`` in order and collect a ``LadderReport``.

    With ``stop_on_fail`` the rungs after the first failure are recorded as failed and
    skipped (so the report still lists the whole ladder). ``progress`` shows a rich
    progress bar on a terminal and prints one plain line per rung otherwise (CI logs).
    """
    results: list[RungResult] = []
    n = len(rungs)
    use_rich = progress and sys.stdout.isatty()
    bar = None
    if use_rich:
        from rich.progress import Progress
        from rich.text import Text

        bar = Progress(transient=False)
        bar.start()
        task = bar.add_task(model, total=n)
    try:
        failed_at: str | None = None
        for i, rung in enumerate(rungs, start=1):
            if failed_at is not None:
                results.append(_skipped(rung, failed_at))
                continue
            if bar is not None:
                bar.update(task, description=f"{model}: {rung.name}")
            result = run_rung(rung)
            results.append(result)
            if bar is not None:
                colour = "green" if result.passed else "red"
                # Text, not markup: details hold brackets ("worst at [3, 4]").
                bar.console.print(Text(_line(model, i, n, result), style=colour))
                bar.advance(task)
            elif progress:
                print(_line(model, i, n, result), flush=True)
            if stop_on_fail and not result.passed:
                failed_at = rung.name
    finally:
        if bar is not None:
            bar.stop()
    return LadderReport(model=model, rungs=results)
