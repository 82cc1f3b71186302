"""The flow's rungs: the encoder's mu, the CFM estimator's velocity at every Euler step (fp32,
and the fp16 side bundle), the host Euler loop's mel from the oracle's noise, and the
step-count table (the bundle's mel at 10/8/6/4 steps vs the publisher's 10-step mel).
"""

from __future__ import annotations

import numpy as np

from conversion.core.host.buckets import BucketTable, length_mask, pad_to
from conversion.s3gen.flow.graphs import (
    ENCODER_FUNCTION,
    ENCODER_GRAPH,
    ESTIMATOR_FUNCTION,
    ESTIMATOR_GRAPH,
    function_name,
)
from gates.ladder import Measured, Rung

from ..pipeline import ChatterboxPipeline
from .case import Case, _cos, _min_row_cosine, _speech_tokens

COS_ESTIMATOR = {"fp32": 0.9999, "fp16": 0.999}
COS_MU = 0.999
COS_MEL = 0.999
# Euler steps the fp16 estimator rung checks: every step, or only the middle one (CI: the
# Linux runtime emulates fp16 matmuls, ~80 s per reduced F128 call measured on 2 shared cores)
FP16_STEPS = ("all", "mid")


def flow_rungs(pipeline: ChatterboxPipeline, case: Case) -> list[Rung]:
    fx = case.fixture
    it = fx.intermediates
    voice = case.voice

    def encoder_mu():
        tokens = it["flow_tokens"].reshape(-1)
        n = tokens.size
        table = BucketTable(pipeline.session.manifest.graphs[ENCODER_GRAPH]["meta"]["buckets"])
        bucket = table.select(N=n)
        out = pipeline.session.run(
            ENCODER_GRAPH,
            function_name(ENCODER_FUNCTION, bucket),
            {"tokens": pad_to(tokens.astype(np.int32), bucket["N"])[None], "length": np.array([n])},
        )
        ref = it["mu"]
        return ref, out["mu"][:, :, : ref.shape[-1]]

    def estimator_velocity() -> float:
        return _estimator_worst_cosine(pipeline, it, range(len(it["cfm_x"])))

    def flow_mel():
        r = pipeline.flow(_speech_tokens(fx), voice, it["z"])
        return it["mel"], r.mel

    return [
        Rung("flow_encoder.mu", "cosine", COS_MU, encoder_mu),
        Rung(
            "flow_estimator.velocity",
            "min_step_cosine",
            COS_ESTIMATOR["fp32"],
            estimator_velocity,
            True,
        ),
        Rung("flow.euler_mel", "cosine", COS_MEL, flow_mel),
    ]


def _estimator_worst_cosine(pipeline: ChatterboxPipeline, it: dict, steps) -> float:
    """The bundle's estimator on the oracle's inputs at Euler `steps`: the worst cosine."""
    total = it["cfm_x"].shape[-1]
    table = BucketTable(pipeline.session.manifest.graphs[ESTIMATOR_GRAPH]["meta"]["buckets"])
    bucket = table.select(F=total)  # BucketOverflowError names the sizes
    size = bucket["F"]
    fn = function_name(ESTIMATOR_FUNCTION, bucket)
    mask = np.broadcast_to(length_mask(total, size), (2, 1, size)).copy()
    worst = 1.0
    for k in steps:
        out = pipeline.session.run(
            ESTIMATOR_GRAPH,
            fn,
            {
                "x": pad_to(it["cfm_x"][k], size),
                "mask": mask,
                "mu": pad_to(it["cfm_mu_in"], size),
                "t": it["cfm_t"][k].reshape(2).astype(np.float32),
                "spks": it["cfm_spks_in"],
                "cond": pad_to(it["cfm_cond_in"], size),
            },
        )
        worst = min(worst, _min_row_cosine(it["cfm_velocity"][k], out["velocity"][..., :total]))
    return worst


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
    tokens = _speech_tokens(fx)
    ref = fx.intermediates["mel"]
    rows = []
    for n in steps:
        mel = pipeline.flow(tokens, case.voice, fx.intermediates["z"], n_steps=n).mel
        rows.append({"steps": n, "mel_cos_vs_10": round(_cos(ref, mel), 6)})
    return rows
