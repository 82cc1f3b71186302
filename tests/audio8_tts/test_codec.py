"""Audio8-TTS codec: the plain-torch re-author (reduced config, seeded random weights) checked
by invariants and independent torch forms, then its two graphs through the Core AI runtime.

No publisher codec is installed: the re-author is checked against torch's own weight norm,
conv_transpose1d and F.pad forms, the publisher's RoPE formula, and the properties the
publisher's code has by construction (causality, the window band, the clamp, the key set).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from conversion.audio8_tts.codec import host as host_codec
from conversion.audio8_tts.codec.config import PUBLISHED, REDUCED
from conversion.audio8_tts.codec.graphs import (
    CODEC_GRAPH,
    ENCODER_GRAPH,
    CodecDecode,
    codec_graph_spec,
    encoder_graph_spec,
)
from conversion.audio8_tts.codec.layers import (
    CausalConv1d,
    CausalConvTranspose1d,
    WindowTransformer,
    rope_table,
)
from conversion.audio8_tts.codec.model import Codec
from conversion.audio8_tts.codec.weights import (
    codec_state_shapes,
    load_codec,
    random_codec_state,
    write_random_codec,
)
from conversion.core.bundle import BundleWriter
from conversion.core.errors import UserError, WeightsError
from conversion.core.runtime.session import Session

torch.set_num_threads(1)

CFG = REDUCED
FS = CFG.frame_size


def _cos(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _codes(frames: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, CFG.residual_size, (CFG.num_books, frames), generator=g)
    codes[0] = torch.randint(0, CFG.semantic_size, (frames,), generator=g)
    return codes


@pytest.fixture(scope="module")
def codec_file(tmp_path_factory):
    return write_random_codec(tmp_path_factory.mktemp("codec") / "codec.pth", CFG, seed=0)


@pytest.fixture(scope="module")
def codec(codec_file):
    return load_codec(codec_file, CFG)


# -- layout and loading ----------------------------------------------------------------------------


def test_state_keys_match_shapes_and_publisher_names():
    shapes = codec_state_shapes(CFG)
    assert {k: tuple(v.shape) for k, v in Codec(CFG).state_dict().items()} == shapes
    state = random_codec_state(CFG, seed=1)
    assert {k: tuple(v.shape) for k, v in state.items()} == shapes
    pub = codec_state_shapes(PUBLISHED)
    assert len(pub) == 535
    # a few keys as the publisher's modules name them (parametrizations weight norm: g has
    # the transposed conv's *input* channels; legacy weight norm on the VQ projections)
    assert pub["decoder.model.1.block.1.conv.parametrizations.weight.original0"] == (1536, 1, 1)
    assert pub["decoder.model.1.block.1.conv.parametrizations.weight.original1"] == (1536, 768, 16)
    assert pub["decoder.model.4.block.4.block.1.conv.bias"] == (96,)
    assert pub["decoder.model.6.conv.parametrizations.weight.original1"] == (1, 96, 7)
    assert pub["quantizer.quantizer.quantizers.8.in_proj.weight_g"] == (8, 1, 1)
    assert pub["quantizer.semantic_quantizer.quantizers.0.codebook.weight"] == (4096, 8)
    assert pub["quantizer.quantizer.quantizers.0.codebook.weight"] == (1024, 8)
    assert pub["quantizer.post_module.layers.7.attention.wqkv.weight"] == (3072, 1024)
    assert pub["quantizer.upsample.1.1.dwconv.conv.weight"] == (1024, 1, 7)
    assert pub["encoder.block.4.block.5.layers.3.feed_forward.w2.weight"] == (1024, 3072)
    assert sum(math.prod(s) for s in pub.values()) == 391_430_530


def test_load_codec_flat_and_generator_nested(codec, tmp_path):
    nested = write_random_codec(tmp_path / "codec.pth", CFG, seed=0, nested=True)
    other = load_codec(tmp_path, CFG)  # a folder holding codec.pth
    a, b = codec.state_dict(), other.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert nested.name == "codec.pth"


def test_load_codec_errors_name_file_and_key(tmp_path, codec_file):
    with pytest.raises(WeightsError, match="codec.pth"):
        load_codec(tmp_path / "nowhere", CFG)
    state = torch.load(codec_file, weights_only=True)
    key = "decoder.model.0.conv.bias"
    broken = dict(state)
    broken.pop(key)
    torch.save(broken, tmp_path / "missing.pth")
    with pytest.raises(WeightsError, match=f"missing.pth.*'{key}'"):
        load_codec(tmp_path / "missing.pth", CFG)
    broken = dict(state)
    broken[key] = torch.zeros(3)
    torch.save(broken, tmp_path / "shape.pth")
    with pytest.raises(WeightsError, match=f"'{key}' has shape \\[3\\]"):
        load_codec(tmp_path / "shape.pth", CFG)
    with pytest.raises(WeightsError, match="'published'"):  # reduced weights, published sizes
        load_codec(codec_file, PUBLISHED)


# -- building blocks against torch's own forms -----------------------------------------------------


def test_weight_norm_matches_torch_parametrizations():
    from torch.nn.utils import weight_norm as legacy
    from torch.nn.utils.parametrizations import weight_norm

    torch.manual_seed(0)
    ours = CausalConvTranspose1d(6, 4, 8, 4)
    ref = weight_norm(nn.ConvTranspose1d(6, 4, 8, stride=4))
    p = ours.conv.parametrizations.weight
    with torch.no_grad():
        p.original0.copy_(torch.rand(6, 1, 1) + 0.5)
        p.original1.copy_(torch.randn(6, 4, 8))
        ref.parametrizations.weight.original0.copy_(p.original0)
        ref.parametrizations.weight.original1.copy_(p.original1)
    torch.testing.assert_close(ours.conv.effective_weight(), ref.weight)
    conv = legacy(nn.Conv1d(5, 8, 1))
    vq = Codec(CFG).quantizer.quantizer.quantizers[0]
    with torch.no_grad():
        conv.weight_g.copy_(torch.rand(8, 1, 1))
        conv.weight_v.copy_(torch.randn(8, 5, 1))
        vq.in_proj.weight_g = nn.Parameter(conv.weight_g.detach().clone())
        vq.in_proj.weight_v = nn.Parameter(conv.weight_v.detach().clone())
        conv(torch.zeros(1, 5, 1))  # the legacy hook recomputes weight on forward
    torch.testing.assert_close(vq.in_proj.effective_weight(), conv.weight)


@pytest.mark.parametrize("kernel,stride", [(16, 8), (4, 2), (2, 2)])
def test_polyphase_transposed_conv_is_conv_transpose(kernel, stride):
    torch.manual_seed(kernel)
    m = CausalConvTranspose1d(6, 5, kernel, stride, norm="none")
    with torch.no_grad():
        m.conv.weight.normal_()
        m.conv.bias.normal_()
    x = torch.randn(1, 6, 11)
    ref = F.conv_transpose1d(x, m.conv.weight, m.conv.bias, stride=stride)
    ref = ref[..., : 11 * stride]  # the publisher's right crop of k - s
    torch.testing.assert_close(m(x), ref)
    m.to_polyphase()
    torch.testing.assert_close(m(x), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kernel,dilation,stride", [(7, 9, 1), (16, 1, 8), (3, 1, 1), (2, 1, 2)])
def test_causal_conv_is_left_padded_conv(kernel, dilation, stride):
    torch.manual_seed(1)
    m = CausalConv1d(3, 4, kernel, dilation=dilation, stride=stride, norm="none")
    with torch.no_grad():
        m.conv.weight.normal_()
    x = torch.randn(1, 3, 64)
    span = (kernel - 1) * dilation + 1
    ref = F.conv1d(F.pad(x, (span - stride, 0)), m.conv.weight, m.conv.bias, stride, 0, dilation)
    torch.testing.assert_close(m(x), ref)
    assert m(x).shape[-1] == 64 // stride


def test_rope_table_is_the_publishers_bf16_polar():
    length, d = 40, 64
    freqs = 1.0 / (10_000.0 ** (torch.arange(0, d, 2).float() / d))
    phases = torch.outer(torch.arange(length), freqs)
    values = torch.polar(torch.ones_like(phases), phases)
    ref = torch.stack((values.real, values.imag), dim=-1).to(torch.bfloat16).float()
    assert torch.equal(rope_table(length, d, 10_000.0), ref)


def test_window_band_and_causality_of_the_transformer():
    torch.manual_seed(0)
    t = WindowTransformer(64, 1, 4, CFG)
    for p in t.parameters():
        p.data.normal_(0, 0.3)
    x = torch.randn(1, 64, 12)
    y = x.clone()
    y[..., 0] += 1.0  # frame 0 is visible to frames 0..3 only
    y2 = x.clone()
    y2[..., 8] += 1.0  # frame 8 never reaches earlier frames
    a, b, c = t(x), t(y), t(y2)
    assert (a[..., :4] - b[..., :4]).abs().amax() > 1e-3
    torch.testing.assert_close(a[..., 4:], b[..., 4:])
    torch.testing.assert_close(a[..., :8], c[..., :8])


# -- the codec -------------------------------------------------------------------------------------


def test_decode_and_encode_are_causal(codec):
    codes = _codes(12, seed=2)
    later = codes.clone()
    later[:, 7:] = _codes(5, seed=3)
    a, b = codec.decode(codes[None]), codec.decode(later[None])
    assert a.shape == (1, 1, 12 * FS)
    torch.testing.assert_close(a[..., : 7 * FS], b[..., : 7 * FS], atol=1e-5, rtol=0)
    assert (a[..., 7 * FS :] - b[..., 7 * FS :]).abs().amax() > 1e-2
    audio = 0.3 * torch.randn(1, 1, 6 * FS, generator=torch.Generator().manual_seed(4))
    changed = audio.clone()
    changed[..., 4 * FS :] = 0.0
    ca, cb = codec.encode(audio), codec.encode(changed)
    assert ca.shape == (1, CFG.num_books, 6)
    assert torch.equal(ca[..., :4], cb[..., :4])


def test_decode_clamps_like_the_publisher(codec):
    codes = _codes(6, seed=5)
    wild = codes.clone()
    wild[0, 1] = 5000
    wild[3, 2] = 1500
    wild[9, 4] = 4095
    clamped = wild.clone()
    clamped[0].clamp_(0, 4095)
    clamped[1:].clamp_(0, 1023)
    torch.testing.assert_close(codec.decode(wild[None]), codec.decode(clamped[None]))
    graph_form = CodecDecode(codec, 6)
    torch.testing.assert_close(
        graph_form(wild[None].int()),
        codec.decode(clamped[None]).reshape(1, -1),
        atol=1e-4,
        rtol=0,
    )
    report = host_codec.DecodeReport()
    host_codec.prepare_codes(wild, CFG, report)
    assert report.clamped == 3 and report.clamped_by_book == [1, 0, 0, 1, 0, 0, 0, 0, 0, 1]


def test_window_plan_and_padding_frames():
    assert host_codec.window_plan(70, 32, 8) == [(0, 0, 32), (24, 32, 56), (48, 56, 70)]
    assert host_codec.window_plan(10, 32, 8) == [(0, 0, 10)]
    with pytest.raises(UserError):
        host_codec.window_plan(10, 32, 32)
    codes = _codes(5, seed=6).numpy()
    codes[:, 3:] = -1
    report = host_codec.DecodeReport()
    assert host_codec.prepare_codes(codes, CFG, report).shape == (10, 3)
    assert report.frames == 3 and report.dropped == 2


# -- through the Core AI runtime -------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(codec, tmp_path_factory):
    dest = tmp_path_factory.mktemp("a8codec") / "bundle"
    with BundleWriter(dest, model="audio8-codec-test", overwrite=True) as bw:
        bw.add_graph(codec_graph_spec(codec))
        bw.add_graph(encoder_graph_spec(codec))
    with Session(dest) as s:
        yield s


def test_codec_graph_matches_eager(session, codec):
    codes = _codes(CFG.graph_frames, seed=7)
    codes[2, 5] = 3000  # a fast-head draw past the residual book: clamped in the graph
    out = session.run(CODEC_GRAPH, "main", {"codes": codes[None].int().numpy()})["wav"]
    ref = codec.decode(codes[None]).reshape(1, -1).numpy()
    assert out.shape == (1, CFG.graph_frames * FS)
    assert _cos(out, ref) >= 0.9999
    assert np.abs(out - ref).max() < 1e-3


def test_stream_vs_whole_utterance(session, codec):
    frames, window, context = 80, CFG.graph_frames, 8
    codes = _codes(frames, seed=8)
    whole = codec.decode(codes[None]).reshape(-1).numpy()  # the publisher's one-shot decode
    report = host_codec.DecodeReport()
    chunks = list(host_codec.decode_stream(session, codes, CFG, window, context, report))
    plan = host_codec.window_plan(frames, window, context)
    assert [len(c) for c in chunks] == [(b - a) * FS for _, a, b in plan]
    assert report.windows == len(plan) and report.frames == frames
    streamed = np.concatenate(chunks)
    # the first window starts at frame 0: exactly the whole-utterance decode
    assert np.abs(streamed[: window * FS] - whole[: window * FS]).max() < 1e-3
    # later windows lost the transformers' context before their last `context` frames
    for _, a, b in plan[1:]:
        assert _cos(streamed[a * FS : b * FS], whole[a * FS : b * FS]) >= 0.99
    # decode_whole joins the same windows; the eager graph form gives the same audio
    joined, rep = host_codec.decode_whole(session, codes, CFG, window, context)
    np.testing.assert_array_equal(joined, streamed)
    eager = host_codec.EagerCodecSession(codec)
    ref, _ = host_codec.decode_whole(eager, codes, CFG, window, context)
    assert _cos(joined, ref) >= 0.9999


def test_encoder_graph_matches_eager(session, codec):
    n = CFG.encoder_frames * FS
    audio = 0.3 * torch.randn(1, 1, n, generator=torch.Generator().manual_seed(9))
    out = session.run(ENCODER_GRAPH, "main", {"audio": audio.numpy()})["codes"]
    ref = codec.encode(audio).numpy()
    assert out.dtype == np.int32 and out.shape == (1, CFG.num_books, CFG.encoder_frames)
    assert (out == ref).mean() >= 0.99
    # a shorter clip: padded into the bucket, trimmed to ceil(n / frame_size) frames
    short = audio[..., : 5 * FS - 100]
    codes = host_codec.encode_reference(session, short.numpy(), CFG)
    assert codes.shape == (CFG.num_books, 5)
    assert (codes == codec.encode(short)[0].numpy()).mean() >= 0.99
