"""HiFT's rungs: the vocoder on the oracle's mel and replayed source draws, against the
publisher's vocoder wav (magnitude spectrogram and every sample).
"""

from __future__ import annotations

import numpy as np

from gates.ladder import Rung

from ..pipeline import ChatterboxPipeline
from .case import Case

MAGSPEC_HIFT = 0.999
# HiFT's wav sample by sample (the oracle's draws replayed), full scale 0.99: the port's float
# error measured 1.1e-3, 2.3e-3, 2.8e-3 (reduced, weights seed 0, seeds 0/1/2: exp() of
# log-magnitudes up to a few nats amplifies it); a source STFT padded by replication instead
# of reflection moved 0.12
MAX_ABS_HIFT = 1e-2


def hift_rungs(pipeline: ChatterboxPipeline, case: Case) -> list[Rung]:
    """The vocoder on the oracle's mel and source draws: its magnitude spectrogram, and every
    sample (the draws are replayed, so the port is sample-accurate: an edge fault such as the
    source STFT's padding moves the first and last samples and hardly the spectrogram)."""
    from conversion.s3gen.hift.host import draws_from_recording

    fx = case.fixture
    memo: dict[str, np.ndarray] = {}

    def wav():
        if "wav" not in memo:
            memo["wav"] = pipeline.vocode(
                fx.intermediates["mel"], draws_from_recording(fx.draws)
            ).wav
        return fx.intermediates["wav_vocoder"].reshape(-1), memo["wav"]

    return [
        Rung("hift.wav", "magspec_corr", MAGSPEC_HIFT, wav),
        Rung("hift.wav_samples", "max_abs", MAX_ABS_HIFT, wav),
    ]
