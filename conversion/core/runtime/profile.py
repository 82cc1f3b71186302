"""Where a graph's time goes on the Linux runtime, op by op: `voxport bench MODEL --profile`.

`coreai_torch.debugging`'s Benchmarker attributes the runtime profiler's per-dispatch timings
to the Core AI ops of a program, but it loads the model with macOS's `SpecializationOptions`
and calls functions without state. Here the same Benchmarker machinery runs on Linux: the
model is loaded from an ODIX written with debug info (what `AIModelAsset.executable()` does on
Linux, with `enable_debug_info=True`), and stateful functions get a fresh zero state. Each
profiled call is preceded by one untimed warm-up call, as the Benchmarker does.

The inputs are the ones the bench really passed (TimedSession keeps each function's first
inputs), so the shapes and buckets profiled are the ones that spoke. Profiling costs two
calls of every function profiled, plus lowering each asset once more.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core.bundle import load_manifest
from conversion.core.runtime.session import _captured_stderr, to_runtime_array

TOP_DISPATCHES = 12  # slowest single dispatches listed per function
TOP_KINDS = 10  # op kinds listed per function in the printed table


def _op_shapes(op) -> dict[str, list[str]]:
    """Operand and result types of one Core AI op, as the IR prints them."""
    return {
        "operands": [str(v.type) for v in op.operands],
        "results": [str(r.type) for r in op.results],
    }


def _make_benchmarker(program, function: str):
    """A Benchmarker whose `run` loads the debug ODIX on Linux and passes state."""
    from coreai.authoring.asset import AIModelAsset
    from coreai.runtime import AIModel, NDArray, Profiler
    from coreai_torch.debugging import benchmarker as bm

    class _LinuxBenchmarker(bm.Benchmarker):
        async def benchmark(self, inputs, num_runs=1):  # the abstract method; unused here
            raise NotImplementedError

        async def run(self, asset_path: Path, inputs: dict, state: dict | None) -> Any:
            self._reset_state()
            with tempfile.TemporaryDirectory(suffix=".aimodelx") as odix:
                await asyncio.to_thread(
                    AIModelAsset.load(asset_path)._write_odix,
                    Path(odix),
                    enable_debug_info=True,
                )
                model = await AIModel.load(path=odix, specialization_options=None)
                self._debug_info_records = bm.parse_debug_infos(model._debug_infos)
                self._extract_coreai_operations()
                self._build_compile_id_to_coreai_map()
                profiler = Profiler(
                    on_log_event_begin=self._on_log_event_begin,
                    on_log_event_end=self._on_log_event_end,
                    on_log_event=self._on_log_event,
                )
                fn = model.load_function(self.entry_point, profiler=profiler)
                args = {k: NDArray(v) for k, v in inputs.items()}

                async def call():
                    return await (fn(args) if state is None else fn(args, state=state))

                await call()  # warm-up: first-call costs are not the steady state
                with self._lock:
                    self._state = bm._BenchmarkerState.RUNNING
                start = time.perf_counter()
                await call()
                wall_ms = (time.perf_counter() - start) * 1e3
                await asyncio.to_thread(self._wait_for_intervals_to_complete)
                with self._lock:
                    self._state = bm._BenchmarkerState.COMPLETED
                return self._create_result(), wall_ms

    return _LinuxBenchmarker(program, function, bm._get_default_excluded_operations())


def _summarise(result, wall_ms: float) -> dict[str, Any]:
    """Per op kind (total ms, share, dispatches) and the slowest dispatches with shapes."""
    kinds: dict[str, list[float]] = {}
    top = []
    timed = 0.0
    for timing in result.get_operation_summary():
        stats = timing.measurement.statistics
        if stats is None:
            continue
        ms = float(stats.median)
        timed += ms
        kind = "+".join(dict.fromkeys(n.removeprefix("coreai.") for n in timing.op_names))
        entry = kinds.setdefault(kind, [0.0, 0])
        entry[0] += ms
        entry[1] += 1
        if len(top) < TOP_DISPATCHES:
            top.append({"op": kind, "ms": round(ms, 2), **_op_shapes(timing.operations[0])})
    by_kind = [
        {
            "op": k,
            "ms": round(v[0], 1),
            "share": round(v[0] / timed, 4) if timed else 0.0,
            "dispatches": v[1],
        }
        for k, v in sorted(kinds.items(), key=lambda kv: -kv[1][0])
    ]
    for row in top:
        row["share"] = round(row["ms"] / timed, 4) if timed else 0.0
    return {
        "call_ms": round(wall_ms, 1),
        "ops_ms": round(timed, 1),
        "by_op": by_kind,
        "top_dispatches": top,
    }


def profile_bundle(
    bundle: Path | str,
    calls: Mapping[str, Mapping[str, Any]],
    on_step: Callable[[str], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Time every op of each `"graph.function"` in `calls`, called with its inputs there."""
    from coreai.authoring.asset import AIModelAsset
    from coreai.runtime import NDArray

    bundle = Path(bundle)
    manifest = load_manifest(bundle, verify=False)
    out: dict[str, dict[str, Any]] = {}
    for key, inputs in calls.items():
        graph, function = key.split(".", 1)
        desc = manifest.function(graph, function)
        asset_path = bundle / manifest.graphs[graph]["asset"]
        arrays = {
            d["name"]: to_runtime_array(d["name"], inputs[d["name"]], d) for d in desc["inputs"]
        }
        zeros = {d["name"]: np.zeros(d["shape"], np.dtype(d["dtype"])) for d in desc["states"]}
        state = {k: NDArray(v) for k, v in zeros.items()} or None  # a fresh state, as a reset
        with _captured_stderr(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = AIModelAsset.load(asset_path).program
            result, wall_ms = asyncio.run(
                _make_benchmarker(program, function).run(asset_path, arrays, state)
            )
            out[key] = _summarise(result, wall_ms)
        if on_step is not None:
            on_step(key)
    return out


def profile_calls(session, on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Profile each function a TimedSession called, with the first inputs it was given."""
    return profile_bundle(session.bundle, session.first_inputs, on_step=on_step)


def profile_markdown(profile: Mapping[str, Mapping[str, Any]], kinds: int = TOP_KINDS) -> str:
    """One table per function: op kinds by share of the op time; then the slowest dispatch."""
    lines: list[str] = []
    for key, p in profile.items():
        lines += [
            f"### {key}: {p['call_ms']:.0f} ms a call ({p['ops_ms']:.0f} ms in timed ops)",
            "",
            "| op | ms | share | dispatches |",
            "|---|---:|---:|---:|",
        ]
        for row in p["by_op"][:kinds]:
            lines.append(
                f"| {row['op']} | {row['ms']:.1f} | {100 * row['share']:.1f} % | "
                f"{row['dispatches']} |"
            )
        if p["top_dispatches"]:
            t = p["top_dispatches"][0]
            lines += [
                "",
                f"slowest dispatch: {t['op']} {t['ms']:.1f} ms "
                f"({', '.join(t['operands'])} -> {', '.join(t['results'])})",
            ]
        lines.append("")
    return "\n".join(lines)


def add_profile(figures: dict[str, Any], profile: Mapping[str, Any] | None) -> None:
    """Print the profile's tables and put it in the bench's JSON under "profile"."""
    if profile is None:
        return
    print(profile_markdown(profile))
    figures["profile"] = dict(profile)
