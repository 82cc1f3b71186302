"""Chatterbox's catalogue of port faults and how the gate's ladder is run with each one in.

Every fault is put into the PORT (voxport's host steps, or one of its graphs while that graph is
re-exported), never into the publisher's oracle, which is recorded once per run before any
fault opens (`gate.prepare`). A host fault runs the ladder on the baseline bundle with the host
step patched; a graph fault re-exports only its graph, at its smallest bucket, with the graph's
torch code patched, into a copy of the baseline bundle written by the project's BundleWriter (so
it verifies like any bundle), in a temp folder removed afterwards.

The ladder here is `gate.main_rungs`: every rung of the fp32 bundle (text, T3 teacher-forced
and free-running, flow, HiFT, both end-to-end cases, the cloned voice). The int8-T3 and
fp16-estimator side bundles' rungs and the step-count table are left out (they re-run rungs
of this ladder on other precisions of the same graphs). The run is
`gates.mutants.run_bundle_mutants`; the S3Gen entries Turbo lists too, and the bundle copy a
graph fault runs on, are `conversion/s3gen/faults.py`'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from conversion.s3gen import faults
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


def _t3_feed(function: str, edit):
    return feed_edited(t3_host, "generate", t3_graphs.GRAPH, function, edit)


def _step_embeds(token_scale: float = 1.0, step_shift: int = 0):
    def make(original):
        def faulty(arrays, token, step):
            row = arrays["speech_emb"][int(token)] * token_scale
            row = row + arrays["speech_pos_emb"][step + 1 + step_shift]
            return np.broadcast_to(row, (2, 1, row.shape[-1])).astype(np.float32)

        return faulty

    return wrapped(t3_host, "speech_step_embeds", make)


def _no_conditioning():
    def make(original):
        return lambda arrays, cond_emb, text_ids: original(
            arrays, np.zeros_like(np.asarray(cond_emb)), text_ids
        )

    return wrapped(t3_host, "prefill_embeds", make)


def _uncond_without_positions():
    """The CFG's uncond row drops the text rows whole: the publisher zeroes only the text-token
    embeddings and keeps their positional embeddings (port note: `text_emb[1].zero_()`)."""

    def make(original):
        def faulty(arrays, cond_emb, text_ids):
            rows = original(arrays, cond_emb, text_ids).copy()
            first = np.asarray(cond_emb).shape[-2]  # the conditioning rows come first
            rows[1, first : rows.shape[1] - 2] = 0.0  # up to the two start-of-speech rows
            return rows

        return faulty

    return wrapped(t3_host, "prefill_embeds", make)


def _sampling(**changes: Any):
    return result_replaced(pipeline.SpeakOptions, "sampling", **changes)


def _no_eot():
    def make(original):
        def faulty(self, text, budget):
            return [dataclasses.replace(c, ids=c.ids[:-1]) for c in original(self, text, budget)]

        return faulty

    return wrapped(text_mod.TextTokenizer, "chunks", make)


# --------------------------------------------------------------------------- voice (host)


def _voice_cap_short():
    """The clone's S3Gen prompt cut one token short of the bucket's cap."""
    return wrapped(voice_mod, "cap_prompt", lambda original: lambda v, n: original(v, n - 1))


# ---------------------------------------------------------------------------- flow (host)


def _cfg_rate(rate: float):
    def make(original):
        return lambda session, fn, inputs, z, t_span, _rate: original(
            session, fn, inputs, z, t_span, np.float32(rate)
        )

    return wrapped(flow_host, "_euler", make)


# ---------------------------------------------------------------------------------- graphs


CATALOGUE: tuple[Mutant, ...] = (
    Mutant("text-no-eot", "voxport's text path drops the end-of-text id", _no_eot()),
    Mutant(
        "t3-ignores-speech-token",
        "T3 decode rows carry the position but not the drawn token's embedding",
        _step_embeds(token_scale=0.0),
    ),
    Mutant(
        "t3-ignores-conditioning",
        "T3's prefill drops the voice conditioning (cond_emb zeroed)",
        _no_conditioning(),
    ),
    Mutant(
        "t3-uncond-drops-text-positions",
        "T3's uncond prefill row zeroes the text rows' positions too, not only their tokens",
        _uncond_without_positions(),
    ),
    Mutant(
        "t3-position-off-by-one",
        "decode rows take speech position id step + 2 instead of step + 1",
        _step_embeds(step_shift=1),
    ),
    Mutant(
        "t3-kv-slot-off-by-one",
        "each decode step writes (and ropes) KV row position + 1",
        _t3_feed("decode", plus_one("position")),
    ),
    Mutant(
        "t3-prefill-mask-off-by-one",
        "the prefill's length (its mask and logit row) one row short",
        _t3_feed("prefill", plus_one("length", -1)),
    ),
    Mutant("sampler-min-p-off", "min-p not applied (0.05 -> off)", _sampling(min_p=0.0)),
    Mutant(
        "sampler-top-p-on",
        "top-p 0.8 where the publisher's generate passes 1.0 (off)",
        _sampling(top_p=0.8),
    ),
    Mutant(
        "sampler-repetition-penalty-off",
        "repetition penalty not applied (1.2 -> 1.0)",
        _sampling(repetition_penalty=1.0),
    ),
    Mutant("sampler-cfg-weight", "T3's CFG weight 1.0 instead of 0.5", _sampling(cfg_weight=1.0)),
    Mutant(
        "t3-wrong-stop-id",
        "the loop stops on 6561 (start) instead of the stop token 6562",
        lambda: patched(t3_host, "STOP_SPEECH", t3_graphs.START_SPEECH),
    ),
    faults.voice_file_mel_late(voice_mod.Voice),
    Mutant(
        "voice-prompt-cap-one-short",
        "the clone cuts S3Gen's prompt one token short of the cap",
        _voice_cap_short(),
    ),
    Mutant("cfm-steps-off-by-one", "the host Euler loop runs 9 steps for 10", faults.schedule(-1)),
    Mutant(
        "cfm-linear-schedule",
        "linear time schedule instead of cosine",
        faults.schedule(cosine=False),
    ),
    Mutant("cfm-cfg-rate", "the CFM's CFG rate 0.5 instead of 0.7", _cfg_rate(0.5)),
    *faults.s3gen_mutants(
        "cfm-mask-off-by-one",
        "stft-replicate-pad",
        "istft-symmetric-window",
        "istft-hop",
        "istft-phase-sign",
        "source-phase-fp16",
        "vocoder-stride-blind-copy",
        "hift-trunk-ignores-mel",
        "encoder-ignores-tokens",
        "estimator-ignores-spks",
        "estimator-ignores-cond",
        "estimator-ignores-mu",
    ),
)


# CI's cheaper mode runs the rungs cheapest first (graph calls: the text and voice rungs none,
# HiFT two, the flow encoder one, T3 one call a token, the estimator ten, an e2e case all)
_CHEAP_FIRST = ("text.", "voice[", "hift.", "flow_encoder.", "t3[", "flow_estimator.", "flow.")


def run_mutants(
    model: Any,
    config: Any,
    bundles: Any,
    seed: int,
    spec: str = "all",
    first_kill: bool = False,
) -> KillTable:
    """The catalogue (or the faults `spec` names) against the gate's ladder at `seed`: the
    oracle recorded once, the baseline bundle opened once for every host fault. With
    `first_kill` each fault's ladder stops at its first failing rung (the baseline runs whole)."""
    from . import export
    from .gate.ladder import main_rungs, prepare
    from .pipeline import ChatterboxPipeline

    mutants = select(CATALOGUE, spec)
    setup = prepare(model, config, bundles, seed, side=False)
    return run_bundle_mutants(
        "chatterbox",
        mutants,
        setup.bundle,
        lambda path: ChatterboxPipeline(path, isolate=True),
        lambda pipeline: main_rungs(pipeline, setup)[0],
        lambda graph, dest: faults.mutant_bundle(setup, graph, dest, export),
        _CHEAP_FIRST,
        first_kill,
    )
