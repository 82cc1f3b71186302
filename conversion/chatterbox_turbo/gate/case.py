"""One gate case: the oracle's recorded fixture, the voice the bundle gets and voxport's text
chunk, and the oracle's arrays every stage's rungs read (the case and the tokens are
`conversion.s3gen.gate_case`'s, shared with Chatterbox's gate)."""

from __future__ import annotations

import numpy as np

from conversion.s3gen.gate_case import Case, oracle_tokens, speech_tokens
from oracles import Fixture

__all__ = ["Case", "flow_noise", "oracle_tokens", "speech_tokens"]


def flow_noise(fx: Fixture) -> np.ndarray:
    """The mean-flow loop's start state [1, 80, prompt + generated frames]: the CFM's
    `randn_like` over the prompt frames, the publisher's `noised_mels` after them, as its first
    estimator step was fed."""
    return fx.intermediates["cfm_x"][0]
