"""`voxport bench audio8_tts`: one utterance through the reference and the bundle (streamed),
with one worker and with two (`--workers`: worker 1 decodes the codec windows while worker 0
draws the frames).

Runtime calls per frame (the fused graph's point: 1), frame ms, prefill ms per window, codec
window ms, time to first audio, wall time, RTF, the reference's eager ms per frame and the frame
over it, peak RSS. Each figure for 1 and for N workers (`_1w`, `_2w`), measured in the same
run over the same utterance, seed and frames (passes alternated with `--repeats`, each figure
the median); the N-worker pass's audio is checked bit-identical to the one-worker pass's.

The reduced bench draws three codec windows' worth of frames (80: two windows complete
while frames are drawn, the last at the last frame); the published one 24 frames, under its
160-frame window — no window decodes beside the frame loop there (`--frames 416` for three).
"""

from __future__ import annotations

import math
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from conversion.core.errors import UserError
from conversion.core.runtime.profile import add_profile, profile_calls
from conversion.core.runtime.workers import WorkerPool
from conversion.core.threads import EAGER_THREADS

from . import reference as R
from .gate import GATE_FRAMES, GATE_TEXT
from .pipeline import DECODER, MAX_WORKERS, SpeakOptions, context_frames
from .weights import Loaded

NAN = float("nan")


def bench_frames(config_name: str, window: int) -> int:
    """The default frames: three codec windows' worth at the reduced size; the gate's at the
    published size (three windows there are 416 frames: an hour on this runtime)."""
    if config_name == "reduced":
        return window + 2 * (window - context_frames(window))
    return GATE_FRAMES[config_name]


