"""One gate case: the oracle's recorded fixture, the voice the bundle gets and voxport's text
chunk, and the oracle's arrays every stage's rungs read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oracles import Fixture

from ..text import TextChunk
from ..voice import TurboVoice


@dataclass
class Case:
    name: str
    fixture: Fixture
    voice: TurboVoice
    chunk: TextChunk | None  # voxport's text path (`text_chunk`), filled once the bundle exists
    # cloned: the publisher's conditionals, computed in memory by its prepare_conditionals
    publisher: dict[str, np.ndarray] | None = None
    # cloned: voxport's voice file made afresh from the same reference and read back
    # (`ladder.make_case`), so `voice_rung` compares a side a fault in the writer or the reader
    # moves; `voice` is one such file made when the case was
    clone: Callable[[], TurboVoice] | None = None


def oracle_tokens(fx: Fixture) -> np.ndarray:
    """Every token the publisher's T3 drew, a final stop token included."""
    return fx.intermediates["t3_tokens"].reshape(-1)


def speech_tokens(fx: Fixture) -> np.ndarray:
    """The tokens the oracle handed S3Gen (below 6561, then three S3GEN_SIL)."""
    return fx.intermediates["speech_tokens"].reshape(-1)


def flow_noise(fx: Fixture) -> np.ndarray:
    """The mean-flow loop's start state [1, 80, prompt + generated frames]: the CFM's
    `randn_like` over the prompt frames, the publisher's `noised_mels` after them, as its first
    estimator step was fed."""
    return fx.intermediates["cfm_x"][0]
