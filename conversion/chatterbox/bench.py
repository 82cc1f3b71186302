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

import time
from pathlib import Path

from conversion.core.bundle_source import BundleSource
from conversion.core.progress import progress_steps
from conversion.s3gen import bench as s3gen_bench

from .config import ChatterboxConfig
from .gate.ladder import GATE_TEXT, GATE_TOKENS, gate_bundles
from .oracle.utterance import record
from .pipeline import ChatterboxPipeline, SpeakOptions

EAGER_REPEATS = 3
CFG_STEP_INPUTS = ("x", "t")  # the estimator's per-step inputs (the oracle's cfm_*)


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
    steps = GATE_TOKENS[config.name]
    fp32, int8 = gate_bundles(bundles, config)  # the gate's, reused
    options = SpeakOptions(max_new_tokens=steps)
    with progress_steps(4, "bench chatterbox") as bar:
        with s3gen_bench.t3_forward_ms(model.t3) as step_ms:
            t = time.perf_counter()
            fx = record(model, GATE_TEXT, seed=seed, max_new_tokens=steps)
            eager_total = time.perf_counter() - t
        bar.step("eager oracle")
        # the oracle's own decode step: its median over the utterance, the prefill left out
        decode_step_ms = fx.meta["t3_decode_step_ms"]
        eager = s3gen_bench.eager_stages(
            model, fx, CFG_STEP_INPUTS, repeats or EAGER_REPEATS, decode_step_ms
        )
        bar.step("eager stages")
        with ChatterboxPipeline(fp32) as pipeline:
            run = s3gen_bench.time_utterance(pipeline, GATE_TEXT, options, seed, profile)
        bar.step("bundle fp32")
        uniforms = fx.draws["t3_uniforms/0"]
        decode_int8 = s3gen_bench.int8_decode_ms(
            ChatterboxPipeline, int8, run.chunk.ids, options, uniforms
        )
        bar.step("bundle int8 T3")
    r, audio_s, eager_audio_s = run.result, run.audio_s, s3gen_bench.eager_audio_s(fx)
    figures: dict[str, float | int | str | None] = {
        "config": config.name,
        "text": GATE_TEXT,
        "t3_tokens": int(r.t3.steps),
        "audio_s": round(audio_s, 3),
        **s3gen_bench.bundle_figures(run, decode_int8),
        "eager_audio_s": round(eager_audio_s, 3),
        "eager_oracle_rtf": round(eager_total / max(audio_s, 1e-9), 3),
        **s3gen_bench.eager_figures(eager, fx, run, sum(step_ms)),
    }
    return s3gen_bench.report(figures, run, eager, json_path)


__all__ = ["run_bench"]
