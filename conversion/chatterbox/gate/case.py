"""One gate case (the oracle's recorded fixture, the voice the bundle gets, voxport's text
chunk) and the oracle's tokens every stage's rungs read (the row cosines they compare with are
`conversion.s3gen.gate_rungs`', shared with Turbo's gate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from oracles import Fixture

from ..text import TextChunk
from ..voice import Voice


@dataclass
class Case:
    name: str
    fixture: Fixture
    voice: Voice
    chunk: TextChunk | None  # voxport's text path (`text_chunk`), filled once the bundle exists
    # cloned: the publisher's conditionals, computed in memory by its prepare_conditionals
    publisher: dict[str, np.ndarray] | None = None
    # cloned: voxport's voice file made afresh from the same reference and read back
    # (`ladder.make_case`), so `voice_rung` compares a side a fault in the writer or the reader
    # moves; `voice` is one such file made when the case was
    clone: Callable[[], Voice] | None = None


def _speech_tokens(fx: Fixture) -> np.ndarray:
    """The tokens the oracle handed S3Gen (its T3 tokens after drop_invalid_tokens)."""
    return fx.intermediates["speech_tokens"].reshape(-1)


def _oracle_tokens(fx: Fixture) -> np.ndarray:
    return fx.intermediates["t3_tokens"].reshape(-1)
