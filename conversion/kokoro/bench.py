"""`voxport bench kokoro`: the same sentences through three engines, measured `repeats` times.

Columns: the publisher's eager torch (KModel), the bundle through the Core AI runtime (per
graph and host), and onnxruntime on the reassembled int8 ONNX. Plus runtime calls per second
of audio (counted from the calls the bundle's session really made), and the compute the
bucket choice wastes on padding against one fixed 512-frame bucket.

Two separate knobs: `sentences` is the set (the first N gate sentences: 3 of the fixture
sentences at the published buckets, CI's short ones at the reduced), `repeats` is how many
times the whole measurement is taken over that same set. Each real-time factor is the median
over the repeats (min and max beside it); per-graph times and calls are per sentence per
repeat.
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch

from conversion.core.errors import UserError
from conversion.core.host.buckets import BucketTable, padding_waste
from conversion.core.progress import progress_steps
from conversion.core.runtime.profile import add_profile, profile_calls
from conversion.core.runtime.workers import WorkerPool
from conversion.core.threads import EAGER_THREADS

from . import host, weights
from .gate import FIXTURE_SENTENCES, SHORT_SENTENCES

# The one-bucket alternative the measured table is compared with: one fixed 512-frame bucket.
FIXED_VOCODER = BucketTable.one_dim("L", [512])
# Published buckets: the first 6 fixture sentences (~24 s of audio): enough independent
# sentences that 2 workers share them evenly (3 left one worker idle a third of the time).
BENCH_SENTENCES = 6

T = TypeVar("T")
# An engine speaks one case (chunk, ref_s); the bundle's also returns its ChunkResult.
Engine = Callable[[host.Chunk, np.ndarray], object]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_sentences(config_name: str, n: int | None = None) -> tuple[str, ...]:
    """The sentence set: the first `n` of the configuration's gate sentences."""
    pool = SHORT_SENTENCES if config_name == "reduced" else FIXTURE_SENTENCES
    if n is None:
        n = len(pool) if config_name == "reduced" else BENCH_SENTENCES
    if not 1 <= n <= len(pool):
        raise UserError(f"--sentences must be between 1 and {len(pool)} for {config_name}")
    return tuple(pool[:n])


def _timed(seconds: list[float], run: Callable[[], T]) -> T:
    """`run()`, its wall time appended to `seconds`."""
    t = time.perf_counter()
    out = run()
    seconds.append(time.perf_counter() - t)
    return out


def _rtf(name: str, seconds: Sequence[float], audio_s: float) -> dict[str, float]:
    rtfs = [s / audio_s for s in seconds]
    return {
        f"{name}_rtf": round(statistics.median(rtfs), 4),
        f"{name}_rtf_min": round(min(rtfs), 4),
        f"{name}_rtf_max": round(max(rtfs), 4),
    }


def measure(
    cases: Sequence[tuple[host.Chunk, np.ndarray]],
    pipeline,
    references: dict[str, Engine],
    repeats: int,
    seed: int = 0,
    on_step: Callable[[str], None] | None = None,
    pool: WorkerPool | None = None,
) -> dict[str, float | int]:
    """`repeats` passes over the same `cases`: each reference engine, then the bundle's `pipeline`
    (a KokoroPipeline: `synthesize_ids`, `session.since_mark()`, `tables`), then the same
    cases side by side over `pool`'s workers when it has more than one. Figures (calls and
    per-graph times are `pipeline`'s: the one-worker run)."""
    if repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {repeats}")
    seconds: dict[str, list[float]] = {name: [] for name in [*references, "coreai_bundle"]}
    multi = pool is not None and pool.size > 1
    if multi:
        pool.open_all()  # loading the children is not what the bench times
        seconds[f"coreai_bundle_{pool.size}w"] = []
    graph_ms: dict[str, float] = {}
    calls: dict[str, int] = {}
    host_ms = 0.0
    audio_s = 0.0
    frames_needed: list[dict[str, int]] = []
    step = on_step or (lambda _label: None)
    pipeline.session.since_mark()  # calls made before the bench (warm-up, loading) are not counted
    for rep in range(repeats):
        for name, engine in references.items():
            _timed(seconds[name], lambda e=engine: [e(chunk, ref_s) for chunk, ref_s in cases])
            step(f"{name} {rep + 1}")
        results = _timed(
            seconds["coreai_bundle"],
            lambda: [
                pipeline.synthesize_ids(chunk.ids, ref_s, seed=seed) for chunk, ref_s in cases
            ],
        )
        step(f"bundle {rep + 1}")
        if multi:  # the same cases, each on the next free worker
            _timed(
                seconds[f"coreai_bundle_{pool.size}w"],
                lambda: pool.map_in_order(
                    cases, lambda b, c: b.synthesize_ids(c[0].ids, c[1], seed=seed)
                ),
            )
            step(f"bundle x{pool.size} {rep + 1}")
        ms, n = pipeline.session.since_mark()
        for g in ms:
            graph_ms[g] = graph_ms.get(g, 0.0) + ms[g]
            calls[g] = calls.get(g, 0) + n[g]
        host_ms += sum(r.host_ms for r in results)
        if rep == 0:  # the same sentences every repeat: the audio is the first pass's
            audio_s = sum(r.audio.size for r in results) / host.SAMPLE_RATE
            # The vocoder is where the compute is: padding waste is counted on its frames.
            frames_needed = [{"L": int(r.pred_dur.sum())} for r in results]
    per = len(cases) * repeats
    figures: dict[str, float | int] = {"sentences": len(cases), "repeats": repeats}
    figures["audio_s"] = round(audio_s, 3)
    for name, secs in seconds.items():
        figures.update(_rtf(name, secs, audio_s))
    _worker_figures(figures, pool.size if multi else 1)
    figures["coreai_host_share"] = round(host_ms / (sum(seconds["coreai_bundle"]) * 1e3), 4)
    figures["runtime_calls"] = total_calls = sum(calls.values())
    figures["runtime_calls_per_audio_s"] = round(total_calls / (audio_s * repeats), 3)
    _padding_figures(figures, frames_needed, pipeline.tables["vocoder"])
    for g, ms in graph_ms.items():
        figures[f"{g}_ms_per_sentence"] = round(ms / per, 1)
        figures[f"{g}_calls_per_sentence"] = round(calls[g] / per, 3)
    return figures


