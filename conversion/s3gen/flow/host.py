"""The host side of S3Gen's flow: speaker projection, bucket padding and the CFM Euler loop.

    xvector [1,192] ──speaker_projection──▶ spks [1,80]
    prompt tokens + speech tokens ──pad──▶ flow_encoder ─▶ mu (real region [1,80,2n])
    noise z [1,80,2n], mu, cond (prompt mel, zero after it), spks
        ──pad to a frame bucket, mask = 1 on the real frames──▶
        for each step of the cosine schedule: flow_estimator on the CFG batch
        [cond row; uncond row with mu, spks and cond zeroed] ─▶ v = (1+r)·v_cond − r·v_uncond,
        x += dt·v
        (mean-flow, Chatterbox Turbo: the linear schedule, flow_estimator on the cond row
        alone with the step's end time r, x += (r − t)·v; no CFG)
    x ──trim, drop the prompt frames──▶ mel [1,80,2·speech tokens]

This is the publisher's `CausalMaskedDiffWithXvec.inference` + `CausalConditionalCFM.forward`
+ `ConditionalCFM.solve_euler` (non-meanflow) or `CausalConditionalCFM.basic_euler` (meanflow),
with the noise `z` an input instead of `torch.randn_like(mu)` (mean-flow: the caller puts the
publisher's `noised_mels` after the prompt frames) and the graphs run through a `Session`.
Arithmetic stays in float32 as the publisher's; the schedule is computed in float64 and rounded
to float32 (within an ulp of torch's float32 linspace/cos).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from conversion.core.errors import BucketOverflowError, InputSpecError
from conversion.core.host.buckets import Bucket, BucketTable, length_mask, pad_to

from ..sizes import S3GenBuckets
from .graphs import (
    ENCODER_FUNCTION,
    ENCODER_GRAPH,
    ESTIMATOR_FUNCTION,
    ESTIMATOR_GRAPH,
    MEL_CHANNELS,
    encoder_buckets,
    estimator_buckets,
    flow_of,
    function_name,
)


def flow_host_arrays(model: Any) -> dict[str, np.ndarray]:
    """What the host needs besides the graphs: the x-vector affine layer and the CFM settings
    (`meanflow` = 1 only for a mean-flow decoder, so a CFG model's tables are as they were)."""
    flow = flow_of(model)
    cfm = flow.decoder
    affine = flow.spk_embed_affine_layer
    arrays = {
        "spk_embed_affine_weight": affine.weight.detach().float().numpy().copy(),  # [80, 192]
        "spk_embed_affine_bias": affine.bias.detach().float().numpy().copy(),  # [80]
        "inference_cfg_rate": np.float32(cfm.inference_cfg_rate),
        "t_scheduler_cosine": np.int32(cfm.t_scheduler == "cosine"),
        "vocab_size": np.int32(flow.vocab_size),
        "token_mel_ratio": np.int32(flow.token_mel_ratio),
        "pre_lookahead_len": np.int32(flow.pre_lookahead_len),
    }
    if getattr(cfm.estimator, "meanflow", False):
        arrays["meanflow"] = np.int32(1)
    return arrays


def speaker_projection(arrays: dict[str, np.ndarray], xvector: np.ndarray) -> np.ndarray:
    """`spk_embed_affine_layer(F.normalize(xvector, dim=1))`: [1,192] -> [1,80] float32."""
    x = np.atleast_2d(np.asarray(xvector, dtype=np.float32)).astype(np.float64)
    norm = np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    w = arrays["spk_embed_affine_weight"].astype(np.float64)
    b = arrays["spk_embed_affine_bias"].astype(np.float64)
    return ((x / norm) @ w.T + b).astype(np.float32)


def t_schedule(n_steps: int, cosine: bool = True) -> np.ndarray:
    """The n_steps + 1 times: linspace(0, 1), through 1 − cos(t·π/2) for the cosine schedule."""
    if n_steps < 1:
        raise InputSpecError(f"n_steps = {n_steps}: the Euler loop needs at least one step")
    t = np.linspace(0.0, 1.0, n_steps + 1, dtype=np.float64)
    if cosine:
        t = 1.0 - np.cos(t * 0.5 * np.pi)
    return t.astype(np.float32)


@dataclass
class FlowResult:
    mu: np.ndarray  # [1,80,total] encoder output, real region (prompt + generated frames)
    xs: list[np.ndarray]  # n_steps + 1 states [1,80,total]: xs[0] = noise, xs[-1] = final
    velocities: list[np.ndarray]  # per step, the CFG pair [2,80,total] (mean-flow: [1,80,total])
    mel: np.ndarray  # [1,80,generated] the final state after the prompt frames
    prompt_frames: int
    encoder_function: str
    estimator_function: str
    t_span: np.ndarray
    seconds: dict[str, float] = field(default_factory=dict)


def _table_from_manifest(session: Any, graph: str) -> BucketTable:
    fns = session.manifest.graphs[graph]["functions"]
    return BucketTable(io["bucket"] for io in fns.values())


def _tables(session: Any, config: S3GenBuckets | None) -> tuple[BucketTable, BucketTable]:
    if config is not None:
        return encoder_buckets(config), estimator_buckets(config)
    return (
        _table_from_manifest(session, ENCODER_GRAPH),
        _table_from_manifest(session, ESTIMATOR_GRAPH),
    )


def _select(table: BucketTable, what: str, detail: str, **needs: int) -> Bucket:
    try:
        return table.select(**needs)
    except BucketOverflowError as err:
        (dim, n), limit = next(iter(needs.items())), table.limits()
        raise BucketOverflowError(
            f"{what}: {n} {detail} exceed the largest bucket ({dim} = {limit[dim]}; buckets "
            f"{[b[dim] for b in table]}): split the speech tokens into shorter chunks"
        ) from err


def _tokens_1d(tokens: Any, name: str, vocab: int) -> np.ndarray:
    arr = np.asarray(tokens.detach().cpu() if hasattr(tokens, "detach") else tokens)
    arr = arr.reshape(-1).astype(np.int64)
    bad = arr[(arr < 0) | (arr >= vocab)]
    if bad.size:
        raise InputSpecError(
            f"{name}: ids {sorted(set(bad.tolist()))[:8]} are outside the speech vocabulary "
            f"[0, {vocab}): drop special tokens before the flow (the publisher's "
            "drop_invalid_tokens)"
        )
    return arr


def _prompt_mel(prompt_feat: np.ndarray, total: int) -> np.ndarray:
    """The reference mel as [1, Tp2, 80] float32, checked against the `total` frames."""
    feat = np.asarray(prompt_feat, dtype=np.float32)
    if feat.ndim == 2:
        feat = feat[None]
    if feat.shape[0] != 1 or feat.shape[2] != MEL_CHANNELS or feat.shape[1] > total:
        raise InputSpecError(
            f"prompt_feat: shape {list(feat.shape)}, want [1, frames <= {total}, {MEL_CHANNELS}]"
        )
    return feat


def _noise_state(noise: np.ndarray, total: int) -> np.ndarray:
    """The initial state z as [1, 80, total] float32."""
    z = np.asarray(noise, dtype=np.float32).reshape(1, MEL_CHANNELS, -1)
    if z.shape[2] != total:
        raise InputSpecError(f"noise: {z.shape[2]} frames, want {total} ([1, 80, {total}])")
    return z


def _encode(session: Any, fn: str, tokens: np.ndarray, bucket_n: int, total: int) -> np.ndarray:
    """The flow encoder on the padded tokens: mu [1, 80, total], the real region."""
    out = session.run(
        ENCODER_GRAPH,
        fn,
        {
            "tokens": pad_to(tokens.astype(np.int32), bucket_n)[None],
            "length": np.array([tokens.size], dtype=np.int32),
        },
    )
    return np.asarray(out["mu"], dtype=np.float32)[:, :, :total]


def _cfg_inputs(
    arrays: dict[str, np.ndarray],
    mu: np.ndarray,
    feat: np.ndarray,
    xvector: np.ndarray,
    frames: int,
) -> dict[str, np.ndarray]:
    """The estimator's per-step constants for the CFG batch, padded to the `frames` bucket:
    mask (1 on the real frames, both rows), mu, spks and cond (the prompt mel, zero after it),
    each with a zeroed uncond row."""
    total = mu.shape[2]
    spks = speaker_projection(arrays, xvector)
    cond = np.zeros((1, MEL_CHANNELS, total), np.float32)
    cond[:, :, : feat.shape[1]] = feat.transpose(0, 2, 1)
    zeros = np.zeros((1, MEL_CHANNELS, frames), np.float32)
    return {
        "mask": np.broadcast_to(length_mask(total, frames), (2, 1, frames)).copy(),
        "mu": np.concatenate([pad_to(mu, frames), zeros]),
        "spks": np.concatenate([spks, np.zeros_like(spks)]),
        "cond": np.concatenate([pad_to(cond, frames), zeros]),
    }


def _euler(
    session: Any,
    fn: str,
    cfg_inputs: dict[str, np.ndarray],
    z: np.ndarray,
    t_span: np.ndarray,
    rate: np.float32,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """`solve_euler` on the CFG batch: per step v = (1+r)·v_cond − r·v_uncond, x += dt·v.

    Returns the states (z first) and the estimator's velocity pairs, trimmed to z's frames.
    """
    total, frames = z.shape[2], cfg_inputs["mask"].shape[2]  # real frames, the bucket's
    x = pad_to(z, frames)
    xs, velocities = [z.copy()], []
    for t, r in zip(t_span[:-1], t_span[1:], strict=True):
        out = session.run(
            ESTIMATOR_GRAPH,
            fn,
            {
                "x": np.concatenate([x, x]),
                "mask": cfg_inputs["mask"],
                "mu": cfg_inputs["mu"],
                "t": np.full(2, t, np.float32),
                "spks": cfg_inputs["spks"],
                "cond": cfg_inputs["cond"],
            },
        )
        v = np.asarray(out["velocity"], dtype=np.float32)
        velocities.append(v[:, :, :total].copy())
        dxdt = (np.float32(1.0) + rate) * v[:1] - rate * v[1:]
        x = x + np.float32(r - t) * dxdt
        xs.append(x[:, :, :total].copy())
    return xs, velocities


def _mean_flow_euler(
    session: Any,
    fn: str,
    inputs: dict[str, np.ndarray],
    z: np.ndarray,
    t_span: np.ndarray,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """`basic_euler` on one row: per step v = estimator(x, t, r), x += (r − t)·v.

    `inputs` are `_cfg_inputs`' cond rows. Returns the states (z first) and the velocities,
    trimmed to z's frames.
    """
    total, frames = z.shape[2], inputs["mask"].shape[2]
    x = pad_to(z, frames)
    xs, velocities = [z.copy()], []
    for t, r in zip(t_span[:-1], t_span[1:], strict=True):
        times = {"t": np.full(1, t, np.float32), "r": np.full(1, r, np.float32)}
        out = session.run(ESTIMATOR_GRAPH, fn, {"x": x, **inputs, **times})
        v = np.asarray(out["velocity"], dtype=np.float32)
        velocities.append(v[:, :, :total].copy())
        x = x + np.float32(r - t) * v
        xs.append(x[:, :, :total].copy())
    return xs, velocities


def solve_cfm(
    session: Any,
    arrays: dict[str, np.ndarray],
    fn: str,
    inputs: dict[str, np.ndarray],
    z: np.ndarray,
    n_steps: int,
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """The schedule and the loop the publisher's CFM runs: mean-flow (linear, one row) or
    CFG Euler (its `t_scheduler`, the CFG pair at its `inference_cfg_rate`)."""
    if int(arrays.get("meanflow", 0)):
        t_span = t_schedule(n_steps, False)  # the publisher's meanflow: never cosine
        rows = {k: v[:1] for k, v in inputs.items()}
        return t_span, *_mean_flow_euler(session, fn, rows, z, t_span)
    rate = np.float32(arrays["inference_cfg_rate"])
    t_span = t_schedule(n_steps, bool(arrays["t_scheduler_cosine"]))
    return t_span, *_euler(session, fn, inputs, z, t_span, rate)


def flow_inference(
    session: Any,
    arrays: dict[str, np.ndarray],
    prompt_tokens: Any,
    prompt_feat: np.ndarray,
    xvector: np.ndarray,
    speech_tokens: Any,
    noise: np.ndarray,
    n_steps: int = 10,
    config: S3GenBuckets | None = None,
    finalize: bool = True,
) -> FlowResult:
    """Speech tokens -> mel through the two flow graphs, the Euler loop on the host.

    `prompt_feat` [1,Tp2,80] is the reference mel (the publisher's `prompt_feat`), `noise` the
    initial state z [1,80,total] with total = 2·(prompt + speech tokens) (minus the lookahead
    frames when not `finalize`). Buckets come from `config`, or from the session's manifest.
    The loop is the one `arrays` names: CFG Euler, or mean-flow (`arrays["meanflow"]`; the
    publisher's Turbo runs it in 2 steps).
    """
    enc_table, est_table = _tables(session, config)
    vocab = int(arrays["vocab_size"])
    ratio = int(arrays["token_mel_ratio"])
    prompt = _tokens_1d(prompt_tokens, "prompt_tokens", vocab)
    speech = _tokens_1d(speech_tokens, "speech_tokens", vocab)
    tokens = np.concatenate([prompt, speech])
    n = tokens.size
    detail = f"tokens (prompt {prompt.size} + speech {speech.size})"
    enc_bucket = _select(enc_table, "flow encoder", detail, N=n)
    total = ratio * n - (0 if finalize else ratio * int(arrays["pre_lookahead_len"]))
    est_bucket = _select(est_table, "flow estimator", f"mel frames ({n} tokens x {ratio})", F=total)
    feat = _prompt_mel(prompt_feat, total)
    z = _noise_state(noise, total)

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    enc_fn = function_name(ENCODER_FUNCTION, enc_bucket)
    mu = _encode(session, enc_fn, tokens, enc_bucket["N"], total)
    seconds["encoder"] = time.perf_counter() - start

    cfg_inputs = _cfg_inputs(arrays, mu, feat, xvector, est_bucket["F"])
    est_fn = function_name(ESTIMATOR_FUNCTION, est_bucket)
    start = time.perf_counter()
    t_span, xs, velocities = solve_cfm(session, arrays, est_fn, cfg_inputs, z, n_steps)
    seconds["estimator"] = time.perf_counter() - start
    prompt_frames = feat.shape[1]
    return FlowResult(
        mu=mu,
        xs=xs,
        velocities=velocities,
        mel=xs[-1][:, :, prompt_frames:],
        prompt_frames=prompt_frames,
        encoder_function=enc_fn,
        estimator_function=est_fn,
        t_span=t_span,
        seconds=seconds,
    )


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.ravel(a).astype(np.float64)
    b = np.ravel(b).astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))
