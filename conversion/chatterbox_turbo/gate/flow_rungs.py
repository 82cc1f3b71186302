"""S3Gen's flow rungs: the speech tokens T3's draws become (`speech_tokens_for_s3gen`), the
encoder's mu and the mean-flow estimator's velocity at both steps (`conversion.s3gen.gate_rungs`,
shared with Chatterbox's gate: one row, the step's `r` fed), and the host's mean-flow loop's mel
from the oracle's noise.
"""

from __future__ import annotations

import numpy as np

from conversion.s3gen import gate_rungs
from gates.ladder import Measured, Rung

from .. import pipeline as pipeline_mod
from ..pipeline import TurboPipeline
from .case import Case, flow_noise, oracle_tokens, speech_tokens

COS_MEL = 0.999  # Chatterbox's bar for the host loop's mel


def speech_tokens_rung(case: Case) -> Rung:
    """voxport's T3-to-S3Gen step on the oracle's T3 tokens vs the tokens the publisher's
    `generate` handed S3Gen (those below 6561, then three silence tokens): equal, else 0."""
    fx = case.fixture

    def same() -> Measured:
        # looked up through the module when called, so a patched step is the one run
        got = pipeline_mod.speech_tokens_for_s3gen(oracle_tokens(fx))
        want = speech_tokens(fx)
        if got.shape == want.shape and np.array_equal(got, want):
            return Measured(1.0, f"{want.size} tokens equal (the last {want[-3:].tolist()})")
        return Measured(
            0.0, f"{got.size} tokens (last {got[-4:].tolist()}) vs {want.size} ({want[-4:]})"
        )

    return Rung("s3gen.speech_tokens", "equal", 1.0, same, True)


def flow_rungs(pipeline: TurboPipeline, case: Case) -> list[Rung]:
    fx = case.fixture
    it = fx.intermediates

    def flow_mel():
        r = pipeline.flow(speech_tokens(fx), case.voice, flow_noise(fx))
        return it["mel"], r.mel

    return [
        speech_tokens_rung(case),
        gate_rungs.encoder_mu_rung(pipeline, it, "cfm_mu_in"),
        gate_rungs.estimator_rung(pipeline, it),
        Rung("flow.meanflow_mel", "cosine", COS_MEL, flow_mel),
    ]
