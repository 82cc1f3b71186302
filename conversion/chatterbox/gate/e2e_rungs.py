"""The end-to-end rungs: one `synthesize` call on a case with the oracle's tokens and noise
forced, against the oracle's T3 logits, mel and (unwatermarked) wav.
"""

from __future__ import annotations

from conversion.s3gen.gate_rungs import min_row_cosine as _min_row_cosine
from gates.ladder import Rung

from ..pipeline import ChatterboxPipeline, ChunkDraws, SpeakOptions
from .case import Case, oracle_tokens
from .flow_rungs import COS_MEL
from .t3_rungs import COS_T3

MAGSPEC_E2E = 0.99


def e2e_rungs(pipeline: ChatterboxPipeline, case: Case) -> list[Rung]:
    from conversion.s3gen.hift.host import draws_from_recording

    fx = case.fixture
    memo = {}

    def run():
        if "r" not in memo:
            draws = ChunkDraws(noise=fx.intermediates["z"], hift=draws_from_recording(fx.draws))
            memo["r"] = pipeline.synthesize(
                case.chunk,
                case.voice,
                SpeakOptions(),
                draws=draws,
                forced_tokens=oracle_tokens(fx),
            )
        return memo["r"]

    def mel():
        return fx.intermediates["mel"], run().flow.mel

    def wav():
        return fx.outputs["wav_unwatermarked"].reshape(-1), run().wav

    def logits() -> float:
        # the same run's T3 (the bundle's voice and text ids, the oracle's tokens forced)
        t3 = run().t3
        ref_c, ref_u = fx.intermediates["t3_cond_logits"], fx.intermediates["t3_uncond_logits"]
        if t3.cond_logits.shape != ref_c.shape:
            return 0.0
        return min(_min_row_cosine(ref_c, t3.cond_logits), _min_row_cosine(ref_u, t3.uncond_logits))

    return [
        Rung(f"e2e[{case.name}].t3_logits", "min_step_cosine", COS_T3, logits, True),
        Rung(f"e2e[{case.name}].mel", "cosine", COS_MEL, mel),
        Rung(f"e2e[{case.name}].wav", "magspec_corr", MAGSPEC_E2E, wav),
    ]
