"""T3's rungs: the bundle's T3 teacher-forced along the oracle's tokens (its logits, and the
draws its logits give with the oracle's uniforms), voxport's sampler on the oracle's logits
against the distribution the publisher's processors gave (`sampler_rung`), and T3
free-running on the oracle's uniforms (the same tokens and the same stop).

Turbo's T3 is one row (no CFG) and samples Temperature -> TopK -> TopP -> RepetitionPenalty,
the penalty last, over the start token at draw 0 and the drawn tokens after
(`..sampling`, `..t3.host.penalty_history`).
"""

from __future__ import annotations

import numpy as np

from conversion.core.host.sampling import gumbel_argmax, process_logits
from conversion.s3gen import gate_t3
from conversion.s3gen.gate_rungs import min_row_cosine
from gates.ladder import Measured, Rung
from oracles import Fixture

from ..pipeline import SpeakOptions, TurboPipeline
from ..t3 import host as host_t3
from ..t3.graphs import STOP_SPEECH
from .case import Case, oracle_tokens

# fp32 T3 logits (teacher-forced and e2e) vs the oracle's: Chatterbox's six nines (a KV row or
# a prefill row one off scores above 0.9999); measured 1 - 7e-14 or closer (reduced, weights
# seeds 0/1, seeds 0/1/2)
COS_T3 = 0.999999
# int8 T3's teacher-forced logits vs the oracle's fp32: Chatterbox's bar; measured 0.999973
# worst (reduced, weights seeds 0/1, seeds 0/1/2)
COS_T3_INT8 = 0.999
# int8 T3: per-step draws from int8 logits vs the oracle's, with the oracle's uniforms:
# Chatterbox's bar; measured 25/27 = 0.926 worst (same runs): rounding flips close races
INT8_AGREEMENT = 0.9
# voxport's processed distribution on the oracle's logits vs the publisher's (transformers'
# processors, float32 softmax): max abs per step. Measured <= 7.8e-8 (reduced, weights seeds 0/1,
# seeds 0/1/2); the penalty run first (before top-k / top-p) moved it 0.048
MAX_ABS_PROBS = 1e-5
# the host's prefill rows (spkr_enc(speaker), prompt and text embeddings, start row) vs the
# publisher's `inputs_embeds`, max abs: float32 table lookups and one 256-long dot product per
# speaker value. A zero speaker embedding moves the speaker row ~0.1 on the calibrated random
# weights, where it moves the fp32 logits only 1e-9 in cosine (spkr_enc is a fresh Linear)
MAX_ABS_PREFILL = 1e-5


def _processed(row: np.ndarray, step: int, drawn, options: SpeakOptions) -> np.ndarray:
    """voxport's scores for draw `step`: `inference_turbo`'s processors as the host runs them
    (its sampling config and penalty history), no candidate bound."""
    history = host_t3.penalty_history(step, drawn)
    return process_logits(row, options.sampling(), history, candidates=None)


def _teacher_forced_draws(fx: Fixture, logits: np.ndarray) -> Measured:
    """Draws from the bundle's logits with the oracle's uniforms and history, vs the oracle."""
    options = SpeakOptions()
    tokens = oracle_tokens(fx)
    uniforms = fx.draws["t3_uniforms/0"]

    def draw(step: int) -> int:
        scores = _processed(logits[step], step, [int(t) for t in tokens[:step]], options)
        return gumbel_argmax(scores, uniforms[step])

    return gate_t3.draw_agreement(tokens, min(len(tokens), len(logits)), draw)


def t3_rungs(pipeline: TurboPipeline, case: Case, tag: str, cos_min: float | None) -> list[Rung]:
    fx = case.fixture
    memo: dict[str, np.ndarray] = {}

    def forced() -> np.ndarray:
        if "logits" not in memo:
            r = pipeline.t3(
                case.chunk.ids, case.voice, SpeakOptions(), forced_tokens=oracle_tokens(fx)
            )
            memo["logits"] = r.logits
        return memo["logits"]

    def logits_cos() -> Measured:
        got, ref = forced(), fx.intermediates["t3_logits"]
        if got.shape != ref.shape:
            return Measured(0.0, f"{got.shape[0]} steps vs the oracle's {ref.shape[0]}")
        return Measured(min_row_cosine(ref, got), f"{ref.shape[0]} steps")

    def draws() -> Measured:
        return _teacher_forced_draws(fx, forced())

    draws_min = 1.0 if tag == "fp32" else INT8_AGREEMENT
    return gate_t3.forced_rungs(tag, cos_min, logits_cos, draws, draws_min)


def prefill_rows_rung(pipeline: TurboPipeline, case: Case) -> Rung:
    """The host's T3 prefill rows (`t3.host.prefill_embeds` over the bundle's tables, the
    voice the bundle gets, the oracle's text ids) against the publisher's `inputs_embeds` at
    its prefill: every row, speaker row first. No graph runs."""
    fx = case.fixture

    def rows():
        ids = fx.inputs["text_tokens"].reshape(-1)
        got = host_t3.prefill_embeds(pipeline.arrays["t3"], case.voice.t3_cond(), ids)
        return fx.intermediates["t3_prefill_embeds"], got

    return Rung(f"t3.prefill_rows[{case.name}]", "max_abs", MAX_ABS_PREFILL, rows)


def sampler_rung(fx: Fixture, probe: str = "") -> Rung:
    """voxport's sampler (core `process_logits` in Turbo's order, the host's penalty history)
    on the oracle's raw logits vs the distribution the publisher's processors gave each draw
    (`t3_probs`, recorded at its `torch.multinomial`): the worst absolute difference. No graph
    runs: a fault in the order or the history shows here, apart from the bundle. `probe` names
    a run of the oracle made to put a token in play (`ladder.start_token_probe`)."""

    def worst() -> Measured:
        options = SpeakOptions()
        tokens = oracle_tokens(fx)
        logits, probs = fx.intermediates["t3_logits"], fx.intermediates["t3_probs"]
        gap, at = 0.0, 0
        for step in range(len(probs)):
            scores = _processed(logits[step], step, [int(t) for t in tokens[:step]], options)
            e = np.exp(scores.astype(np.float64) - scores.max())
            d = float(np.abs(e / e.sum() - probs[step]).max())
            gap, at = (d, step) if d > gap else (gap, at)
        return Measured(gap, f"{len(probs)} draws; worst at draw {at}")

    name = f"t3.sampler_probs[{probe}]" if probe else "t3.sampler_probs"
    return Rung(name, "max_abs", MAX_ABS_PROBS, worst, False)


def free_run_rung(pipeline: TurboPipeline, case: Case) -> Rung:
    """T3 drawing on the oracle's uniforms: the same tokens, and the same stop (the oracle's
    tokens keep the stop it drew; the port's get it back when it stopped)."""
    return gate_t3.free_run_rung(
        pipeline,
        case,
        int(case.fixture.meta["max_gen_len"]) + 1,  # inference_turbo draws up to max_gen_len + 1
        lambda draws: SpeakOptions(max_new_tokens=draws),
        STOP_SPEECH,
        say_stop=True,
    )
