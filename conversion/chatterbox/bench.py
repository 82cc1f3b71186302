"""`voxport bench chatterbox`: one utterance through the publisher's eager torch and the bundle.

Per stage, side by side: T3 ms per token (the bundle's decode call, fp32 and int8 T3, against
one decode step of the publisher's loop, transformer to speech head; its whole loop per token
is printed too), the CFM estimator ms per call, the vocoder ms per utterance; runtime
calls per second of audio, real-time factors, peak RSS; and per second of audio: T3, estimator
and vocoder ms and runtime calls, each beside the eager loop's own (`conversion/s3gen/bench.py`:
the figures Chatterbox Turbo's bench compares on). Random weights never draw the stop token, so
T3 runs to the token budget (the same count for every engine).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from conversion.core.bundle_source import BundleSource
from conversion.core.progress import progress_steps
from conversion.core.runtime.profile import add_profile, profile_calls
from conversion.core.threads import EAGER_THREADS
from conversion.s3gen.bench import (
    eager_s3gen_ms,
    peak_rss_mb,
    per_audio_second,
    stage_calls,
    stage_ms,
    t3_forward_ms,
)

from .config import SAMPLE_RATE, ChatterboxConfig
from .gate.ladder import GATE_TEXT, GATE_TOKENS, gate_bundles
from .oracle.utterance import record
from .pipeline import ChatterboxPipeline, SpeakOptions

EAGER_REPEATS = 3
CFG_STEP_INPUTS = ("x", "t")  # the estimator's per-step inputs (the oracle's cfm_*)


def _eager_stages(model, fx, repeats: int) -> dict[str, float]:
    """The publisher's modules on the oracle's own inputs, timed per call."""
    steps = int(fx.meta["t3_steps"])
    s3 = eager_s3gen_ms(model.s3gen, fx.intermediates, CFG_STEP_INPUTS, repeats)
    return {
        # Like for like with the bundle's decode call: one step of the publisher's loop,
        # transformer to speech head (its median over the utterance, the prefill left out).
        "eager_t3_decode_ms_per_step": fx.meta["t3_decode_step_ms"],
        # The whole `T3.inference` (prefill, hooks, sampling, progress bar) per token: what a
        # user waits for per token, not a ratio's other side.
        "eager_t3_loop_ms_per_token": fx.meta["seconds"]["t3"] * 1e3 / max(steps, 1),
        **s3,
        "eager_s3gen_ms": fx.meta["seconds"]["s3gen"] * 1e3,
    }


def _decode_ms(pipeline: ChatterboxPipeline) -> float:
    calls = pipeline.session.function_ms.get("t3.decode", [])
    return statistics.median(calls) if calls else float("nan")


def run_bench(
    model,
    config: ChatterboxConfig,
    bundles: BundleSource,
    seed: int,
    repeats: int | None = None,
    json_path: Path | None = None,
    profile: bool = False,
) -> int:
    """One utterance through the publisher's eager modules and the gate's bundles; figures."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    steps = GATE_TOKENS[config.name]
    fp32, int8 = gate_bundles(bundles, config)  # the gate's, reused
    options = SpeakOptions(max_new_tokens=steps)
    with progress_steps(4, "bench chatterbox") as bar:
        with t3_forward_ms(model.t3) as step_ms:
            t = time.perf_counter()
            fx = record(model, GATE_TEXT, seed=seed, max_new_tokens=steps)
            eager_total = time.perf_counter() - t
        bar.step("eager oracle")
        eager = _eager_stages(model, fx, repeats or EAGER_REPEATS)
        bar.step("eager stages")
        with ChatterboxPipeline(fp32) as pipeline:
            chunk = pipeline.chunks(GATE_TEXT)[0]
            t = time.perf_counter()
            r = pipeline.synthesize(chunk, pipeline.default_voice, options, seed=seed)
            bundle_s = time.perf_counter() - t
            fn_ms = dict(pipeline.session.function_ms)
            decode_fp32 = _decode_ms(pipeline)
            ops = profile_calls(pipeline.session) if profile else None
        bar.step("bundle fp32")
        with ChatterboxPipeline(int8) as cb8:
            cb8.t3(chunk.ids, cb8.default_voice, options, uniforms=fx.draws["t3_uniforms/0"])
            decode_int8 = _decode_ms(cb8)
        bar.step("bundle int8 T3")
    audio_s = r.wav.size / SAMPLE_RATE
    eager_audio_s = np.asarray(fx.outputs["wav_unwatermarked"]).size / SAMPLE_RATE
    calls = sum(r.calls.values())
    stages, counts = stage_ms(fn_ms), stage_calls(fn_ms)
    est_calls = [v for k, v in fn_ms.items() if k.startswith("flow_estimator.")]
    eager_est_calls = len(fx.intermediates["cfm_t"])
    figures: dict[str, float | int | str | None] = {
        "config": config.name,
        "text": GATE_TEXT,
        "t3_tokens": int(r.t3.steps),
        "audio_s": round(audio_s, 3),
        "t3_decode_ms_per_token_fp32": round(decode_fp32, 2),
        "t3_decode_ms_per_token_int8": round(decode_int8, 2),
        "t3_prefill_ms": round(sum(sum(v) for k, v in fn_ms.items() if ".prefill_" in k), 1),
        "estimator_ms_per_call": round(statistics.median(est_calls[0]), 1) if est_calls else None,
        "estimator_calls": counts["estimator"],
        "encoder_ms": round(stages["encoder"], 1),
        "vocoder_ms": round(stages["vocoder"], 1),
        "runtime_calls": calls,
        "coreai_bundle_rtf": round(bundle_s / max(audio_s, 1e-9), 3),
        "coreai_host_ms": round(r.host_ms, 1),
        "eager_audio_s": round(eager_audio_s, 3),
        "eager_oracle_rtf": round(eager_total / max(audio_s, 1e-9), 3),
        **{k: round(v, 2) for k, v in eager.items()},
        "eager_estimator_calls": eager_est_calls,
        **per_audio_second(
            stages,
            calls,
            audio_s,
            {
                "t3": sum(step_ms),
                "estimator": eager["eager_estimator_ms_per_call"] * eager_est_calls,
                "vocoder": eager["eager_vocoder_ms"],
            },
            eager_audio_s,
        ),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "threads": EAGER_THREADS,
    }
    figures["t3_decode_vs_eager_step"] = round(
        decode_fp32 / eager["eager_t3_decode_ms_per_step"], 2
    )
    figures["estimator_vs_eager"] = (
        round(figures["estimator_ms_per_call"] / eager["eager_estimator_ms_per_call"], 1)
        if figures["estimator_ms_per_call"]
        else None
    )
    print(bench_table_markdown(figures))
    add_profile(figures, ops)
    write_json(json_path, figures)
    return 0


__all__ = ["run_bench"]
