"""The Chatterbox oracle on the reduced random snapshot: what a fixture holds, that it is
seeded, that its T3 draws replay through the host sampler, teacher forcing, and that its S3Gen
draws replay through the publisher's code."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.oracle.recording import START_SPEECH
from conversion.chatterbox.oracle.utterance import record, record_flow_and_vocoder
from conversion.chatterbox.port import PORT
from conversion.chatterbox.sampling import CHATTERBOX_ORDER
from conversion.chatterbox.voice import Voice
from conversion.chatterbox.weights import load_model
from conversion.core.errors import UserError
from conversion.core.host.sampling import SamplingConfig, sample
from oracles import load_fixture, save_fixture
from oracles.replay import replay_random_draws

STEPS = 12
TEXT = "hello there"


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return load_model(PORT.resolve_weights("random", REDUCED, 0))


@pytest.fixture(scope="module")
def fx(model):
    return record(model, TEXT, seed=3, max_new_tokens=STEPS)


def _mel_sizes(fx):
    """(T2, generated frames): the flow's mel frames, prompt included, and the generated ones."""
    tp, t = fx.inputs["prompt_tokens"].shape[1], fx.intermediates["speech_tokens"].shape[1]
    t2 = 2 * (tp + t)
    return t2, t2 - fx.inputs["prompt_feat"].shape[1]


def test_fixture_text_and_t3_keys_and_shapes(model, fx):
    v = model.t3.hp.speech_tokens_dict_size
    inter, draws = fx.intermediates, fx.draws
    assert fx.inputs["text"] == "Hello there."
    tt = fx.inputs["text_tokens"]
    assert tt[0, 0] == model.t3.hp.start_text_token and tt[0, -1] == model.t3.hp.stop_text_token
    assert inter["cond_emb"].shape == (1, 34, 1024)
    # conditioning + text + start-of-speech twice (prepare_input_embeds and the loop's bos)
    assert inter["t3_prefill_embeds"].shape == (2, 34 + tt.shape[1] + 2, 1024)
    np.testing.assert_array_equal(inter["t3_prefill_embeds"][0, :34], inter["cond_emb"][0])
    np.testing.assert_array_equal(
        inter["t3_prefill_embeds"][:, -1], inter["t3_prefill_embeds"][:, -2]
    )
    assert inter["t3_tokens"].shape == (1, STEPS)  # random weights never stop
    assert fx.meta["t3_decode_step_ms"] > 0  # one decode step of the loop, timed
    for key in ("t3_cond_logits", "t3_uncond_logits"):
        assert inter[key].shape == (STEPS, v)
    assert draws["t3_uniforms/0"].shape == (STEPS, v)
    t3_tokens = inter["t3_tokens"][0]
    np.testing.assert_array_equal(inter["speech_tokens"][0], t3_tokens[t3_tokens < 6561])


def test_fixture_flow_keys_and_shapes(fx):
    inter, draws = fx.intermediates, fx.draws
    t2, frames = _mel_sizes(fx)
    np.testing.assert_array_equal(
        inter["flow_tokens"],
        np.concatenate([fx.inputs["prompt_tokens"], inter["speech_tokens"]], 1),
    )
    assert inter["flow_encoder_out"].shape == (1, t2, 512)
    for key in ("mu", "cfm_cond", "cfm_out", "z"):
        assert inter[key].shape == (1, 80, t2), key
    np.testing.assert_array_equal(inter["z"], draws["randn_like/0"])
    s = fx.meta["n_cfm_timesteps"]
    assert inter["cfm_x"].shape == inter["cfm_velocity"].shape == (s, 2, 80, t2)
    np.testing.assert_array_equal(inter["cfm_x"][0, 0], inter["z"][0])
    np.testing.assert_array_equal(inter["cfm_mu_in"][0], inter["mu"][0])
    assert not inter["cfm_mu_in"][1].any()  # the CFG row
    # the Euler update, from the recorded velocities (CFG rate 0.7)
    t_span = np.append(inter["cfm_t"][:, 0], 1.0).astype(np.float32)
    x = inter["cfm_x"][-1, 0]
    v_c, v_u = inter["cfm_velocity"][-1]
    x_end = x + (t_span[-1] - t_span[-2]) * (1.7 * v_c - 0.7 * v_u)
    np.testing.assert_allclose(x_end, inter["cfm_out"][0], atol=1e-5)
    np.testing.assert_array_equal(inter["mel"], inter["cfm_out"][:, :, -frames:])


