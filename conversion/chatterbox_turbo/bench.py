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

from conversion.core.progress import progress_steps
from conversion.core.runs import BenchRun
from conversion.s3gen import bench as s3gen_bench

from .gate.ladder import GATE_TEXT, GATE_TOKENS, gate_bundles
from .oracle.utterance import record
from .pipeline import ChunkDraws, SpeakOptions, TurboPipeline

EAGER_REPEATS = 3
MEANFLOW_STEP_INPUTS = ("x", "t", "r")  # the estimator's per-step inputs (the oracle's cfm_*)


def run_bench(run: BenchRun) -> int:
    """One utterance through the publisher's eager modules and the gate's bundles; figures."""
    model, config, seed = run.model, run.config, run.seed
    max_gen_len = GATE_TOKENS[config.name]
    fp32, int8 = gate_bundles(run.source, config)  # the gate's, reused
    # inference_turbo's max_gen_len=n draws up to n + 1 tokens; the bundle's budget counts draws
    options = SpeakOptions(max_new_tokens=max_gen_len + 1)
    with progress_steps(4, "bench chatterbox_turbo") as bar:
        with s3gen_bench.t3_forward_ms(model.t3) as step_ms:
            t = time.perf_counter()
            fx = record(model, GATE_TEXT, seed=seed, max_gen_len=max_gen_len)
            eager_total = time.perf_counter() - t
        bar.step("eager oracle")
        # its loop's forwards as `record` ran them, the first (the prefill) left out
        decode_step_ms = statistics.median(step_ms[1:]) if len(step_ms) > 1 else float("nan")
        repeats = run.repeats or EAGER_REPEATS
        eager = s3gen_bench.eager_stages(model, fx, MEANFLOW_STEP_INPUTS, repeats, decode_step_ms)
        bar.step("eager stages")
        with TurboPipeline(fp32) as pipeline:
            timed = s3gen_bench.time_utterance(pipeline, GATE_TEXT, options, seed, run.profile)
        bar.step("bundle fp32")
        # T3 alone on the fp32 run's draws
        uniforms = ChunkDraws.from_seed(seed).uniforms
        decode_int8 = s3gen_bench.int8_decode_ms(
            TurboPipeline, int8, timed.chunk.ids, options, uniforms
        )
        bar.step("bundle int8 T3")
    r, audio_s, eager_audio_s = timed.result, timed.audio_s, s3gen_bench.eager_audio_s(fx)
    figures: dict[str, float | int | str | None] = {
        "config": config.name,
        "text": GATE_TEXT,
        "t3_tokens": int(r.t3.steps),
        "t3_stopped": bool(r.t3.stopped),
        "audio_s": round(audio_s, 3),
        **s3gen_bench.bundle_figures(timed, decode_int8),
        "eager_t3_tokens": int(fx.meta["t3_steps"]),
        "eager_audio_s": round(eager_audio_s, 3),
        "eager_oracle_rtf": round(eager_total / max(eager_audio_s, 1e-9), 3),
        **s3gen_bench.eager_figures(eager, fx, timed, sum(step_ms)),
    }
    return s3gen_bench.report(figures, timed, eager, run.json_path)


__all__ = ["run_bench"]
