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
from typing import Any

import torch

from oracles.hooks import forward_hooks

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


__all__ = [
    "eager_s3gen_ms",
    "median_ms",
    "peak_rss_mb",
    "per_audio_second",
    "stage_calls",
    "stage_ms",
    "t3_forward_ms",
]
