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
of this ladder on other precisions of the same graphs).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from conversion.core.export.graph_swap import bundle_with_graph
from conversion.s3gen import faults
from conversion.s3gen.flow import graphs as flow_graphs
from conversion.s3gen.flow import host as flow_host
from conversion.s3gen.hift import graphs as hift_graphs
from gates.ladder import LadderReport, run_ladder
from gates.mutants import (
    KillTable,
    Mutant,
    first_kill_ladder,
    patched,
    run_catalogue,
    select,
    wrapped,
)

from . import pipeline
from . import text as text_mod
from . import voice as voice_mod
from .t3 import graphs as t3_graphs
from .t3 import host as t3_host

# ------------------------------------------------------------------------------ T3 (host)


class _SessionProxy:
    """A session whose `run` edits the feed of one graph function before the real call."""

    def __init__(self, session: Any, function: str, edit: Callable[[dict], dict]) -> None:
        self._session, self._function, self._edit = session, function, edit

    def run(self, graph: str, function: str, feed: dict, **kwargs: Any) -> Any:
        if graph == t3_graphs.GRAPH and function.startswith(self._function):
            feed = self._edit(dict(feed))
        return self._session.run(graph, function, feed, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _t3_feed(function: str, edit: Callable[[dict], dict]):
    def make(generate):
        def faulty(session, *args, **kwargs):
            return generate(_SessionProxy(session, function, edit), *args, **kwargs)

        return faulty

    return wrapped(pipeline.host_t3, "generate", make)


def _plus_one(key: str, delta: int = 1) -> Callable[[dict], dict]:
    def edit(feed: dict) -> dict:
        feed[key] = np.asarray(feed[key]) + np.int32(delta)
        return feed

    return edit


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
    def make(original):
        return lambda self: dataclasses.replace(original(self), **changes)

    return wrapped(pipeline.SpeakOptions, "sampling", make)


def _no_eot():
    def make(original):
        def faulty(self, text, budget):
            return [dataclasses.replace(c, ids=c.ids[:-1]) for c in original(self, text, budget)]

        return faulty

    return wrapped(text_mod.TextTokenizer, "chunks", make)


# --------------------------------------------------------------------------- voice (host)


def _voice_file_mel_late():
    """The voice writer stores the S3Gen prompt mel one frame late (rolled along time)."""

    def make(original):
        def faulty(self, path):
            late = dataclasses.replace(self, prompt_feat=np.roll(self.prompt_feat, 1, axis=1))
            return original(late, path)

        return faulty

    return wrapped(voice_mod.Voice, "save", make)


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


# ---------------------------------------------------------------------------- HiFT (host)


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
        _t3_feed("decode", _plus_one("position")),
    ),
    Mutant(
        "t3-prefill-mask-off-by-one",
        "the prefill's length (its mask and logit row) one row short",
        _t3_feed("prefill", _plus_one("length", -1)),
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
    Mutant(
        "voice-file-mel-one-frame-late",
        "the voice file stores the S3Gen prompt mel one frame late",
        _voice_file_mel_late(),
    ),
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
    Mutant(
        "cfm-mask-off-by-one",
        "the estimator's mask one frame longer than the real frames",
        faults.mask_longer(),
    ),
    Mutant(
        "stft-replicate-pad",
        "the source STFT pads by replication, not reflection",
        faults.stft_pad("replicate"),
    ),
    Mutant(
        "istft-symmetric-window",
        "iSTFT with a symmetric Hann, not periodic",
        faults.istft("symmetric"),
    ),
    Mutant("istft-hop", "iSTFT hop 5 instead of 4", faults.istft(hop_delta=1)),
    Mutant("istft-phase-sign", "iSTFT of exp(-i phase)", faults.istft(conjugate=True)),
    Mutant(
        "source-phase-fp16",
        "the harmonic source's running phase summed in float16",
        faults.fp16_running_phase(),
    ),
    Mutant(
        "vocoder-stride-blind-copy",
        "the vocoder's pad reads the flow mel view as contiguous",
        faults.stride_blind_pad(),
    ),
    Mutant(
        "hift-trunk-ignores-mel",
        "the HiFT trunk graph ignores its mel (zeroed)",
        faults.graph_input_zeroed(hift_graphs.Trunk, "mel"),
        graph=hift_graphs.TRUNK_GRAPH,
    ),
    Mutant(
        "encoder-ignores-tokens",
        "the flow encoder graph ignores its speech tokens (all id 0)",
        faults.graph_input_zeroed(flow_graphs.FlowEncoder, "tokens"),
        graph=flow_graphs.ENCODER_GRAPH,
    ),
    Mutant(
        "estimator-ignores-spks",
        "the CFM estimator graph ignores the speaker embedding",
        faults.graph_input_zeroed(flow_graphs.FlowEstimator, "spks"),
        graph=flow_graphs.ESTIMATOR_GRAPH,
    ),
    Mutant(
        "estimator-ignores-cond",
        "the CFM estimator graph ignores the prompt mel (cond)",
        faults.graph_input_zeroed(flow_graphs.FlowEstimator, "cond"),
        graph=flow_graphs.ESTIMATOR_GRAPH,
    ),
    Mutant(
        "estimator-ignores-mu",
        "the CFM estimator graph ignores the encoder output (mu)",
        faults.graph_input_zeroed(flow_graphs.FlowEstimator, "mu"),
        graph=flow_graphs.ESTIMATOR_GRAPH,
    ),
)

