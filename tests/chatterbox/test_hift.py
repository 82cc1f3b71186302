"""Chatterbox's HiFT vocoder through Core AI (reduced sizes, buckets 64 and 96 mel frames).

The f0 and trunk graphs are exported once (fp32) from the publisher's own `S3Gen()` built at
the reduced sizes with seeded random weights, and checked against the publisher's eager code:
the f0 predictor, the harmonic source with the same draws, and `mel2wav.inference` end to end
at two mel lengths that land in different buckets.
"""

from __future__ import annotations

import chatterbox  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch

from conversion.chatterbox.config import MEL_HOP, REDUCED, sizes_patched
from conversion.core.bundle import BundleWriter
from conversion.core.errors import BucketOverflowError
from conversion.core.runtime.session import Session
from conversion.s3gen.hift import host as host_hift
from conversion.s3gen.hift.graphs import (
    F0_GRAPH,
    TRUNK_GRAPH,
    f0_graph_spec,
    trunk_graph_spec,
)
from gates.metrics import magnitude_spectrogram_corr, waveform_corr
from oracles.recorder import capture_random_draws
from oracles.replay import replay_random_draws

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def s3gen():
    """The publisher's S3Gen at the reduced sizes, seeded; biases and Snake alphas perturbed
    so every path carries signal, and the f0 head scaled so f0 reaches the voiced range
    (random weights give ~0.2 Hz, below the 10 Hz voicing threshold: an all-noise source;
    scaled, f0 mixes voiced and unvoiced frames)."""
    from chatterbox.models.s3gen import S3Gen

    torch.manual_seed(0)
    with sizes_patched(REDUCED):
        model = S3Gen().eval()
    hift = model.mel2wav
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in hift.named_parameters():
            if name.endswith("bias"):
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
            elif name.endswith("alpha"):
                p.mul_(1.0 + 0.3 * torch.rand(p.shape, generator=gen))
        hift.f0_predictor.classifier.weight.mul_(1000.0)
        hift.f0_predictor.classifier.bias.mul_(1000.0)
    return model


@pytest.fixture(scope="module")
def hift(s3gen):
    return s3gen.mel2wav


@pytest.fixture(scope="module")
def arrays(s3gen):
    return host_hift.hift_host_arrays(s3gen)


@pytest.fixture(scope="module")
def session(hift, tmp_path_factory):
    dest = tmp_path_factory.mktemp("hift") / "bundle"
    with BundleWriter(dest, model="chatterbox-hift-test", overwrite=True) as bw:
        bw.add_graph(f0_graph_spec(hift, REDUCED))
        bw.add_graph(trunk_graph_spec(hift, REDUCED))
    with Session(dest) as s:
        yield s


