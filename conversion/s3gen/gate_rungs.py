"""The S3Gen rungs Chatterbox's and Chatterbox Turbo's gates share: the flow encoder's mu, the
estimator's velocity at each recorded step (the CFG pair, or one row with `r` for a mean-flow
graph: its meta's `meanflow`), and HiFT's wav from the oracle's mel and source draws; and the
row cosines both gates compare with.

`pipeline` is either model's loaded pipeline: its `session` (the bundle's graphs) and its
`vocode(mel, draws)`. `it` is the oracle's recorded intermediates (`oracles.Fixture`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from conversion.core.host.buckets import BucketTable, length_mask, pad_to
from gates.ladder import Rung

from .flow.graphs import (
    ENCODER_FUNCTION,
    ENCODER_GRAPH,
    ESTIMATOR_FUNCTION,
    ESTIMATOR_GRAPH,
    function_name,
)

COS_MU = 0.999
COS_ESTIMATOR = {"fp32": 0.9999, "fp16": 0.999}
MAGSPEC_HIFT = 0.999
# HiFT's wav sample by sample (the oracle's draws replayed), full scale 0.99: the port's float
# error measured 1.1e-3, 2.3e-3, 2.8e-3 (Chatterbox reduced, weights seed 0, seeds 0/1/2: exp()
# of log-magnitudes up to a few nats amplifies it; Turbo reduced, weights seeds 0/1, seeds
# 0/1/2: 1.2e-3 worst); a source STFT padded by replication instead of reflection moved 0.12
MAX_ABS_HIFT = 1e-2


def min_row_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The worst cosine over the first axis' rows (each row flattened), in float64."""
    a = a.reshape(a.shape[0], -1).astype(np.float64)
    b = b.reshape(b.shape[0], -1).astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float((num / np.maximum(den, 1e-30)).min())


def cos(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of two arrays, each flattened."""
    return min_row_cosine(np.asarray(a)[None], np.asarray(b)[None])


def encoder_mu_rung(pipeline: Any, it: dict[str, np.ndarray], ref_key: str) -> Rung:
    """The bundle's flow encoder on the oracle's tokens (prompt + speech, `flow_tokens`) vs the
    oracle's mu (`ref_key`: what its estimator was fed), on the real frames."""

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
        ref = it[ref_key]
        return ref, out["mu"][:, :, : ref.shape[-1]]

    return Rung("flow_encoder.mu", "cosine", COS_MU, encoder_mu)


def estimator_worst_cosine(pipeline: Any, it: dict[str, np.ndarray], steps: Iterable[int]) -> float:
    """The bundle's estimator on the oracle's inputs at the recorded `steps`: the worst row
    cosine of its velocity. A mean-flow graph (meta `meanflow`) takes one row and the step's
    end time `r` (`cfm_r`); a CFG graph the cond/uncond pair."""
    total = it["cfm_x"].shape[-1]
    graph = pipeline.session.manifest.graphs[ESTIMATOR_GRAPH]
    meanflow = bool(graph["meta"].get("meanflow", False))
    rows = 1 if meanflow else 2
    table = BucketTable(graph["meta"]["buckets"])
    bucket = table.select(F=total)  # BucketOverflowError names the sizes
    size = bucket["F"]
    fn = function_name(ESTIMATOR_FUNCTION, bucket)
    mask = np.broadcast_to(length_mask(total, size), (rows, 1, size)).copy()
    worst = 1.0
    for k in steps:
        feed = {
            "x": pad_to(it["cfm_x"][k], size),
            "mask": mask,
            "mu": pad_to(it["cfm_mu_in"], size),
            "t": it["cfm_t"][k].reshape(rows).astype(np.float32),
            "spks": it["cfm_spks_in"],
            "cond": pad_to(it["cfm_cond_in"], size),
        }
        if meanflow:
            feed["r"] = it["cfm_r"][k].reshape(rows).astype(np.float32)
        out = pipeline.session.run(ESTIMATOR_GRAPH, fn, feed)
        worst = min(worst, min_row_cosine(it["cfm_velocity"][k], out["velocity"][..., :total]))
    return worst


def estimator_rung(pipeline: Any, it: dict[str, np.ndarray]) -> Rung:
    """The fp32 estimator at every recorded step (`estimator_worst_cosine`)."""
    return Rung(
        "flow_estimator.velocity",
        "min_step_cosine",
        COS_ESTIMATOR["fp32"],
        lambda: estimator_worst_cosine(pipeline, it, range(len(it["cfm_x"]))),
        True,
    )


def hift_rungs(pipeline: Any, fixture: Any, max_abs: float = MAX_ABS_HIFT) -> list[Rung]:
    """The vocoder on the oracle's mel and source draws: its magnitude spectrogram, and every
    sample (the draws are replayed, so the port is sample-accurate: an edge fault such as the
    source STFT's padding moves the first and last samples and hardly the spectrogram).
    `max_abs` is the model's sample bar (its calibrated vocoder's measured error sets it)."""
    from .hift.host import draws_from_recording

    fx = fixture
    memo: dict[str, np.ndarray] = {}

    def wav():
        if "wav" not in memo:
            memo["wav"] = pipeline.vocode(
                fx.intermediates["mel"], draws_from_recording(fx.draws)
            ).wav
        return fx.intermediates["wav_vocoder"].reshape(-1), memo["wav"]

    return [
        Rung("hift.wav", "magspec_corr", MAGSPEC_HIFT, wav),
        Rung("hift.wav_samples", "max_abs", max_abs, wav),
    ]