def _padding_figures(
    figures: dict[str, float | int], frames_needed: list[dict[str, int]], table: BucketTable
) -> None:
    """The vocoder's padding waste with the chosen table and with one fixed 512 bucket."""
    figures["vocoder_padding_waste_chosen"] = round(padding_waste(frames_needed, table), 4)
    figures["vocoder_padding_waste_fixed_512"] = round(
        padding_waste(frames_needed, FIXED_VOCODER), 4
    )


def _worker_figures(figures: dict[str, float | int], workers: int) -> None:
    """The bundle's RTF with 1 and with `workers` workers, each over the publisher's eager
    RTF (measured in the same run over the same sentences)."""
    counts = sorted({1, workers})
    figures["workers"] = workers
    for w in counts:
        name = "coreai_bundle" if w == 1 else f"coreai_bundle_{w}w"
        rtf = figures[f"{name}_rtf"]
        figures[f"coreai_bundle_rtf_{w}w"] = rtf
        if figures.get("eager_torch_rtf"):
            figures[f"bundle_over_eager_{w}w"] = round(rtf / figures["eager_torch_rtf"], 4)


def _pool(pipeline, workers: int) -> WorkerPool:
    """The bench's workers: `pipeline` itself for one (its run is the one-worker figure already),
    else `workers` runtime children of the same bundle."""
    if workers == 1:
        return WorkerPool.inline(pipeline)
    return WorkerPool(lambda isolate: type(pipeline)(pipeline.path, isolate=isolate), workers)


def run_bench(
    kmodel,
    bundle: Path,
    snapshot: Path,
    config_name: str,
    seed: int,
    repeats: int | None = None,
    dtype: str = "fp32",
    json_path: Path | None = None,
    sentences: int | None = None,
    profile: bool = False,
    workers: int = 1,
) -> int:
    """The sentence set through eager torch, onnxruntime int8 and `bundle`, `repeats` times."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    from .pipeline import KokoroPipeline
    from .weights.onnx_reference import OnnxReference

    texts = bench_sentences(config_name, sentences)
    repeats = 1 if repeats is None else repeats
    pack = host.load_voice("jf_alpha", extra_dirs=[snapshot / weights.VOICES_DIR])
    cases = []
    for text in texts:
        chunk = host.text_to_chunks(text)[0]
        cases.append((chunk, host.ref_s_for(pack, chunk.n_phonemes)))
    onnx_ref = OnnxReference(weights.assemble_onnx(), threads=1)

    def eager(chunk: host.Chunk, ref_s: np.ndarray) -> None:
        with torch.no_grad():
            kmodel.forward_with_tokens(torch.tensor([chunk.ids]), torch.from_numpy(ref_s))

    def onnx(chunk: host.Chunk, ref_s: np.ndarray) -> None:
        onnx_ref(np.array(chunk.ids), ref_s)

    references = {"eager_torch": eager, "onnxruntime_int8": onnx}
    with (
        KokoroPipeline(bundle) as pipeline,
        _pool(pipeline, workers) as pool,
        progress_steps((3 + (workers > 1)) * repeats, "bench kokoro") as bar,
    ):
        figures: dict[str, float | int | str] = dict(
            measure(cases, pipeline, references, repeats, seed, on_step=bar.step, pool=pool)
        )
        ops = profile_calls(pipeline.session) if profile else None
    figures["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    figures["threads"] = EAGER_THREADS
    figures["bundle_dtype"] = dtype
    print(bench_table_markdown(figures))
    add_profile(figures, ops)
    write_json(json_path, figures)
    return 0