def _mel(frames: int, seed: int) -> torch.Tensor:
    """A log-mel-like input: smooth over time and frequency, around the publisher's range."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 80, frames + 4, generator=gen)
    x = torch.nn.functional.avg_pool1d(x, 5, stride=1)  # smooth in time
    return (x * 2.0 - 6.0).contiguous()


def test_graph_functions_per_bucket(session):
    assert sorted(session.functions(F0_GRAPH)) == ["f0_F64", "f0_F96"]
    assert sorted(session.functions(TRUNK_GRAPH)) == ["trunk_F64", "trunk_F96"]
    desc = session.manifest.function(TRUNK_GRAPH, "trunk_F96")
    shapes = {d["name"]: d["shape"] for d in desc["inputs"] + desc["outputs"]}
    assert shapes["source_stft"] == [1, 18, 120 * 96 + 1]
    assert shapes["magnitude"] == shapes["phase"] == [1, 9, 120 * 96 + 1]


@pytest.mark.parametrize(("frames", "bucket"), [(50, 64), (80, 96), (50, 96), (64, 64)])
def test_f0_graph_matches_publisher(session, hift, frames, bucket):
    mel = _mel(frames, seed=frames)
    with torch.inference_mode():
        ref = hift.f0_predictor(mel).numpy()[0]
    padded = np.pad(mel.numpy(), ((0, 0), (0, 0), (0, bucket - frames)))
    out = session.run(
        F0_GRAPH,
        f"f0_F{bucket}",
        {"mel": padded, "n_frames": np.array([frames], np.int32)},
    )["f0"][0]
    assert (ref > 10.0).any()  # some voiced frames: the source's sine path is exercised
    assert np.abs(out[:frames] - ref).max() <= 1e-5 * np.abs(ref).max()
    assert np.all(out[frames:] == 0.0)


def test_harmonic_source_bit_exact_with_recorded_draws(hift, arrays):
    frames = 40
    t = torch.arange(frames, dtype=torch.float32)
    f0 = 120.0 + 40.0 * torch.sin(t / 5.0)
    f0[15:22] = 0.0  # an unvoiced stretch (below the 10 Hz threshold)
    f0[22] = 5.0
    with torch.inference_mode(), capture_random_draws() as draws:
        s = hift.f0_upsamp(f0[None, None]).transpose(1, 2)
        ref = hift.m_source(s)[0].transpose(1, 2).numpy()
    assert set(draws) == {"rand/0", "randn_like/0", "randn_like/1"}
    got = host_hift.harmonic_source(arrays, f0.numpy(), draws)
    assert got.shape == ref.shape == (1, 1, frames * MEL_HOP)
    assert np.abs(got - ref).max() <= 1e-6


def test_harmonic_source_seed_matches_global_seed(hift, arrays):
    """No other draws in the vocoder: manual_seed(k) makes the publisher draw ours."""
    f0 = np.full(8, 150.0, np.float32)
    torch.manual_seed(5)
    with torch.inference_mode():
        s = hift.f0_upsamp(torch.from_numpy(f0)[None, None]).transpose(1, 2)
        ref = hift.m_source(s)[0].transpose(1, 2).numpy()
    got = host_hift.harmonic_source(arrays, f0, seed=5)
    assert np.abs(got - ref).max() <= 1e-6


@pytest.mark.parametrize("frames", [50, 80])  # buckets 64 and 96
def test_vocode_matches_publisher(session, hift, arrays, frames):
    mel = _mel(frames, seed=100 + frames)
    draws = host_hift.draw_source_noise(frames * MEL_HOP, seed=frames)
    with torch.inference_mode(), replay_random_draws(host_hift.replay_keys(draws)):
        ref_wav, ref_source = hift.inference(speech_feat=mel, cache_source=torch.zeros(1, 1, 0))
    ref = ref_wav.numpy().reshape(-1)
    res = host_hift.vocode(session, arrays, mel.numpy(), draws=draws)
    assert res.wav.shape == (frames * MEL_HOP,) == ref.shape
    assert res.f0.shape == (frames,)
    assert np.abs(res.source - ref_source.numpy()).max() <= 1e-4
    assert magnitude_spectrogram_corr(ref, res.wav) >= 0.999
    assert waveform_corr(ref, res.wav) >= 0.999
    assert np.abs(res.wav - ref).max() <= 1e-4
    assert np.abs(res.wav).max() <= float(arrays["audio_limit"])


def test_buckets_agree(session, arrays):
    """The same 50 frames through the 64 and the 96 bucket: the pad never reaches the real
    span (each convolution masks its input)."""
    mel = _mel(50, seed=7).numpy()
    a = host_hift.vocode(session, arrays, mel, seed=3)
    b = host_hift.vocode(session, arrays, mel, seed=3, bucket=96)
    assert np.abs(a.f0 - b.f0).max() <= 1e-5 * np.abs(a.f0).max()
    assert np.abs(a.wav - b.wav).max() <= 1e-5


def test_overflow_is_a_clear_error(session, arrays):
    mel = np.zeros((1, 80, 97), np.float32)
    with pytest.raises(BucketOverflowError, match="largest bucket holds 96"):
        host_hift.vocode(session, arrays, mel)


def test_trim_fade_matches_publisher(s3gen, arrays):
    wav = np.random.default_rng(0).standard_normal(3000).astype(np.float32)
    ref = torch.from_numpy(wav.copy())[None]
    ref[:, : len(s3gen.trim_fade)] *= s3gen.trim_fade
    assert np.array_equal(host_hift.apply_trim_fade(wav), ref.numpy()[0])
    assert np.array_equal(host_hift.apply_trim_fade(wav, arrays["trim_fade"]), ref.numpy()[0])
    short = host_hift.apply_trim_fade(wav[:500])
    assert short.shape == (500,) and np.all(short[:480] == 0.0)


def test_draws_from_a_whole_s3gen_recording():
    """Around S3Gen.inference the flow's noise is randn_like/0: the vocoder's are the last."""
    ours = host_hift.draw_source_noise(960, seed=1)
    recorded = host_hift.replay_keys(ours)
    whole = {
        "draws/randn_like/0": np.zeros((1, 80, 4), np.float32),  # the flow's z
        "draws/rand/0": recorded["rand/0"],
        "draws/randn_like/1": recorded["randn_like/0"],
        "draws/randn_like/2": recorded["randn_like/1"],
    }
    for rec in (recorded, whole):
        got = host_hift.draws_from_recording(rec)
        assert all(np.array_equal(got[k], ours[k]) for k in host_hift.DRAW_NAMES)
    with pytest.raises(KeyError, match="around the vocoder"):
        host_hift.draws_from_recording({"randn_like/0": ours["sine_noise"]})
