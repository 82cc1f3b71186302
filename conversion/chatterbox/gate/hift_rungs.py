"""HiFT's rungs: the vocoder on the oracle's mel and replayed source draws, against the
publisher's vocoder wav (magnitude spectrogram and every sample): S3Gen's rungs, shared with
Turbo's gate (`conversion.s3gen.gate_rungs.hift_rungs`).
"""

from __future__ import annotations

from conversion.s3gen import gate_rungs
from gates.ladder import Rung

from ..pipeline import ChatterboxPipeline
from .case import Case

MAGSPEC_HIFT = gate_rungs.MAGSPEC_HIFT
MAX_ABS_HIFT = gate_rungs.MAX_ABS_HIFT


def hift_rungs(pipeline: ChatterboxPipeline, case: Case) -> list[Rung]:
    """`conversion.s3gen.gate_rungs.hift_rungs` on the case's recording."""
    return gate_rungs.hift_rungs(pipeline, case.fixture)