def test_fixture_hift_keys_and_shapes(fx):
    inter, draws = fx.intermediates, fx.draws
    _, frames = _mel_sizes(fx)
    n = frames * 480
    assert inter["f0"].shape == (1, frames)
    assert inter["source"].shape == (1, n, 1) and inter["sine_waves"].shape == (1, 9, n)
    assert draws["rand/0"].shape == (1, 9, 1) and draws["randn_like/1"].shape == (1, 9, n)
    assert inter["hift_conv_post"].shape == (1, 18, n // 4 + 1)
    wav, raw = fx.outputs["wav_unwatermarked"], inter["wav_vocoder"]
    assert wav.shape == raw.shape == fx.outputs["wav"].shape == (1, n)
    assert not wav[0, :480].any()  # trim_fade zeroes the first 20 ms ...
    np.testing.assert_array_equal(wav[0, 960:], raw[0, 960:])  # ... and fades the next 20 ms


def test_same_seed_same_tokens_and_wav(model, fx):
    again = record(model, TEXT, seed=3, max_new_tokens=STEPS)
    np.testing.assert_array_equal(again.intermediates["t3_tokens"], fx.intermediates["t3_tokens"])
    np.testing.assert_array_equal(again.outputs["wav"], fx.outputs["wav"])
    other = record(model, TEXT, seed=4, max_new_tokens=4)
    assert not np.array_equal(
        other.intermediates["t3_tokens"], fx.intermediates["t3_tokens"][:, :4]
    )


def _replay_tokens(fx, top_p=None, candidates=50):
    s = fx.meta["sampling"]
    cfg = SamplingConfig(
        temperature=s["temperature"],
        min_p=s["min_p"],
        top_p=top_p,
        repetition_penalty=s["repetition_penalty"],
        cfg_weight=s["cfg_weight"],
        order=CHATTERBOX_ORDER,
    )
    tokens = fx.intermediates["t3_tokens"][0]
    out = []
    for i in range(tokens.size):
        previous = np.concatenate([[START_SPEECH], tokens[:i]])
        out.append(
            sample(
                fx.intermediates["t3_cond_logits"][i],
                fx.draws["t3_uniforms/0"][i],
                cfg,
                previous_tokens=previous,
                uncond_logits=fx.intermediates["t3_uncond_logits"][i],
                candidates=candidates,
            )
        )
    return np.asarray(out), tokens


def test_uniforms_replay_through_the_host_sampler(fx):
    assert fx.meta["sampling"]["top_p"] == 1.0 and fx.meta["sampling"]["previous_tokens_start"] == [
        START_SPEECH
    ]
    got, want = _replay_tokens(fx)
    np.testing.assert_array_equal(got, want)


def test_top_p_replays_with_min_p_first(model):
    fx = record(model, TEXT, seed=5, max_new_tokens=6, top_p=0.5)
    got, want = _replay_tokens(fx, top_p=0.5, candidates=None)
    np.testing.assert_array_equal(got, want)


def test_forced_tokens_give_those_tokens(model, fx):
    forced = np.array([5, 6000, 17, 6561, 4242, 9])
    out = record(model, TEXT, seed=3, forced_tokens=forced)
    np.testing.assert_array_equal(out.intermediates["t3_tokens"][0], forced)
    # the publisher's drop_invalid_tokens drops everything up to a start-of-speech token
    np.testing.assert_array_equal(out.intermediates["speech_tokens"][0], [4242, 9])
    assert out.meta["forced"] and "t3_uniforms/0" not in out.draws
    # forcing the sampled path reproduces the sampled run's logits
    path = record(model, TEXT, seed=99, forced_tokens=fx.intermediates["t3_tokens"][0])
    for key in ("t3_cond_logits", "t3_uncond_logits"):
        np.testing.assert_array_equal(path.intermediates[key], fx.intermediates[key])
    # a forced stop ends the loop
    stop = record(model, TEXT, forced_tokens=np.array([7, 8, 6562]))
    assert stop.meta["stopped_on_eos"] and stop.intermediates["speech_tokens"].tolist() == [[7, 8]]


def test_exaggeration_reaches_cond_emb(model):
    out = record(model, TEXT, seed=0, max_new_tokens=2, exaggeration=0.7)
    voice = Voice.from_conditionals(model)
    np.testing.assert_array_equal(out.intermediates["cond_emb"], voice.cond_emb(0.7))
    with pytest.raises(UserError, match="exaggeration"):
        record(model, TEXT, exaggeration=2.5)
    with pytest.raises(UserError, match="cfg_weight"):
        record(model, TEXT, cfg_weight=0.0)


def test_s3gen_draws_replay_and_fixture_roundtrip(model, fx, tmp_path):
    speech = fx.intermediates["speech_tokens"]
    with replay_random_draws(fx.draws):
        again = record_flow_and_vocoder(model, speech, seed=12345)
    np.testing.assert_array_equal(again.outputs["wav"], fx.outputs["wav"])
    np.testing.assert_array_equal(again.intermediates["mel"], fx.intermediates["mel"])
    save_fixture(fx, tmp_path / "cbx")
    loaded = load_fixture(tmp_path / "cbx")
    assert loaded.inputs["text"] == "Hello there."
    assert set(loaded.arrays()) == set(fx.arrays())
    assert model.conds.gen["prompt_token"].dtype == torch.long  # the model was left as it was


def test_record_with_a_reference_wav(model, tmp_path):
    import soundfile as sf

    from conversion.chatterbox.weights import synthetic_reference

    path = tmp_path / "ref.wav"
    sf.write(path, synthetic_reference(2.0, seed=21), 16000)  # played at 16 kHz: 3 s
    default = model.conds
    out = record(model, TEXT, seed=1, max_new_tokens=3, ref_wav=path)
    assert model.conds is default
    # 3 s, cut to the reduced model's S3Gen prompt cap (its DEC_COND_LEN: 40 tokens, 1.6 s)
    assert out.inputs["prompt_tokens"].shape == (1, 40)
    assert out.inputs["t3_prompt_tokens"].shape == (1, 75)  # T3's prompt: all 3 s
    assert out.meta["voice"] == "ref.wav"
    assert any("resampled from 16000 Hz" in n for n in out.meta["voice_notes"])
