"""Chatterbox S3Gen flow (conversion/s3gen/flow: graphs.py + host.py) against the publisher's flow.

The reference is chatterbox-tts 0.1.7 itself: `CausalMaskedDiffWithXvec`'s embedding, encoder
and projection with their own masks, `ConditionalDecoder.forward`, and for the whole flow
`S3Token2Wav.flow_inference(..., finalize=True)` with its `torch.randn_like` draw captured and
fed to our host loop as the noise. Our side is the exported graphs through the Core AI runtime.

The model is S3Gen at the reduced configuration (1+4 encoder blocks, 1 down/mid/up estimator
block) with seeded random weights, norms and biases perturbed as `weights.random_snapshot`
does; the voice is synthetic (25 prompt tokens, a 50-frame prompt mel, a random x-vector).
"""

from __future__ import annotations

import dataclasses

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch

from conversion.chatterbox.config import REDUCED, sizes_patched
from conversion.core.bundle import BundleWriter
from conversion.core.errors import BucketOverflowError, InputSpecError
from conversion.core.runtime.session import Session
from conversion.s3gen.flow.graphs import (
    ENCODER_GRAPH,
    ESTIMATOR_GRAPH,
    FlowEstimator,
    encoder_graph_spec,
    estimator_graph_spec,
)
from conversion.s3gen.flow.host import (
    cosine,
    flow_host_arrays,
    flow_inference,
    speaker_projection,
)
from conversion.s3gen.snapshot import randomize_untrained
from oracles.recorder import capture_random_draws

torch.set_num_threads(1)

PROMPT_TOKENS, PROMPT_FRAMES, SPEECH_TOKENS = 25, 50, 30


@pytest.fixture(scope="module")
def s3gen():
    from chatterbox.models.s3gen import S3Gen

    torch.manual_seed(0)
    with sizes_patched(REDUCED):
        model = S3Gen()
    randomize_untrained(model, 0)
    return model.eval()


@pytest.fixture(scope="module")
def voice():
    gen = torch.Generator().manual_seed(5)
    return {
        "prompt_token": torch.randint(0, 6561, (1, PROMPT_TOKENS), generator=gen),
        "prompt_token_len": torch.tensor([PROMPT_TOKENS]),
        # a log-mel-like level: around -6 with some spread
        "prompt_feat": -6.0 + 2.0 * torch.randn(1, PROMPT_FRAMES, 80, generator=gen),
        "prompt_feat_len": None,
        "embedding": torch.randn(1, 192, generator=gen),
    }


@pytest.fixture(scope="module")
def bundle(s3gen, tmp_path_factory):
    dest = tmp_path_factory.mktemp("flow") / "bundle"
    with torch.no_grad(), BundleWriter(dest, "chatterbox", overwrite=True) as bw:
        for spec in (encoder_graph_spec(s3gen, REDUCED), estimator_graph_spec(s3gen, REDUCED)):
            bw.add_graph(spec)
    return dest


@pytest.fixture(scope="module")
def session(bundle):
    with Session(bundle) as s:
        yield s


def _publisher_mu(flow, tokens: torch.Tensor) -> torch.Tensor:
    """flow.inference's encoder pieces at the real length, with the publisher's own masks."""
    from chatterbox.models.s3gen.utils.mask import make_pad_mask

    length = torch.tensor([tokens.shape[1]])
    mask = (~make_pad_mask(length)).unsqueeze(-1).float()
    h, _ = flow.encoder(flow.input_embedding(tokens.long()) * mask, length)
    return flow.encoder_proj(h).transpose(1, 2)


@pytest.mark.parametrize("n_tokens", [55, 80])
def test_encoder_matches_publisher(s3gen, session, n_tokens):
    tokens = torch.randint(
        0, 6561, (1, n_tokens), generator=torch.Generator().manual_seed(n_tokens)
    )
    ref = _publisher_mu(s3gen.flow, tokens).numpy()
    bucket = 64 if n_tokens <= 64 else 96
    padded = np.zeros((1, bucket), np.int32)
    padded[0, :n_tokens] = tokens.numpy()
    inputs = {"tokens": padded, "length": np.array([n_tokens], np.int32)}
    mu = session.run(ENCODER_GRAPH, f"encode_N{bucket}", inputs)["mu"]
    assert mu.shape == (1, 80, 2 * bucket)
    real = 2 * n_tokens
    c = cosine(mu[:, :, :real], ref)
    print(f"encoder N{bucket} ({n_tokens} tokens): real-region mu cos {c:.8f}")
    assert c >= 0.999
    np.testing.assert_allclose(mu[:, :, :real], ref, atol=1e-3)
    assert not np.any(mu[:, :, real:])  # zero on the pad


