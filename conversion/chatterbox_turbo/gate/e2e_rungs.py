"""The end-to-end rungs: one `synthesize` call on a case with the oracle's tokens forced and its
noise and source draws replayed, against the oracle's T3 logits, mel and (unwatermarked) wav.
"""

from __future__ import annotations

from conversion.s3gen.gate_rungs import min_row_cosine
from gates.ladder import Rung

from ..pipeline import ChunkDraws, SpeakOptions, TurboPipeline
from .case import Case, flow_noise, oracle_tokens
from .flow_rungs import COS_MEL
from .t3_rungs import COS_T3

MAGSPEC_E2E = 0.99  # Chatterbox's bar


def e2e_rungs(pipeline: TurboPipeline, case: Case) -> list[Rung]:
    from conversion.s3gen.hift.host import draws_from_recording

    fx = case.fixture
    memo = {}

    def run():
        if "r" not in memo:
            draws = ChunkDraws(noise=flow_noise(fx), hift=draws_from_recording(fx.draws))
            memo["r"] = pipeline.synthesize(
                case.chunk, case.voice, SpeakOptions(), draws=draws, forced_tokens=oracle_tokens(fx)
            )
        return memo["r"]

    def mel():
        return fx.intermediates["mel"], run().flow.mel

    def wav():
        return fx.outputs["wav_unwatermarked"].reshape(-1), run().wav

    def logits() -> float:
        # the same run's T3 (the bundle's voice and text ids, the oracle's tokens forced)
        got, ref = run().t3.logits, fx.intermediates["t3_logits"]
        return 0.0 if got.shape != ref.shape else min_row_cosine(ref, got)

    return [
        Rung(f"e2e[{case.name}].t3_logits", "min_step_cosine", COS_T3, logits, True),
        Rung(f"e2e[{case.name}].mel", "cosine", COS_MEL, mel),
        Rung(f"e2e[{case.name}].wav", "magspec_corr", MAGSPEC_E2E, wav),
    ]
