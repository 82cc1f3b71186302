"""The flow's rungs: the encoder's mu, the CFM estimator's velocity at every Euler step (fp32,
and the fp16 side bundle), the host Euler loop's mel from the oracle's noise, and the
step-count table (the bundle's mel at 10/8/6/4 steps vs the publisher's 10-step mel).
"""

from __future__ import annotations

from conversion.s3gen import gate_rungs
from conversion.s3gen.gate_rungs import cos as _cos
from gates.ladder import Measured, Rung

from ..pipeline import ChatterboxPipeline
from .case import Case, speech_tokens

COS_ESTIMATOR = gate_rungs.COS_ESTIMATOR
COS_MU = gate_rungs.COS_MU
COS_MEL = 0.999
# Euler steps the fp16 estimator rung checks: every step, or only the middle one (CI: the
# Linux runtime emulates fp16 matmuls, ~80 s per reduced F128 call measured on 2 shared cores)
FP16_STEPS = ("all", "mid")


def flow_rungs(pipeline: ChatterboxPipeline, case: Case) -> list[Rung]:
    """The encoder's mu and every Euler step's velocity (`conversion.s3gen.gate_rungs`, shared
    with Turbo's gate), and the host Euler loop's mel from the oracle's noise."""
    fx = case.fixture
    it = fx.intermediates
    voice = case.voice

    def flow_mel():
        r = pipeline.flow(speech_tokens(fx), voice, it["z"])
        return it["mel"], r.mel

    return [
        gate_rungs.encoder_mu_rung(pipeline, it, "mu"),
        gate_rungs.estimator_rung(pipeline, it),
        Rung("flow.euler_mel", "cosine", COS_MEL, flow_mel),
    ]


def _estimator_worst_cosine(pipeline: ChatterboxPipeline, it: dict, steps) -> float:
    """The bundle's estimator on the oracle's inputs at Euler `steps`: the worst cosine."""
    return gate_rungs.estimator_worst_cosine(pipeline, it, steps)


def _fp16_rung(cb16: ChatterboxPipeline, case: Case, which: str = "all") -> Rung:
    """The fp16 estimator on the oracle's inputs at every Euler step (`which="all"`), or at
    the middle one only (`"mid"`: fp16 is emulated slowly on the Linux runtime)."""
    it = case.fixture.intermediates
    n = len(it["cfm_x"])
    steps = range(n) if which == "all" else [n // 2]
    label = "" if which == "all" else f"@step{n // 2}"

    def worst() -> Measured:
        value = _estimator_worst_cosine(cb16, it, steps)
        return Measured(value, f"{len(steps)}/{n} Euler steps")

    return Rung(
        f"flow_estimator[fp16{label}].velocity",
        "min_step_cosine",
        COS_ESTIMATOR["fp16"],
        worst,
        True,
    )


def step_count_table(pipeline: ChatterboxPipeline, case: Case, steps=(10, 8, 6, 4)) -> list[dict]:
    """The bundle's mel with n Euler steps vs the oracle's 10-step mel (the publisher's
    S3Gen), same tokens and noise (the card's step table). Every row is an independent
    bundle run: the 10-step row is the bundle's 10-step flow against the publisher's."""
    fx = case.fixture
    tokens = speech_tokens(fx)
    ref = fx.intermediates["mel"]
    rows = []
    for n in steps:
        mel = pipeline.flow(tokens, case.voice, fx.intermediates["z"], n_steps=n).mel
        rows.append({"steps": n, "mel_cos_vs_10": round(_cos(ref, mel), 6)})
    return rows