class _Calls:
    """The runtime calls `sessions` (TimedSessions) make from now on, per graph.function."""

    def __init__(self, sessions) -> None:
        self.sessions = sessions
        self.marks = [{k: len(v) for k, v in s.function_ms.items()} for s in sessions]

    def ms(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for session, mark in zip(self.sessions, self.marks, strict=True):
            for key, times in session.function_ms.items():
                out.setdefault(key, []).extend(times[mark.get(key, 0) :])
        return out


def _median(values: list[float] | None) -> float:
    return statistics.median(values) if values else NAN


def _speak(pool: WorkerPool, frames: int, seed: int, stream: bool = True):
    options = SpeakOptions(seed=seed, max_frames=frames, stream=stream)
    return pool.pipeline.speak(GATE_TEXT, options, pool=pool)


def _pass(pool: WorkerPool, frames: int, seed: int) -> tuple[object, dict[str, list[float]]]:
    """One streamed utterance over `pool`: its result and the calls' ms (both workers')."""
    sessions = [pool.pipeline.session]
    if pool.size > 1:
        sessions.append(pool.worker(DECODER).session)
    calls = _Calls(sessions)
    result = _speak(pool, frames, seed)
    return result, calls.ms()


def _pass_figures(result, ms: dict[str, list[float]], audio_s: float, eager_ms: float) -> dict:
    frame = _median(ms.get("ar.frame"))
    return {
        "wall_s": result.seconds,
        "time_to_first_audio_s": NAN if result.first_audio_s is None else result.first_audio_s,
        "frame_ms": frame,
        "codec_window_ms": _median(ms.get("codec.main")),
        "coreai_bundle_rtf": result.seconds / max(audio_s, 1e-9),
        "frame_over_eager": frame / eager_ms,
    }


def _rounded(x: float, digits: int) -> float | None:
    return None if math.isnan(x) else round(x, digits)


def _worker_figures(passes: dict[int, list[dict]], workers: int) -> dict:
    """Each pass figure for 1 and `workers` workers (median over repeats), and N over 1."""
    digits = {"frame_ms": 1, "codec_window_ms": 1, "frame_over_eager": 2}
    out: dict = {"workers": workers}
    for w, runs in passes.items():
        for key in runs[0]:
            value = statistics.median(r[key] for r in runs)
            out[f"{key}_{w}w"] = _rounded(value, digits.get(key, 3))
    if workers > 1:
        one, many = passes[1], passes[workers]
        wall = [a["wall_s"] / b["wall_s"] for a, b in zip(one, many, strict=True)]
        out[f"wall_1w_over_{workers}w"] = round(statistics.median(wall), 3)
        first = [
            b["time_to_first_audio_s"] / a["time_to_first_audio_s"]
            for a, b in zip(one, many, strict=True)
        ]
        out[f"first_audio_{workers}w_over_1w"] = _rounded(statistics.median(first), 3)
    return out


def _pools(pipeline, workers: int) -> tuple[WorkerPool, WorkerPool | None]:
    """The one-worker pool (`pipeline` itself, in process) and, for more, a pool of runtime children
    (at most MAX_WORKERS: Audio8 has no work for a third)."""
    many = None
    if workers > 1:
        many = WorkerPool(lambda isolate: type(pipeline)(pipeline.path, isolate=isolate), workers)
        many.open_all()  # loading the children is not what the bench times
    return WorkerPool.inline(pipeline), many


def _measure(pipeline, workers: int, frames: int, seed: int, repeats: int):
    """Warm each pool once (functions load on first call), then `repeats` passes of each,
    alternated: {workers: [(result, ms), ...]}."""
    one, many = _pools(pipeline, workers)
    pools = [one] + ([many] if many is not None else [])
    try:
        for pool in pools:
            _speak(pool, 1, seed, stream=False)  # one frame: every graph the passes call
        runs: dict[int, list] = {pool.size: [] for pool in pools}
        for _ in range(repeats):
            for pool in pools:
                runs[pool.size].append(_pass(pool, frames, seed))
    finally:
        if many is not None:
            many.close()
    return runs


def run_bench(
    loaded: Loaded,
    bundle: Path,
    seed: int,
    json_path: Path | None = None,
    profile: bool = False,
    workers: int = 1,
    frames: int | None = None,
    repeats: int | None = None,
) -> int:
    """One utterance through the reference (eager) and `bundle` (streamed) with one worker and
    with `workers` (at most MAX_WORKERS); figures."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    from .pipeline import Audio8Pipeline

    repeats = 1 if repeats is None else repeats
    if repeats < 1 or (frames is not None and frames < 1):
        raise UserError("--repeats and --frames must be at least 1")
    workers = max(1, min(workers, MAX_WORKERS))
    config = loaded.config
    with Audio8Pipeline(bundle) as pipeline:
        frames = frames or bench_frames(config.name, pipeline.codec_window)
        prompt = pipeline.prompt(GATE_TEXT, None, frames)
        t = time.perf_counter()
        ref = R.generate(loaded.lm, prompt, frames, R.seeded_uniforms(seed, config))
        eager_ms = (time.perf_counter() - t) * 1e3 / max(len(ref.frames), 1)
        runs = _measure(pipeline, workers, frames, seed, repeats)
        ops = profile_calls(pipeline.session) if profile else None
        rate = pipeline.codec_config.sample_rate
    figures = _figures(runs, workers, eager_ms, rate, config.name)
    print(bench_table_markdown(figures))
    add_profile(figures, ops)
    write_json(json_path, figures)
    return 0


def _figures(runs: dict[int, list], workers: int, eager_ms: float, rate: int, name: str) -> dict:
    """The table: the one-worker pass's figures under their plain names (what earlier benches
    reported), then each figure per worker count."""
    result, ms = runs[1][0]
    n_frames = sum(p.frames.codes.shape[1] + p.frames.finished for p in result.pieces)
    audio_s = result.audio.size / rate
    passes = {w: [_pass_figures(r, m, audio_s, eager_ms) for r, m in runs[w]] for w in sorted(runs)}
    per_worker = _worker_figures(passes, workers)
    figures = {
        "config": name,
        "text": GATE_TEXT,
        "frames": n_frames,
        "audio_s": round(audio_s, 3),
        "runtime_calls_per_frame": round(len(ms.get("ar.frame", [])) / max(n_frames, 1), 3),
        "frame_ms": per_worker["frame_ms_1w"],
        "prefill_ms_per_window": _rounded(_median(ms.get("ar.prefill")), 1),
        "prefill_windows": len(ms.get("ar.prefill", [])),
        "codec_window_ms": per_worker["codec_window_ms_1w"],
        "codec_windows": len(ms.get("codec.main", [])),
        "time_to_first_audio_s": per_worker["time_to_first_audio_s_1w"],
        "coreai_bundle_rtf": per_worker["coreai_bundle_rtf_1w"],
        "reference_eager_ms_per_frame": round(eager_ms, 1),
        "frame_over_eager": per_worker["frame_over_eager_1w"],
        **per_worker,
    }
    if workers > 1:
        figures[f"audio_identical_{workers}w"] = all(
            np.array_equal(r.audio, result.audio) for r, _ in runs[workers]
        )
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["threads"] = EAGER_THREADS
    return figures
