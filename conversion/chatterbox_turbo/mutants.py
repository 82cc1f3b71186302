"""Chatterbox Turbo's catalogue of port faults and how the gate's ladder is run with each in.

As for Chatterbox (`conversion/chatterbox/mutants.py`): every fault is put into the PORT
(voxport's host steps, or one of its graphs while that graph is re-exported at its smallest
bucket into a temp copy of the baseline bundle), never into the publisher's oracle, recorded
once per run before any fault opens. The ladder is `gate.main_rungs`: every rung of the fp32
bundle; the int8-T3 side bundle's rungs re-run T3's on another precision and are left out.
The S3Gen faults both models share are `conversion/s3gen/faults.py`'s.
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
from conversion.core.host.sampling import SamplingOrder
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
    """A session whose `run` edits the feed of one graph's functions before the real call."""

    def __init__(self, session: Any, graph: str, function: str, edit: Callable[[dict], dict]):
        self._session, self._graph, self._function, self._edit = session, graph, function, edit

    def run(self, graph: str, function: str, feed: dict, **kwargs: Any) -> Any:
        if graph == self._graph and function.startswith(self._function):
            feed = self._edit(dict(feed))
        return self._session.run(graph, function, feed, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _feed_edited(module: Any, name: str, graph: str, function: str, edit: Callable):
    """`module.name(session, ...)` called with a session that edits `graph.function`'s feed."""

    def make(original):
        def faulty(session, *args, **kwargs):
            return original(_SessionProxy(session, graph, function, edit), *args, **kwargs)

        return faulty

    return wrapped(module, name, make)


def _plus_one(key: str, delta: int = 1) -> Callable[[dict], dict]:
    def edit(feed: dict) -> dict:
        feed[key] = np.asarray(feed[key]) + np.int32(delta)
        return feed

    return edit


def _t3_feed(function: str, edit: Callable[[dict], dict]):
    return _feed_edited(t3_host, "generate", t3_graphs.GRAPH, function, edit)


def _cond_edited(edit: Callable[[t3_host.TurboCond], t3_host.TurboCond]):
    return wrapped(t3_host, "cond_rows", lambda original: lambda a, c: original(a, edit(c)))


def _sampling(**changes: Any):
    def make(original):
        return lambda self: dataclasses.replace(original(self), **changes)

    return wrapped(pipeline.SpeakOptions, "sampling", make)


def _no_start_token_penalty():
    """Draw 0's repetition penalty sees no history (the publisher's `input_ids` hold the
    start-of-speech token there)."""

    def make(original):
        return lambda step, drawn: original(step, drawn) if step else np.zeros(0, np.int64)

    return wrapped(t3_host, "penalty_history", make)


# ----------------------------------------------------------------------- text and voice


def _no_punc_norm():
    return lambda: patched(text_mod, "punc_norm", lambda text: text)


def _voice_file_mel_late():
    """The voice writer stores the S3Gen prompt mel one frame late (rolled along time)."""

    def make(original):
        def faulty(self, path):
            late = dataclasses.replace(self, prompt_feat=np.roll(self.prompt_feat, 1, axis=1))
            return original(late, path)

        return faulty

    return wrapped(voice_mod.TurboVoice, "save", make)


# ------------------------------------------------------------------------ mean flow (host)


def _estimator_times(edit: Callable[[dict], dict]):
    return _feed_edited(flow_host, "_mean_flow_euler", flow_graphs.ESTIMATOR_GRAPH, "", edit)


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
        _t3_feed("decode", _plus_one("position")),
    ),
    Mutant(
        "t3-prefill-length-short",
        "the prefill's length (its logit row) one row short",
        _t3_feed("prefill", _plus_one("length", -1)),
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
    Mutant(
        "voice-file-mel-one-frame-late",
        "the voice file stores the S3Gen prompt mel one frame late",
        _voice_file_mel_late(),
    ),
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
    Mutant("istft-hop", "iSTFT hop 5 instead of 4", faults.istft(hop_delta=1)),
    Mutant("istft-phase-sign", "iSTFT of exp(-i phase)", faults.istft(conjugate=True)),
    Mutant(
        "source-phase-fp16",
        "the harmonic source's running phase summed in float16",
        faults.fp16_running_phase(),
    ),
    Mutant(
        "t3-prefill-no-positions",
        "the T3 graph's prefill adds no GPT-2 learned positions",
        _no_prefill_positions(),
        graph=t3_graphs.GRAPH,
    ),
    Mutant(
        "estimator-ignores-r",
        "the mean-flow estimator graph ignores r (zeroed)",
        faults.graph_input_zeroed(flow_graphs.FlowEstimator, "r"),
        graph=flow_graphs.ESTIMATOR_GRAPH,
    ),
    Mutant(
        "estimator-ignores-spks",
        "the mean-flow estimator graph ignores the speaker embedding",
        faults.graph_input_zeroed(flow_graphs.FlowEstimator, "spks"),
        graph=flow_graphs.ESTIMATOR_GRAPH,
    ),
    Mutant(
        "encoder-ignores-tokens",
        "the flow encoder graph ignores its speech tokens (all id 0)",
        faults.graph_input_zeroed(flow_graphs.FlowEncoder, "tokens"),
        graph=flow_graphs.ENCODER_GRAPH,
    ),
    Mutant(
        "hift-trunk-ignores-mel",
        "the HiFT trunk graph ignores its mel (zeroed)",
        faults.graph_input_zeroed(hift_graphs.Trunk, "mel"),
        graph=hift_graphs.TRUNK_GRAPH,
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


def mutant_bundle(setup: Any, graph: str, dest: Path) -> Path:
    """A copy of the baseline bundle with `graph` re-exported (as the port's torch code now
    is) at its smallest bucket."""
    from .export import ASSET_INFO, _spec

    field = _BUCKETS[graph]
    sizes = dataclasses.replace(setup.sizes, **{field: (min(getattr(setup.sizes, field)),)})
    spec = _spec(setup.model, sizes, graph)
    return bundle_with_graph(setup.bundle, spec, sizes.to_json(), dest, ASSET_INFO)


def run_mutants(run: Any, first_kill: bool = False) -> KillTable:
    """The faults `run.mutants` names (the whole catalogue when None) against the gate's
    ladder at `run.seed`: the oracle recorded once, the baseline bundle opened once for every
    host fault. With `first_kill` each fault's ladder stops at its first failing rung."""
    from .gate.ladder import main_rungs, prepare
    from .pipeline import TurboPipeline

    names = ",".join(m.name for m in run.mutants) if run.mutants else "all"
    mutants = select(CATALOGUE, names)
    setup = prepare(run.model, run.config, run.source, run.seed, side=False)

    def ladder(pipeline: Any, whole: bool) -> LadderReport:
        rungs, _ = main_rungs(pipeline, setup)
        if whole or not first_kill:
            return run_ladder("chatterbox_turbo", rungs, progress=False)
        return first_kill_ladder("chatterbox_turbo", rungs, _CHEAP_FIRST)

    with TurboPipeline(setup.bundle, isolate=True) as baseline:

        def evaluate(mutant: Mutant | None) -> LadderReport:
            if mutant is None:
                return ladder(baseline, whole=True)
            if mutant.graph is None:
                with mutant.inject():
                    return ladder(baseline, whole=False)
            with tempfile.TemporaryDirectory(prefix="voxport-turbo-mutant-") as tmp:
                with mutant.inject():
                    path = mutant_bundle(setup, mutant.graph, Path(tmp) / "bundle")
                with TurboPipeline(path, isolate=True) as pipeline:
                    return ladder(pipeline, whole=False)

        def progress(i: int, n: int, mutant: Mutant) -> None:
            print(
                f"chatterbox_turbo mutants: [{i}/{n}] {mutant.name} ({mutant.where})",
                file=sys.stderr,
            )

        return run_catalogue("chatterbox_turbo", mutants, evaluate, on_mutant=progress)