# the config field holding each graph's buckets (a graph fault re-exports the smallest)
_BUCKETS = {
    "t3": "prefill_buckets",
    "flow_encoder": "encoder_tokens",
    "flow_estimator": "estimator_frames",
    "hift_f0": "vocoder_frames",
    "hift_trunk": "vocoder_frames",
}


def mutant_bundle(setup: Any, graph: str, dest: Path) -> Path:
    """A copy of the baseline bundle with `graph` re-exported (as the port's torch code now
    is) at its smallest bucket."""
    from .export import ASSET_INFO, _spec

    field = _BUCKETS[graph]
    sizes = dataclasses.replace(setup.sizes, **{field: (min(getattr(setup.sizes, field)),)})
    spec = _spec(setup.model, sizes, graph)
    return bundle_with_graph(setup.bundle, spec, sizes.to_json(), dest, ASSET_INFO)


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
    from .gate.ladder import main_rungs, prepare
    from .pipeline import ChatterboxPipeline

    mutants = select(CATALOGUE, spec)
    setup = prepare(model, config, bundles, seed, side=False)

    def ladder(pipeline: Any, whole: bool) -> LadderReport:
        rungs, _ = main_rungs(pipeline, setup)
        if whole or not first_kill:
            return run_ladder("chatterbox", rungs, progress=False)
        return first_kill_ladder("chatterbox", rungs, _CHEAP_FIRST)

    with ChatterboxPipeline(setup.bundle, isolate=True) as baseline:

        def evaluate(mutant: Mutant | None) -> LadderReport:
            if mutant is None:
                return ladder(baseline, whole=True)
            if mutant.graph is None:
                with mutant.inject():
                    return ladder(baseline, whole=False)
            with tempfile.TemporaryDirectory(prefix="voxport-cbx-mutant-") as tmp:
                with mutant.inject():
                    path = mutant_bundle(setup, mutant.graph, Path(tmp) / "bundle")
                with ChatterboxPipeline(path, isolate=True) as pipeline:
                    return ladder(pipeline, whole=False)

        def progress(i: int, n: int, mutant: Mutant) -> None:
            print(f"chatterbox mutants: [{i}/{n}] {mutant.name} ({mutant.where})", file=sys.stderr)

        return run_catalogue("chatterbox", mutants, evaluate, on_mutant=progress)
