"""The cloned-voice rung: the voice file `voxport voice chatterbox_turbo` writes, read back from
disk, against the publisher's conditionals computed in memory by its own `prepare_conditionals`
(`conversion.s3gen.gate_case`'s comparison, shared with Chatterbox's gate).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conversion.s3gen import gate_case
from conversion.s3gen.gate_case import COS_VOICE, REF_RATE
from gates.ladder import Rung

from ..t3 import host as host_t3
from .case import Case

__all__ = ["COS_VOICE", "REF_RATE", "REF_SECONDS", "publisher_conditionals", "voice_rung"]

REF_SECONDS = 6.0  # prepare_conditionals asserts a reference over 5 s


def publisher_conditionals(model, ref_wav: Path) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `ChatterboxTurboTTS.prepare_conditionals` on
    `ref_wav`, and T3's conditioning as `inference_turbo` makes it."""
    return gate_case.publisher_conditionals(model, ref_wav)


def voice_rung(case: Case, t3_arrays: dict[str, np.ndarray]) -> Rung:
    """The cloned voice as a host reads it vs the publisher's conditionals
    (`gate_case.voice_rung`): T3's conditioning is the host's `cond_rows` over the bundle's
    tables."""
    return gate_case.voice_rung(
        case, lambda voice: host_t3.cond_rows(t3_arrays, voice.t3_cond())[None]
    )
