"""`voxport bench core`: Session overhead vs the raw runtime, and self-test export time."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from conversion.core.bundle import BundleWriter
from conversion.core.paths import write_json
from conversion.core.progress import progress_steps
from conversion.core.runtime.profile import add_profile, profile_bundle
from conversion.core.runtime.session import Session
from gates.report import bench_table_markdown

from . import graphs as sg

BENCH_ROWS = 256  # ~10 ms per call on the Linux runtime (2 cores)


def _interleaved_call_times(session: Session, x: np.ndarray, calls: int):
    """Per-call seconds, alternating a bare runtime call and a Session call on one function.

    The bare call is what a user of coreai.runtime writes (an NDArray from the numpy input,
    await the function on an event loop); alternating call by call lets the machine's noise
    fall on both paths alike.
    """
    import coreai

    fn = session.function("mlp", "main")  # the same loaded function the Session calls
    loop = session._loop

    def bare() -> None:
        loop.run_until_complete(fn({"x": coreai.runtime.NDArray(x)}))["y"].numpy()

    def wrapped_call() -> None:
        session.run("mlp", "main", {"x": x})

    raw: list[float] = []
    wrapped: list[float] = []
    wrapped_call()
    for i in range(calls):
        pair = [(bare, raw), (wrapped_call, wrapped)]
        if i % 2:  # alternate which goes first: no path always runs on a warmer cache
            pair.reverse()
        for call, times in pair:
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
    return raw, wrapped


def run_bench(
    seed: int, repeats: int | None = None, json_path: Path | None = None, profile: bool = False
) -> int:
    """Session overhead vs the raw runtime on a ~10 ms graph, and self-test export time."""
    repeats = repeats or 40
    rounds = 5
    figures: dict[str, float | int | str] = {}
    with tempfile.TemporaryDirectory(prefix="voxport-bench-") as tmp:
        t = time.perf_counter()
        conv, _ = sg.conv_graph(seed)
        with BundleWriter(Path(tmp) / "conv", "core", overwrite=True) as bw:
            bw.add_graph(conv)
        figures["export_conv_selftest_s"] = round(time.perf_counter() - t, 3)

        # An MLP sized to take ~10 ms per call on the Linux runtime.
        mlp, inputs = sg.mlp_graph(seed, rows=BENCH_ROWS)
        bundle = Path(tmp) / "mlp"
        with BundleWriter(bundle, "core", overwrite=True) as bw:
            bw.add_graph(mlp)
        x = inputs["x"].numpy()
        raw, wrapped = [], []
        with Session(bundle) as session, progress_steps(rounds, "bench core") as bar:
            for i in range(rounds):
                r, w = _interleaved_call_times(session, x, repeats)
                raw += r
                wrapped += w
                bar.step(f"round {i + 1}: {repeats} call pairs")
        ops = profile_bundle(bundle, {"mlp.main": {"x": x}}) if profile else None
    raw_ms = statistics.median(raw) * 1e3
    ses_ms = statistics.median(wrapped) * 1e3
    figures.update(
        {
            "graph": f"mlp [{BENCH_ROWS}, 256] -> 512 -> 256, fp32",
            "calls_per_path": rounds * repeats,
            "raw_runtime_ms_median": round(raw_ms, 4),
            "session_ms_median": round(ses_ms, 4),
            "session_overhead_ms": round(ses_ms - raw_ms, 4),
            "session_overhead_pct": round(100 * (ses_ms - raw_ms) / raw_ms, 2),
            "raw_runtime_ms_p10": round(float(np.percentile(raw, 10)) * 1e3, 4),
            "session_ms_p10": round(float(np.percentile(wrapped, 10)) * 1e3, 4),
        }
    )
    print(bench_table_markdown(figures))
    add_profile(figures, ops)
    write_json(json_path, figures)
    return 0
