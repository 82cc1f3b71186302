"""Chatterbox Turbo's catalogue of port faults and how the gate's ladder is run with each in.

As for Chatterbox (`conversion/chatterbox/mutants.py`): every fault is put into the PORT
(voxport's host steps, or one of its graphs while that graph is re-exported at its smallest
bucket into a temp copy of the baseline bundle), never into the publisher's oracle, recorded
once per run before any fault opens. The ladder is `gate.main_rungs`: every rung of the fp32
bundle; the int8-T3 side bundle's rungs re-run T3's on another precision and are left out.
The S3Gen faults both models share (and the bundle copy a graph fault runs on) are
`conversion/s3gen/faults.py`'s; the run is `gates.mutants.run_bundle_mutants`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from conversion.core.host.sampling import SamplingOrder
from conversion.s3gen import faults
from conversion.s3gen.flow import graphs as flow_graphs
from conversion.s3gen.flow import host as flow_host
from gates.mutants import (
    KillTable,
    Mutant,
    feed_edited,
    patched,
    plus_one,
    result_replaced,
    run_bundle_mutants,
    select,
    wrapped,
)

from . import pipeline
from . import text as text_mod
from . import voice as voice_mod
from .t3 import graphs as t3_graphs
from .t3 import host as t3_host

# ------------------------------------------------------------------------------ T3 (host)


def _t3_feed(function: str, edit: Callable[[dict], dict]):
    return feed_edited(t3_host, "generate", t3_graphs.GRAPH, function, edit)


def _cond_edited(edit: Callable[[t3_host.TurboCond], t3_host.TurboCond]):
    return wrapped(t3_host, "cond_rows", lambda original: lambda a, c: original(a, edit(c)))


def _sampling(**changes: Any):
    return result_replaced(pipeline.SpeakOptions, "sampling", **changes)


def _no_start_token_penalty():
    """Draw 0's repetition penalty sees no history (the publisher's `input_ids` hold the
    start-of-speech token there)."""

    def make(original):
        return lambda step, drawn: original(step, drawn) if step else np.zeros(0, np.int64)

    return wrapped(t3_host, "penalty_history", make)


# -------------------------------------------------------------------------------- text


def _no_punc_norm():
    return lambda: patched(text_mod, "punc_norm", lambda text: text)


# ------------------------------------------------------------------------ mean flow (host)


def _estimator_times(edit: Callable[[dict], dict]):
    return feed_edited(flow_host, "_mean_flow_euler", flow_graphs.ESTIMATOR_GRAPH, "", edit)


def _r_is_t(feed: dict) -> dict:
    feed["r"] = feed["t"]
    return feed


def _t_r_swapped(feed: dict) -> dict:
    feed["t"], feed["r"] = feed["r"], feed["t"]
    return feed


# ---------------------------------------------------------------------------------- graphs


def _no_prefill_positions():
    """T3's prefill adds no learned positions (its decode still does): the graph subtracts
    the positions the prefill adds."""

    def make(original):
        def faulty(self, embeds, length):
            return original(self, embeds - self.wpe[: embeds.shape[1]], length)

        return faulty

    return wrapped(t3_graphs.T3TurboGraph, "prefill", make)


CATALOGUE: tuple[Mutant, ...] = (
    Mutant("text-no-punc-norm", "voxport's text path skips Turbo's punc_norm", _no_punc_norm()),
    Mutant(
        "t3-ignores-speech-token",
        "T3 decode rows do not carry the drawn token's embedding (zeroed)",
        wrapped(t3_host, "speech_step_embeds", lambda o: lambda a, t: o(a, t) * 0),
    ),
    Mutant(
        "t3-ignores-speaker",
        "T3's prefill speaker row from a zero speaker embedding",
        _cond_edited(lambda c: t3_host.TurboCond(np.zeros_like(c.speaker_emb), c.prompt_tokens)),
    ),
    Mutant(
        "t3-drops-voice-prompt",
        "T3's prefill leaves out the voice's prompt speech tokens",
        _cond_edited(lambda c: t3_host.TurboCond(c.speaker_emb, np.zeros((1, 0), np.int64))),
    ),
    Mutant(
        "t3-kv-slot-off-by-one",
        "each decode step writes KV row (and takes GPT-2 position) position + 1",
        _t3_feed("decode", plus_one("position")),
    ),
    Mutant(
        "t3-prefill-length-short",
        "the prefill's length (its logit row) one row short",
        _t3_feed("prefill", plus_one("length", -1)),
    ),
    Mutant(
        "sampler-penalty-first",
        "the repetition penalty before top-k/top-p (transformers' generate order), not after",
        _sampling(order=SamplingOrder(penalty_after_filters=False)),
    ),
    Mutant(
        "sampler-no-start-token-penalty",
        "draw 0's repetition penalty leaves out the start-of-speech token",
        _no_start_token_penalty(),
    ),
    Mutant(
        "sampler-top-k-50",
        "top-k 50 where the publisher's generate passes 1000",
        _sampling(top_k=50),
    ),
    Mutant("sampler-top-p-off", "top-p not applied (0.95 -> off)", _sampling(top_p=1.0)),
    Mutant("sampler-temperature-off", "temperature 1.0 instead of 0.8", _sampling(temperature=1.0)),
    Mutant(
        "sampler-repetition-penalty-off",
        "repetition penalty not applied (1.2 -> 1.0)",
        _sampling(repetition_penalty=1.0),
    ),
    Mutant(
        "t3-wrong-stop-id",
        "the loop stops on 6561 (start) instead of the stop token 6562",
        lambda: patched(t3_host, "STOP_SPEECH", t3_graphs.START_SPEECH),
    ),
    Mutant(
        "s3gen-no-silence-tail",
        "the speech tokens reach S3Gen without generate()'s three silence tokens",
        lambda: patched(pipeline, "TRAILING_SILENCE", 0),
    ),
    faults.voice_file_mel_late(voice_mod.TurboVoice),
    Mutant("meanflow-ignores-r", "the host feeds the estimator r = t", _estimator_times(_r_is_t)),
    Mutant(
        "meanflow-t-r-swapped", "the host feeds t as r and r as t", _estimator_times(_t_r_swapped)
    ),
    Mutant("meanflow-one-step", "the host mean-flow loop runs 1 step for 2", faults.schedule(-1)),
    Mutant(
        "meanflow-cosine-schedule",
        "a cosine time schedule where mean-flow's is linear",
        faults.schedule(cosine=True),
    ),
    *faults.s3gen_mutants(
        "cfm-mask-off-by-one",
        "stft-replicate-pad",
        "istft-hop",
        "istft-phase-sign",
        "source-phase-fp16",
    ),
    Mutant(
        "t3-prefill-no-positions",
        "the T3 graph's prefill adds no GPT-2 learned positions",
        _no_prefill_positions(),
        graph=t3_graphs.GRAPH,
    ),
    *faults.s3gen_mutants(
        "estimator-ignores-r",
        "estimator-ignores-spks",
        "encoder-ignores-tokens",
        "hift-trunk-ignores-mel",
    ),
)

# CI's cheaper mode runs the rungs cheapest first (graph calls: text, voice and the sampler
# none, HiFT two, the flow encoder one, the estimator two, T3 one a token, an e2e case all)
_CHEAP_FIRST = (
    "text",
    "voice",
    "t3.sampler",
    "s3gen.",
    "hift.",
    "flow_encoder.",
    "flow_estimator.",
    "flow.",
    "t3",
)


def run_mutants(run: Any, first_kill: bool = False) -> KillTable:
    """The faults `run.mutants` names (the whole catalogue when None) against the gate's
    ladder at `run.seed`: the oracle recorded once, the baseline bundle opened once for every
    host fault. With `first_kill` each fault's ladder stops at its first failing rung."""
    from . import export
    from .gate.ladder import main_rungs, prepare
    from .pipeline import TurboPipeline

    names = ",".join(m.name for m in run.mutants) if run.mutants else "all"
    mutants = select(CATALOGUE, names)
    setup = prepare(run.model, run.config, run.source, run.seed, side=False)
    return run_bundle_mutants(
        "chatterbox_turbo",
        mutants,
        setup.bundle,
        lambda path: TurboPipeline(path, isolate=True),
        lambda pipeline: main_rungs(pipeline, setup)[0],
        lambda graph, dest: faults.mutant_bundle(setup, graph, dest, export),
        _CHEAP_FIRST,
        first_kill,
    )
