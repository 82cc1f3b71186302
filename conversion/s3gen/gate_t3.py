"""The T3 measures Chatterbox's and Chatterbox Turbo's gates share: teacher-forced draws against
the oracle's tokens, and T3 free-running on the oracle's uniforms. Each model says how a draw is
made from its logits (CFG pair or one row, its sampler's order) and how its options are built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from conversion.core.host.sampling import U_MAX, U_MIN
from gates.ladder import Measured, Rung

from .gate_case import Case, oracle_tokens


def draw_agreement(tokens: np.ndarray, n: int, draw: Callable[[int], int]) -> Measured:
    """`draw(step)` (the bundle's logits at `step` sampled with the oracle's uniform and
    history) against the oracle's token, for the first `n` steps; the share of the oracle's
    `tokens` drawn alike."""
    misses = []
    for step in range(n):
        drawn = int(draw(step))
        if drawn != int(tokens[step]):
            misses.append(f"step {step}: {drawn} vs {int(tokens[step])}")
    rate = (n - len(misses)) / max(len(tokens), 1)
    note = f"{n - len(misses)}/{len(tokens)} draws agree"
    return Measured(rate, note + (f"; misses: {', '.join(misses[:8])}" if misses else ""))


def forced_rungs(
    tag: str,
    cos_min: float | None,
    logits_cos: Callable[[], Any],
    draws: Callable[[], Measured],
    draws_min: float,
) -> list[Rung]:
    """T3 teacher-forced on the `tag` bundle: `t3[tag].logits` (when `cos_min` is given) and
    `t3[tag].draws`, at least `draws_min` of the draws alike."""
    rungs = []
    if cos_min is not None:
        rungs.append(Rung(f"t3[{tag}].logits", "min_step_cosine", cos_min, logits_cos, True))
    rungs.append(Rung(f"t3[{tag}].draws", "draw_agreement", draws_min, draws, True))
    return rungs


def free_run_rung(
    pipeline: Any,
    case: Case,
    budget: int,
    options: Callable[[int], Any],
    stop_token: int,
    say_stop: bool = False,
) -> Rung:
    """T3 drawing on the oracle's uniforms (`pipeline.t3` with `options(draws)`) within the
    oracle's draw `budget`: the same tokens (the oracle's keep the stop it drew; the port's get
    `stop_token` back when it stopped). `say_stop` adds both sides' stop to the note."""
    fx = case.fixture

    def tokens() -> Measured:
        u = fx.draws["t3_uniforms/0"]
        if fx.meta["stopped_on_eos"] and budget > len(u):
            # the oracle stopped on its own: the port gets the same budget, and fresh uniforms
            # past the oracle's last draw (a port that misses the stop draws on)
            rng = np.random.default_rng(len(u))
            u = np.concatenate(
                [u, rng.random((budget - len(u), u.shape[1]), np.float32).clip(U_MIN, U_MAX)]
            )
        r = pipeline.t3(case.chunk.ids, case.voice, options(len(u)), uniforms=u)
        ref = oracle_tokens(fx)  # the publisher's loop keeps the stop token it drew
        got = np.append(r.tokens, stop_token) if r.stopped else r.tokens
        n = min(ref.size, got.size)
        same = int(np.sum(ref[:n] == got[:n]))
        first = next((i for i in range(n) if ref[i] != got[i]), None)
        note = f"{same}/{ref.size} tokens equal" + (
            f", first difference at step {first}" if first is not None else ""
        )
        if say_stop:
            note += f"; stopped: port {r.stopped}, oracle {bool(fx.meta['stopped_on_eos'])}"
        return Measured(same / max(ref.size, got.size, 1), note)

    return Rung("t3[fp32].free_run", "token_agreement", 1.0, tokens, True)
