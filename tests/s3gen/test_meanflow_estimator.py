"""The mean-flow CFM estimator (Chatterbox Turbo's S3Gen) against the publisher's own decoder.

The publisher's side is chatterbox-tts 0.1.7 itself: `ConditionalDecoder(meanflow=True)`'s eager
`forward(x, mask, mu, t, spks, cond, r)` at the real length, and `CausalConditionalCFM.basic_euler`
(the 2-step loop `S3Gen(meanflow=True)` runs: linear t, one row, no CFG). Our side is the
exported `flow_estimator` at its smallest bucket through the Core AI runtime, padded past the
real frames, and the host's `solve_cfm` loop over it.

The decoder is reduced (1 down/mid/up block) with seeded random weights, norms and biases
perturbed; its `time_embed_mixer` starts as [I | 0] (it passes t and drops r), so it is perturbed
too: otherwise no comparison could see what the graph does with `r`.
"""

from __future__ import annotations

from dataclasses import dataclass

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch

from conversion.core.bundle import BundleWriter
from conversion.core.runtime.session import Session
from conversion.s3gen.flow.graphs import ESTIMATOR_GRAPH, estimator_graph_spec
from conversion.s3gen.flow.host import cosine, solve_cfm

torch.set_num_threads(1)

FRAMES, REAL = 64, 50  # the one bucket, and the real frames in it


@dataclass(frozen=True)
class Buckets:
    encoder_tokens: tuple[int, ...] = (32,)
    estimator_frames: tuple[int, ...] = (FRAMES,)
    vocoder_frames: tuple[int, ...] = (32,)


@pytest.fixture(scope="module")
def cfm():
    """The publisher's CausalConditionalCFM around a reduced mean-flow decoder."""
    from chatterbox.models.s3gen.configs import CFM_PARAMS
    from chatterbox.models.s3gen.decoder import ConditionalDecoder
    from chatterbox.models.s3gen.flow_matching import CausalConditionalCFM

    torch.manual_seed(0)
    estimator = ConditionalDecoder(
        in_channels=320,
        out_channels=80,
        causal=True,
        channels=[256],
        dropout=0.0,
        attention_head_dim=64,
        n_blocks=1,
        num_mid_blocks=1,
        num_heads=8,
        act_fn="gelu",
        meanflow=True,
    )
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in estimator.named_parameters():
            if p.ndim == 1 and ("norm" in name or name.endswith("bias")):
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
        mixer = estimator.time_embed_mixer.weight
        mixer.add_(0.02 * torch.randn(mixer.shape, generator=gen))
    return CausalConditionalCFM(spk_emb_dim=80, cfm_params=CFM_PARAMS, estimator=estimator).eval()


@pytest.fixture(scope="module")
def session(cfm, tmp_path_factory):
    holder = torch.nn.Module()  # what `flow_of` reads: an object with the CFM as `.decoder`
    holder.decoder = cfm
    dest = tmp_path_factory.mktemp("meanflow") / "bundle"
    with torch.no_grad(), BundleWriter(dest, "s3gen-meanflow-test", overwrite=True) as bw:
        bw.add_graph(estimator_graph_spec(holder, Buckets()))
    with Session(dest) as s:
        yield s


@pytest.fixture(scope="module")
def inputs():
    """One row at the real length: noise, mu, cond (a prompt mel, zero after it), spks."""
    gen = torch.Generator().manual_seed(3)
    cond = torch.zeros(1, 80, REAL)
    cond[:, :, :20] = -6.0 + 2.0 * torch.randn(1, 80, 20, generator=gen)
    return {
        "x": torch.randn(1, 80, REAL, generator=gen),
        "mask": torch.ones(1, 1, REAL),
        "mu": torch.randn(1, 80, REAL, generator=gen),
        "spks": torch.randn(1, 80, generator=gen),
        "cond": cond,
    }


def _padded(inputs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """The bucket's inputs: frames past REAL zero (mask 0 there)."""
    out = {}
    for k, v in inputs.items():
        a = v.numpy()
        if a.ndim == 3:
            a = np.concatenate([a, np.zeros((*a.shape[:2], FRAMES - REAL), np.float32)], axis=2)
        out[k] = a
    return out


def test_graph_matches_publisher_forward(cfm, session, inputs):
    t, r = torch.tensor([0.25]), torch.tensor([0.75])
    with torch.no_grad():
        ref = cfm.estimator.forward(**inputs, t=t, r=r).numpy()
        r_blind = cfm.estimator.forward(**inputs, t=t, r=t).numpy()
    feed = {**_padded(inputs), "t": t.numpy(), "r": r.numpy()}
    v = session.run(ESTIMATOR_GRAPH, f"estimate_F{FRAMES}", feed)["velocity"]
    assert v.shape == (1, 80, FRAMES)
    c = cosine(v[..., :REAL], ref)
    err = float(np.abs(v[..., :REAL] - ref).max())
    reach = float(np.abs(r_blind - ref).max())  # how far r moves the publisher's output
    print(f"mean-flow estimator F{FRAMES}: cos {c:.8f}, max|d| {err:.2e} (r moves it {reach:.2e})")
    assert reach > 100 * 1e-3  # the perturbed mixer makes r visible well above the tolerance
    assert c >= 0.99999
    np.testing.assert_allclose(v[..., :REAL], ref, atol=1e-3)


def test_two_step_loop_matches_basic_euler(cfm, session, inputs):
    t_span = torch.linspace(0, 1, 3)  # S3Gen(meanflow=True): 2 steps, linear
    with torch.no_grad():
        ref = cfm.basic_euler(
            inputs["x"].clone(),
            t_span,
            inputs["mu"],
            inputs["mask"],
            inputs["spks"],
            inputs["cond"],
        ).numpy()
    padded = _padded(inputs)
    z = inputs["x"].numpy()
    rows = {k: padded[k] for k in ("mask", "mu", "spks", "cond")}
    arrays = {"meanflow": np.int32(1)}
    t_ours, xs, velocities = solve_cfm(session, arrays, f"estimate_F{FRAMES}", rows, z, 2)
    np.testing.assert_array_equal(t_ours, t_span.numpy())
    assert len(xs) == 3 and velocities[0].shape == (1, 80, REAL)
    c = cosine(xs[-1], ref)
    err = float(np.abs(xs[-1] - ref).max())
    print(f"mean-flow 2-step loop vs basic_euler: cos {c:.8f}, max|d| {err:.2e}")
    assert c >= 0.99999
    np.testing.assert_allclose(xs[-1], ref, atol=1e-3)
