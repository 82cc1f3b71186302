"""Chatterbox voices: the default voice from conds.pt, the exaggeration row on the host,
cloning from a reference recording (any rate, any channel count) by the publisher's own
prepare_conditionals, bad references, and the voice file."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import soundfile as sf
import torch

from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.port import PORT
from conversion.chatterbox.voice import (
    Voice,
    VoiceError,
    check_exaggeration,
    clone_voice,
    inspect_reference,
    load_reference,
)
from conversion.chatterbox.weights import load_model, synthetic_reference
from conversion.core.errors import ReferenceAudioError, UserError


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return load_model(PORT.resolve_weights("random", REDUCED, 0))


def _publisher_cond_emb(model, t3cond, exaggeration=None):
    """What generate() feeds T3: its exaggeration update, then prepare_conditioning."""
    from chatterbox.models.t3.modules.cond_enc import T3Cond

    t3cond = copy.copy(t3cond)
    if exaggeration is not None and exaggeration != t3cond.emotion_adv[0, 0, 0]:
        t3cond = T3Cond(
            speaker_emb=t3cond.speaker_emb,
            cond_prompt_speech_tokens=t3cond.cond_prompt_speech_tokens,
            emotion_adv=exaggeration * torch.ones(1, 1, 1),
        )
    return model.t3.prepare_conditioning(t3cond).numpy()


def _assert_voice_is_conds(voice, conds):
    np.testing.assert_array_equal(voice.t3_speaker_emb, conds.t3.speaker_emb.numpy())
    np.testing.assert_array_equal(
        voice.t3_prompt_tokens, conds.t3.cond_prompt_speech_tokens.numpy()
    )
    np.testing.assert_array_equal(voice.prompt_tokens, conds.gen["prompt_token"].numpy())
    np.testing.assert_array_equal(voice.prompt_feat, conds.gen["prompt_feat"].numpy())
    np.testing.assert_array_equal(voice.xvector, conds.gen["embedding"].numpy())


def test_default_voice_is_the_publishers_conditioning(model):
    voice = Voice.from_conditionals(model)
    _assert_voice_is_conds(voice, model.conds)
    assert model.conds.t3.cond_prompt_speech_emb is None  # the copy took the cached embedding
    want = _publisher_cond_emb(model, model.conds.t3)
    assert want.shape == (1, 34, 1024)
    np.testing.assert_array_equal(voice.cond_emb_base, want)
    np.testing.assert_array_equal(voice.cond_emb(), want)
    assert voice.exaggeration == pytest.approx(0.5)


@pytest.mark.parametrize("exaggeration", [0.0, 0.25, 0.7, 1.3, 2.0])
def test_exaggeration_row_matches_the_publisher(model, exaggeration):
    voice = Voice.from_conditionals(model)
    want = _publisher_cond_emb(model, model.conds.t3, exaggeration)
    got = voice.cond_emb(exaggeration)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[:, :-1], voice.cond_emb_base[:, :-1])


def test_exaggeration_range():
    assert check_exaggeration(2) == 2.0
    for bad in (-0.01, 2.01, float("nan"), "loud"):
        with pytest.raises(VoiceError, match="exaggeration"):
            check_exaggeration(bad)


def test_clone_from_stereo_16k_matches_the_publisher(model, tmp_path):
    import librosa

    mono24 = synthetic_reference(2.0, seed=11)
    stereo = np.stack([mono24, 0.5 * synthetic_reference(2.0, seed=12)], axis=1)
    stereo16 = librosa.resample(stereo.T, orig_sr=24000, target_sr=16000).T
    path = tmp_path / "ref_stereo16k.wav"
    sf.write(path, stereo16, 16000)

    info = inspect_reference(path)
    assert (info.source_rate, info.channels, info.sample_rate) == (16000, 2, 24000)
    assert any("downmixed 2 channels" in n for n in info.notes)
    assert any("resampled from 16000 Hz" in n for n in info.notes)
    wav, sr = load_reference(path)
    assert wav.ndim == 1 and wav.dtype == np.float32 and sr == 24000
    assert abs(wav.size / sr - 2.0) < 1e-3

    default = model.conds
    voice = clone_voice(model, path, exaggeration=0.6)
    assert model.conds is default  # the default voice is left alone
    assert voice.notes == info.notes and voice.source == path.name
    assert voice.t3_speaker_emb.shape == (1, 256) and voice.xvector.shape == (1, 192)
    assert voice.t3_prompt_tokens.shape == (1, 50) and voice.prompt_tokens.shape == (1, 50)
    assert voice.prompt_feat.shape == (1, 100, 80)
    assert voice.cond_emb().shape == (1, 34, 1024)

    # the publisher's prepare_conditionals on the same audio as a mono 24 kHz (float) file
    mono_path = tmp_path / "ref_mono24k.wav"
    sf.write(mono_path, wav, 24000, subtype="FLOAT")
    try:
        model.prepare_conditionals(str(mono_path), exaggeration=0.6)
        _assert_voice_is_conds(voice, model.conds)
        np.testing.assert_array_equal(voice.cond_emb(), _publisher_cond_emb(model, model.conds.t3))
    finally:
        model.conds = default


def test_long_reference_is_cut_as_the_publisher_does(model, tmp_path):
    path = tmp_path / "long.wav"
    sf.write(path, synthetic_reference(11.0, seed=2), 24000)
    voice = clone_voice(model, path)
    assert any("first 10 s" in n and "first 6 s" in n for n in voice.notes)
    assert voice.t3_prompt_tokens.shape == (1, 150)  # 6 s at 25 Hz
    assert voice.prompt_tokens.shape == (1, 250)  # 10 s at 25 Hz
    assert voice.prompt_feat.shape == (1, 500, 80)


def test_bad_references_say_what_to_do(model, tmp_path):
    short = tmp_path / "short.wav"
    sf.write(short, synthetic_reference(0.5, seed=0), 24000)
    with pytest.raises(ReferenceAudioError, match=r"0\.50 s long.*at least 1\.0 s"):
        clone_voice(model, short)
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    with pytest.raises(ReferenceAudioError, match="could not be read as audio.*WAV or FLAC"):
        load_reference(text)
    with pytest.raises(ReferenceAudioError, match="does not exist"):
        load_reference(tmp_path / "missing.wav")
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, np.float32), 24000)
    with pytest.raises(ReferenceAudioError, match="no samples|could not be read"):
        load_reference(empty)
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(48000, np.float32), 24000)
    with pytest.raises(ReferenceAudioError, match="silent"):
        load_reference(silent)
    with pytest.raises(VoiceError, match="exaggeration"):
        clone_voice(model, short, exaggeration=3.0)
    assert issubclass(ReferenceAudioError, UserError) and issubclass(VoiceError, UserError)


def test_minimum_length_has_margin(model, tmp_path):
    """The publisher's pieces work (finite outputs) well below the 1.0 s floor."""
    path = tmp_path / "tenth.wav"
    sf.write(path, synthetic_reference(0.1, seed=0), 24000)
    default = model.conds
    try:
        model.prepare_conditionals(str(path), exaggeration=0.5)
        for t in (model.conds.gen["embedding"], model.conds.t3.speaker_emb):
            assert torch.isfinite(t).all()
    finally:
        model.conds = default


def test_save_load_roundtrip(model, tmp_path):
    voice = Voice.from_conditionals(model)
    voice.notes = ("a note",)
    path = voice.save(tmp_path / "voices" / "default.npz")
    assert [p.name for p in path.parent.iterdir()] == ["default.npz"]  # no temp file left
    loaded = Voice.load(path)
    assert loaded.equal(voice)
    assert loaded.notes == ("a note",) and loaded.source == "conds.pt"
    assert loaded.t3_prompt_tokens.dtype == np.int32
    np.testing.assert_array_equal(loaded.cond_emb(1.1), voice.cond_emb(1.1))
    # back to the publisher's Conditionals: the same conditioning
    conds = loaded.to_conditionals()
    np.testing.assert_array_equal(_publisher_cond_emb(model, conds.t3), voice.cond_emb_base)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(path.read_bytes()[:100])
    with pytest.raises(VoiceError, match="cannot be read"):
        Voice.load(bad)
    with pytest.raises(VoiceError, match="does not exist"):
        Voice.load(tmp_path / "nope.npz")
