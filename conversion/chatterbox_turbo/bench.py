"""`voxport bench chatterbox_turbo`: one utterance through the publisher's eager torch and the
bundle, the figures named as Chatterbox's bench names them (`conversion/chatterbox/bench.py`)
so the two JSONs compare key for key.

Per stage, side by side: T3 ms per token (the bundle's decode call, fp32 and int8 T3, against
one decode step of the publisher's GPT-2 loop, transformer to speech head), the mean-flow
estimator ms per call (batch 1, with `r`), the vocoder ms per utterance; runtime calls per
second of audio, real-time factors, peak RSS; and per second of audio: T3, estimator and
vocoder ms and runtime calls, each beside the eager loop's own (`conversion/s3gen/bench.py`).
The calibrated random weights stop on their own, and the bundle draws from the seed (as speak
does), the oracle from its generator: the two utterances may differ in length, which the
per-second figures allow for.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from conversion.core.progress import progress_steps
from conversion.core.runs import BenchRun
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

from .config import SAMPLE_RATE
from .gate.ladder import GATE_TEXT, GATE_TOKENS, gate_bundles
from .oracle.utterance import record
from .pipeline import ChunkDraws, SpeakOptions, TurboPipeline

EAGER_REPEATS = 3
MEANFLOW_STEP_INPUTS = ("x", "t", "r")  # the estimator's per-step inputs (the oracle's cfm_*)


def _decode_ms(pipeline: TurboPipeline) -> float:
    calls = pipeline.session.function_ms.get("t3.decode", [])
    return statistics.median(calls) if calls else float("nan")


def _int8_decode_ms(bundle, text_ids, options: SpeakOptions, seed: int) -> float:
    """The int8-T3 bundle's median decode call, T3 alone on the fp32 run's draws."""
    with TurboPipeline(bundle) as pipeline:
        uniforms = ChunkDraws.from_seed(seed).uniforms
        pipeline.t3(text_ids, pipeline.default_voice, options, uniforms=uniforms)
        return _decode_ms(pipeline)


def _eager(model, fx, step_ms: list[float], repeats: int) -> dict[str, float]:
    """The publisher's figures: its loop's forwards as `record` ran them, its estimator and
    vocoder again on the oracle's inputs."""
    steps = int(fx.meta["t3_steps"])
    s3 = eager_s3gen_ms(model.s3gen, fx.intermediates, MEANFLOW_STEP_INPUTS, repeats)
    return {
        # Like for like with the bundle's decode call: one step of the publisher's loop,
        # transformer to speech head (the median over the utterance, the prefill left out).
        "eager_t3_decode_ms_per_step": (
            statistics.median(step_ms[1:]) if len(step_ms) > 1 else float("nan")
        ),
        # The whole `inference_turbo` (prefill, processors, sampling, progress bar) per token:
        # what a user waits for per token, not a ratio's other side.
        "eager_t3_loop_ms_per_token": fx.meta["seconds"]["t3"] * 1e3 / max(steps, 1),
        **s3,
        "eager_s3gen_ms": fx.meta["seconds"]["s3gen"] * 1e3,
    }


def run_bench(run: BenchRun) -> int:
    """One utterance through the publisher's eager modules and the gate's bundles; figures."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    model, config, seed = run.model, run.config, run.seed
    max_gen_len = GATE_TOKENS[config.name]
    fp32, int8 = gate_bundles(run.source, config)  # the gate's, reused
    # inference_turbo's max_gen_len=n draws up to n + 1 tokens; the bundle's budget counts draws
    options = SpeakOptions(max_new_tokens=max_gen_len + 1)
    with progress_steps(4, "bench chatterbox_turbo") as bar:
        with t3_forward_ms(model.t3) as step_ms:
            t = time.perf_counter()
            fx = record(model, GATE_TEXT, seed=seed, max_gen_len=max_gen_len)
            eager_total = time.perf_counter() - t
        bar.step("eager oracle")
        eager = _eager(model, fx, step_ms, run.repeats or EAGER_REPEATS)
        bar.step("eager stages")
        with TurboPipeline(fp32) as pipeline:
            chunk = pipeline.chunks(GATE_TEXT)[0]
            t = time.perf_counter()
            r = pipeline.synthesize(chunk, pipeline.default_voice, options, seed=seed)
            bundle_s = time.perf_counter() - t
            fn_ms = dict(pipeline.session.function_ms)
            decode_fp32 = _decode_ms(pipeline)
            ops = profile_calls(pipeline.session) if run.profile else None
        bar.step("bundle fp32")
        decode_int8 = _int8_decode_ms(int8, chunk.ids, options, seed)
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
        "t3_stopped": bool(r.t3.stopped),
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
        "eager_t3_tokens": int(fx.meta["t3_steps"]),
        "eager_audio_s": round(eager_audio_s, 3),
        "eager_oracle_rtf": round(eager_total / max(eager_audio_s, 1e-9), 3),
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
    write_json(run.json_path, figures)
    return 0


__all__ = ["run_bench"]
