"""Turbo's T3 end to end on the calibrated reduced snapshot: the publisher's `generate` as the
oracle records it (its prefill rows, raw logits and every draw's uniforms) against voxport's
host loop (`t3/host.py`) over the graph exported from the same weights (converter + Core AI
runtime), fed the oracle's uniforms. The two share no code past the weights: the oracle runs
the publisher's `inference_turbo` with transformers' processors; the host builds its rows from
`t3_host_arrays` and samples with core's `process_logits` in `TURBO_ORDER`."""

from __future__ import annotations

import numpy as np
import pytest

from conversion.chatterbox_turbo.config import REDUCED
from conversion.chatterbox_turbo.oracle import record
from conversion.chatterbox_turbo.sampling import turbo_sampling
from conversion.chatterbox_turbo.t3.graphs import t3_graph_spec
from conversion.chatterbox_turbo.t3.host import (
    TurboCond,
    generate,
    prefill_embeds,
    t3_host_arrays,
)
from conversion.core.bundle import BundleWriter
from conversion.core.runtime.session import Session

TEXT = "hello there"
SEED = 1  # the oracle test's seed: the run stops on its own after 30 speech tokens
KV_LENGTH = 128
BUCKETS = (64, 96)
LOGITS_ATOL = 5e-5  # measured 1.1e-5 (graph vs the publisher's eager logits, reduced, seed 1)


@pytest.fixture(scope="module")
def recorded(turbo_model):
    return record(turbo_model, TEXT, seed=SEED)


@pytest.fixture(scope="module")
def session(turbo_model, tmp_path_factory):
    spec = t3_graph_spec(turbo_model.t3, KV_LENGTH, BUCKETS)
    dest = tmp_path_factory.mktemp("turbo-t3") / "bundle"
    with BundleWriter(dest, "chatterbox_turbo", key={"model": "chatterbox_turbo"}) as writer:
        writer.add_graph(spec)
    with Session(dest) as opened:
        yield opened


def _cond(fx) -> TurboCond:
    return TurboCond(fx.inputs["t3_speaker_emb"], fx.inputs["t3_prompt_tokens"])


def test_host_rows_are_the_oracles_prefill(turbo_model, recorded):
    rows = prefill_embeds(
        t3_host_arrays(turbo_model.t3), _cond(recorded), recorded.inputs["text_tokens"]
    )
    oracle = recorded.intermediates["t3_prefill_embeds"]
    assert rows.shape == oracle.shape
    np.testing.assert_allclose(rows, oracle, atol=1e-6, rtol=0)


def test_host_over_the_graph_draws_the_oracles_tokens(turbo_model, recorded, session):
    fx = recorded
    uniforms = fx.draws["t3_uniforms/0"]
    result = generate(
        session,
        t3_host_arrays(turbo_model.t3),
        _cond(fx),
        fx.inputs["text_tokens"],
        turbo_sampling(),
        uniforms,
        max_new_tokens=REDUCED.speech_budget,
        prefill_buckets=BUCKETS,
        kv_length=KV_LENGTH,
    )
    oracle_tokens = fx.intermediates["t3_tokens"][0]
    drawn = np.asarray(result.tokens).reshape(-1)
    print(f"oracle {oracle_tokens.size} draws, host {drawn.size}; stopped {result.stopped}")
    assert result.stopped and fx.meta["stopped_on_eos"]
    # the host's tokens drop the final stop, as inference_turbo returns them
    np.testing.assert_array_equal(drawn, oracle_tokens[: drawn.size])
    assert drawn.size in (oracle_tokens.size, oracle_tokens.size - 1)
    logits = np.asarray(result.logits)[: oracle_tokens.size]
    gap = float(np.abs(logits - fx.intermediates["t3_logits"][: len(logits)]).max())
    print(f"graph logits vs the oracle's: max abs {gap:.2e}")
    assert gap < LOGITS_ATOL