def _estimator_inputs(frames: int, real: int, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    inputs = {
        k: torch.randn(v.shape, generator=gen)
        for k, v in FlowEstimator.example_inputs({"F": frames}).items()
    }
    inputs["t"] = torch.rand(2, generator=gen)
    inputs["mask"] = torch.zeros(2, 1, frames)
    inputs["mask"][:, :, :real] = 1.0
    for k in ("x", "mu", "cond"):
        inputs[k][:, :, real:] = 0.0
    inputs["mu"][1] = 0.0  # the CFG row, as the host sends it
    inputs["spks"][1] = 0.0
    inputs["cond"][1] = 0.0
    return inputs


def test_estimator_matches_publisher(s3gen, session):
    frames, real = 128, 110
    inputs = _estimator_inputs(frames, real, seed=1)
    est = s3gen.flow.decoder.estimator
    ref_padded = est.forward(**inputs).numpy()  # the publisher on the same (padded) inputs
    at_real = {k: (v[..., :real] if v.ndim == 3 else v) for k, v in inputs.items()}
    ref_real = est.forward(**at_real).numpy()  # ...and at the real length, unpadded
    arrays = {k: v.numpy() for k, v in inputs.items()}
    v = session.run(ESTIMATOR_GRAPH, f"estimate_F{frames}", arrays)["velocity"]
    c_same, c_real = cosine(v, ref_padded), cosine(v[..., :real], ref_real)
    print(f"estimator F{frames}: cos {c_same:.8f} (same inputs), {c_real:.8f} (real length)")
    assert c_same >= 0.9999
    assert c_real >= 0.9999
    assert not np.any(v[..., real:])


def test_flow_matches_publisher_flow_inference(s3gen, session, voice):
    speech = torch.randint(0, 6561, (1, SPEECH_TOKENS), generator=torch.Generator().manual_seed(9))
    with capture_random_draws(("randn_like",)) as draws:
        ref = s3gen.flow_inference(
            speech, ref_dict=dict(voice), finalize=True, n_cfm_timesteps=10
        ).numpy()
    assert list(draws) == ["randn_like/0"]
    noise = draws["randn_like/0"]
    total = 2 * (PROMPT_TOKENS + SPEECH_TOKENS)
    assert noise.shape == (1, 80, total)
    arrays = flow_host_arrays(s3gen)
    result = flow_inference(
        session,
        arrays,
        voice["prompt_token"],
        voice["prompt_feat"].numpy(),
        voice["embedding"].numpy(),
        speech,
        noise,
        n_steps=10,
        config=REDUCED,
    )
    assert (result.encoder_function, result.estimator_function) == ("encode_N64", "estimate_F128")
    assert result.mel.shape == ref.shape == (1, 80, 2 * SPEECH_TOKENS)
    assert len(result.xs) == 11 and len(result.velocities) == 10
    mu_ref = _publisher_mu(s3gen.flow, torch.cat([voice["prompt_token"], speech], 1)).numpy()
    assert cosine(result.mu, mu_ref) >= 0.999
    c = cosine(result.mel, ref)
    print(f"flow mel vs publisher flow_inference (10 steps, same z): cos {c:.8f}")
    assert c >= 0.999
    # the speaker projection is the publisher's F.normalize + affine
    spks_ref = s3gen.flow.spk_embed_affine_layer(
        torch.nn.functional.normalize(voice["embedding"], dim=1)
    ).numpy()
    np.testing.assert_allclose(speaker_projection(arrays, voice["embedding"]), spks_ref, atol=1e-5)


@pytest.mark.slow
def test_estimator_fp16_smallest_bucket(s3gen, tmp_path):
    frames = min(REDUCED.estimator_frames)
    real = frames - 18
    dest = tmp_path / "b16"
    with torch.no_grad(), BundleWriter(dest, "chatterbox", precision="fp16", overwrite=True) as bw:
        bw.add_graph(estimator_graph_spec(s3gen, REDUCED, sizes=[frames]), precision="fp16")
    inputs = _estimator_inputs(frames, real, seed=2)
    ref = FlowEstimator(s3gen.flow.decoder.estimator)(**inputs).numpy()
    with Session(dest) as s:
        v = s.run(ESTIMATOR_GRAPH, f"estimate_F{frames}", {k: x.numpy() for k, x in inputs.items()})
    v = v["velocity"]
    assert v.dtype == np.float16
    c = cosine(v[..., :real], ref[..., :real])
    print(f"estimator F{frames} fp16 vs fp32 eager: cos {c:.6f}")
    assert c >= 0.999


def test_bucket_overflow_is_clear(s3gen, session, voice):
    arrays = flow_host_arrays(s3gen)
    feat = voice["prompt_feat"].numpy()
    too_many = 96 - PROMPT_TOKENS + 1  # 97 tokens in all > the 96-token bucket
    noise = np.zeros((1, 80, 2 * (PROMPT_TOKENS + too_many)), np.float32)
    args = (session, arrays, voice["prompt_token"], feat, voice["embedding"].numpy())
    with pytest.raises(BucketOverflowError, match=r"97 tokens \(prompt 25 \+ speech 72\).*96"):
        flow_inference(*args, np.zeros(too_many, np.int64), noise, config=REDUCED)
    # the estimator's frame buckets are checked as well (here 120 frames > 96)
    small = dataclasses.replace(REDUCED, estimator_frames=(96,))
    speech = np.zeros(35, np.int64)
    noise = np.zeros((1, 80, 120), np.float32)
    with pytest.raises(BucketOverflowError, match=r"120 mel frames.*F = 96"):
        flow_inference(*args, speech, noise, config=small)
    with pytest.raises(InputSpecError, match="6561"):
        flow_inference(*args, np.array([6561]), np.zeros((1, 80, 52), np.float32), config=REDUCED)
    with pytest.raises(InputSpecError, match="noise"):
        flow_inference(*args, np.zeros(5, np.int64), np.zeros((1, 80, 7), np.float32))
