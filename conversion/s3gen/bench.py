"""The half of `voxport bench` that Chatterbox and Chatterbox Turbo share (both are a T3 loop,
S3Gen's flow and HiFT): the publisher's eager stages timed on the oracle's own inputs, T3's
loop timed per forward, and every stage per second of audio beside its eager twin.

Per second of audio is the figure the two models compare on: their utterances differ in
length (Turbo stops on its own), their estimators in calls (10 CFG steps at batch 2 against 2
mean-flow steps at batch 1), so per token or per call alone does not say which is cheaper.
"""

from __future__ import annotations

import contextlib
import resource
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from conversion.core.runtime.profile import add_profile, profile_calls
from conversion.core.threads import EAGER_THREADS
from oracles.hooks import forward_hooks

from .sizes import SAMPLE_RATE

# bundle function names ("graph.function") by stage: the graphs both models export
STAGES = {
    "t3": ("t3.",),
    "encoder": ("flow_encoder.",),
    "estimator": ("flow_estimator.",),
    "vocoder": ("hift_",),
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


@contextlib.contextmanager
def t3_forward_ms(t3: torch.nn.Module) -> Iterator[list[float]]:
    """The ms of each forward of T3's loop, transformer to speech head (the first is the
    prefill, each later one a decode step: the work of a bundle's `t3.decode` call). Enter it
    before the oracle installs its own hooks: these run first, so the oracle's copy of the
    logits falls outside the window."""
    step_ms: list[float] = []
    began = [0.0]

    def step_begins(_m: Any, _args: Any, _kwargs: dict[str, Any]) -> None:
        began[0] = time.perf_counter()

    def step_ends(_m: Any, _a: Any, _out: Any) -> None:
        step_ms.append((time.perf_counter() - began[0]) * 1e3)

    with forward_hooks() as add:
        add(t3.tfmr, step_begins, pre=True, kwargs=True)
        add(t3.speech_head, step_ends)
        yield step_ms


def eager_s3gen_ms(
    s3gen: Any, intermediates: Mapping[str, Any], step_inputs: Sequence[str], repeats: int
) -> dict[str, float]:
    """The publisher's estimator (one call, the oracle's first step's inputs: `step_inputs`
    are the per-step ones, `cfm_<name>` [S, ...]) and vocoder (the utterance's mel), each
    the median ms of `repeats` calls."""
    it = intermediates
    inputs = {name: torch.from_numpy(it[f"cfm_{name}"][0]) for name in step_inputs}
    for name in ("mask", "mu", "spks", "cond"):
        inputs[name] = torch.from_numpy(it[f"cfm_{name}_in"])
    est = s3gen.flow.decoder.estimator
    mel = torch.from_numpy(it["mel"])
    with torch.inference_mode():
        est_ms = median_ms(lambda: est.forward(**inputs), repeats)
        voc_ms = median_ms(
            lambda: s3gen.mel2wav.inference(speech_feat=mel, cache_source=torch.zeros(1, 1, 0)),
            repeats,
        )
    return {"eager_estimator_ms_per_call": est_ms, "eager_vocoder_ms": voc_ms}


def stage_ms(function_ms: Mapping[str, list[float]]) -> dict[str, float]:
    """Each stage's summed ms over every call of its functions (`TimedSession.function_ms`)."""
    return {
        stage: sum(sum(v) for k, v in function_ms.items() if k.startswith(prefixes))
        for stage, prefixes in STAGES.items()
    }


def stage_calls(function_ms: Mapping[str, list[float]]) -> dict[str, int]:
    return {
        stage: sum(len(v) for k, v in function_ms.items() if k.startswith(prefixes))
        for stage, prefixes in STAGES.items()
    }


def per_audio_second(
    bundle_ms: Mapping[str, float],
    calls: int,
    audio_s: float,
    eager_ms: Mapping[str, float],
    eager_audio_s: float,
) -> dict[str, float]:
    """T3, estimator and vocoder ms and runtime calls per second of audio, the bundle's
    (`bundle_ms`: `stage_ms`) beside the eager loop's (`eager_ms`: t3, estimator, vocoder ms
    over its own utterance of `eager_audio_s`), and their ratios: like for like, the same work
    per second of the audio each produced."""
    audio_s, eager_audio_s = max(audio_s, 1e-9), max(eager_audio_s, 1e-9)
    out: dict[str, float] = {}
    for stage in ("t3", "estimator", "vocoder"):
        mine = bundle_ms[stage] / audio_s
        theirs = eager_ms[stage] / eager_audio_s
        out[f"{stage}_ms_per_audio_s"] = round(mine, 1)
        out[f"eager_{stage}_ms_per_audio_s"] = round(theirs, 1)
        out[f"{stage}_per_audio_s_vs_eager"] = round(mine / theirs, 2) if theirs else None
    out["runtime_calls_per_audio_s"] = round(calls / audio_s, 2)
    return out


def eager_stages(
    model: Any, fx: Any, step_inputs: Sequence[str], repeats: int, decode_step_ms: float
) -> dict[str, float]:
    """The publisher's figures: one decode step of its T3 loop (`decode_step_ms`, the median
    over the utterance, the prefill left out: like for like with the bundle's decode call),
    its whole loop per token, its estimator and vocoder again on the oracle's inputs
    (`eager_s3gen_ms`), and its S3Gen as the oracle ran it."""
    steps = int(fx.meta["t3_steps"])
    s3 = eager_s3gen_ms(model.s3gen, fx.intermediates, step_inputs, repeats)
    return {
        "eager_t3_decode_ms_per_step": decode_step_ms,
        # The whole loop (prefill, processors, sampling, progress bar) per token: what a user
        # waits for per token, not a ratio's other side.
        "eager_t3_loop_ms_per_token": fx.meta["seconds"]["t3"] * 1e3 / max(steps, 1),
        **s3,
        "eager_s3gen_ms": fx.meta["seconds"]["s3gen"] * 1e3,
    }


def median_decode_ms(pipeline: Any) -> float:
    """The median ms of the pipeline's `t3.decode` calls (NaN when there were none)."""
    calls = pipeline.session.function_ms.get("t3.decode", [])
    return statistics.median(calls) if calls else float("nan")


@dataclass
class BundleRun:
    """The bench's utterance (its first chunk) spoken by a bundle, timed."""

    chunk: Any
    result: Any  # the pipeline's ChunkResult
    seconds: float
    function_ms: dict[str, list[float]]
    decode_ms: float  # `median_decode_ms`
    ops: Any  # `profile_calls`, with --profile

    @property
    def audio_s(self) -> float:
        return self.result.wav.size / SAMPLE_RATE


def eager_audio_s(fx: Any) -> float:
    """The seconds of the oracle's utterance (before the publisher's watermark)."""
    return np.asarray(fx.outputs["wav_unwatermarked"]).size / SAMPLE_RATE


def time_utterance(
    pipeline: Any, text: str, options: Any, seed: int, profile: bool = False
) -> BundleRun:
    """`text`'s first chunk spoken by `pipeline` in its default voice, timed."""
    chunk = pipeline.chunks(text)[0]
    t = time.perf_counter()
    r = pipeline.synthesize(chunk, pipeline.default_voice, options, seed=seed)
    seconds = time.perf_counter() - t
    fn_ms = dict(pipeline.session.function_ms)
    decode = median_decode_ms(pipeline)
    ops = profile_calls(pipeline.session) if profile else None
    return BundleRun(chunk, r, seconds, fn_ms, decode, ops)


def int8_decode_ms(
    pipeline_type: Any, bundle: Path, text_ids: Any, options: Any, uniforms: Any
) -> float:
    """The int8-T3 bundle's median decode call, T3 alone on `uniforms`."""
    with pipeline_type(bundle) as pipeline:
        pipeline.t3(text_ids, pipeline.default_voice, options, uniforms=uniforms)
        return median_decode_ms(pipeline)


def bundle_figures(run: BundleRun, decode_int8: float) -> dict[str, Any]:
    """The bundle's figures: T3's decode (fp32, int8) and prefill, each S3Gen stage, its
    runtime calls and real-time factor."""
    fn_ms, audio_s = run.function_ms, run.audio_s
    stages, counts = stage_ms(fn_ms), stage_calls(fn_ms)
    est_calls = [v for k, v in fn_ms.items() if k.startswith("flow_estimator.")]
    return {
        "t3_decode_ms_per_token_fp32": round(run.decode_ms, 2),
        "t3_decode_ms_per_token_int8": round(decode_int8, 2),
        "t3_prefill_ms": round(sum(sum(v) for k, v in fn_ms.items() if ".prefill_" in k), 1),
        "estimator_ms_per_call": round(statistics.median(est_calls[0]), 1) if est_calls else None,
        "estimator_calls": counts["estimator"],
        "encoder_ms": round(stages["encoder"], 1),
        "vocoder_ms": round(stages["vocoder"], 1),
        "runtime_calls": sum(run.result.calls.values()),
        "coreai_bundle_rtf": round(run.seconds / max(audio_s, 1e-9), 3),
        "coreai_host_ms": round(run.result.host_ms, 1),
    }


def eager_figures(
    eager: Mapping[str, float], fx: Any, run: BundleRun, eager_t3_ms: float
) -> dict[str, Any]:
    """The eager figures (`eager_stages`, the oracle `fx`'s estimator calls), then every stage
    per second of audio beside the eager loop's (its T3 forwards summed: `eager_t3_ms`), peak
    RSS and threads."""
    eager_estimator_calls = len(fx.intermediates["cfm_t"])
    return {
        **{k: round(v, 2) for k, v in eager.items()},
        "eager_estimator_calls": eager_estimator_calls,
        **per_audio_second(
            stage_ms(run.function_ms),
            sum(run.result.calls.values()),
            run.audio_s,
            {
                "t3": eager_t3_ms,
                "estimator": eager["eager_estimator_ms_per_call"] * eager_estimator_calls,
                "vocoder": eager["eager_vocoder_ms"],
            },
            eager_audio_s(fx),
        ),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "threads": EAGER_THREADS,
    }


def report(
    figures: dict[str, Any], run: BundleRun, eager: Mapping[str, float], json_path: Path | None
) -> int:
    """`figures` completed with the bundle-to-eager ratios, printed as a table, the profile
    added (with --profile) and written to `json_path`."""
    from conversion.core.paths import write_json
    from gates.report import bench_table_markdown

    figures["t3_decode_vs_eager_step"] = round(
        run.decode_ms / eager["eager_t3_decode_ms_per_step"], 2
    )
    figures["estimator_vs_eager"] = (
        round(figures["estimator_ms_per_call"] / eager["eager_estimator_ms_per_call"], 1)
        if figures["estimator_ms_per_call"]
        else None
    )
    print(bench_table_markdown(figures))
    add_profile(figures, run.ops)
    write_json(json_path, figures)
    return 0


__all__ = [
    "BundleRun",
    "bundle_figures",
    "eager_audio_s",
    "eager_figures",
    "eager_s3gen_ms",
    "eager_stages",
    "int8_decode_ms",
    "median_decode_ms",
    "median_ms",
    "peak_rss_mb",
    "per_audio_second",
    "report",
    "stage_calls",
    "stage_ms",
    "t3_forward_ms",
    "time_utterance",
]
