"""The cloned-voice rung: the voice file `voxport voice` writes, read back from disk, against
the publisher's conditionals computed in memory by its own `prepare_conditionals`
(`conversion.s3gen.gate_case`'s comparison, shared with Turbo's gate).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conversion.s3gen import gate_case
from conversion.s3gen.gate_case import COS_VOICE, REF_RATE
from gates.ladder import Rung

from .case import Case

__all__ = ["COS_VOICE", "REF_RATE", "REF_SECONDS", "publisher_conditionals", "voice_rung"]

REF_SECONDS = 2.0


def publisher_conditionals(model, ref_wav: Path, exaggeration: float) -> dict[str, np.ndarray]:
    """The publisher's cloning in memory: `ChatterboxTTS.prepare_conditionals` on `ref_wav` at
    `exaggeration` (kept in the dict: the host's `cond_emb` is compared at it)."""
    conds = gate_case.publisher_conditionals(model, ref_wav, exaggeration=exaggeration)
    return {**conds, "exaggeration": np.float32(exaggeration)}


def voice_rung(case: Case) -> Rung:
    """The cloned voice as a host reads it vs the publisher's conditionals
    (`gate_case.voice_rung`): T3's conditioning is the host's `cond_emb` at the publisher's
    exaggeration."""
    return gate_case.voice_rung(
        case, lambda voice: voice.cond_emb(float(case.publisher["exaggeration"]))
    )
