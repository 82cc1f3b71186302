"""Chatterbox voices: the default voice from conds.pt, the exaggeration row on the host,
cloning from a reference recording (any rate, any channel count) by the publisher's own
prepare_conditionals, bad references, and the voice file."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import soundfile as sf
import torch

from conversion.chatterbox.config import PUBLISHED, REDUCED
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
from conversion.core.host.buckets import BucketTable


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
    assert voice.notes[: len(info.notes)] == info.notes and voice.source == path.name
    # 2 s is longer than the reduced sizes' S3Gen prompt cap (40 tokens = 1.6 s): said so
    assert any("S3Gen's prompt uses the first 1.6 s" in n for n in voice.notes)
    assert voice.t3_speaker_emb.shape == (1, 256) and voice.xvector.shape == (1, 192)
    assert voice.t3_prompt_tokens.shape == (1, 50)  # T3's prompt: all 2 s at 25 Hz
    assert voice.prompt_tokens.shape == (1, 40) and voice.prompt_feat.shape == (1, 80, 80)
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


def test_configs_fit_the_longest_prompt_and_a_full_chunk():
    """The flow encoder is full attention (no exact chunking): the longest prompt a voice may
    have plus a full T3 chunk must fit its largest bucket, two mel frames per token the
    estimator's, the chunk's frames the vocoder's; published, the cap is the publisher's 10 s."""
    from chatterbox.tts import ChatterboxTTS

    for config in (PUBLISHED, REDUCED):
        tokens = config.prompt_tokens_max + config.speech_budget
        assert tokens <= max(config.encoder_tokens), config.name
        assert 2 * tokens <= max(config.estimator_frames), config.name
        assert 2 * config.speech_budget <= max(config.vocoder_frames), config.name
        assert config.flow_fit_problems() == []
    assert PUBLISHED.prompt_samples_max == ChatterboxTTS.DEC_COND_LEN == 10 * 24000
    assert (REDUCED.prompt_tokens_max, REDUCED.speech_budget, max(REDUCED.encoder_tokens)) == (
        40,
        48,
        96,
    )
    # one token more than the largest bucket is reported
    over = dataclasses.replace(REDUCED, prompt_tokens_max=49)
    assert any("97 tokens > the largest encoder bucket 96" in p for p in over.flow_fit_problems())


def test_long_reference_is_cut_as_the_publisher_does(model, tmp_path):
    """11 s: T3's prompt is the first 6 s (150 tokens); S3Gen's is cut at the reduced cap
    (40 tokens, 1.6 s) with the matching 80 prompt-mel frames, as the publisher's
    prepare_conditionals cuts its reference, so prompt + a full chunk fits the largest
    encoder bucket."""
    path = tmp_path / "long.wav"
    sf.write(path, synthetic_reference(11.0, seed=2), 24000)
    voice = clone_voice(model, path, prompt_tokens_max=REDUCED.prompt_tokens_max)
    assert any("first 1.6 s" in n and "first 6 s" in n for n in voice.notes)
    assert voice.t3_prompt_tokens.shape == (1, 150)  # 6 s at 25 Hz
    assert voice.prompt_tokens.shape == (1, REDUCED.prompt_tokens_max)
    assert voice.prompt_feat.shape == (1, 2 * REDUCED.prompt_tokens_max, 80)
    n = voice.prompt_token_len + REDUCED.speech_budget
    assert BucketTable([{"N": b} for b in REDUCED.encoder_tokens]).select(N=n)["N"] == 96
    assert BucketTable([{"F": b} for b in REDUCED.estimator_frames]).select(F=2 * n)["F"] == 192
    # the publisher's own prepare_conditionals on the reference cut at the cap: the same voice
    cut = tmp_path / "cut.wav"
    wav, _ = load_reference(path)
    sf.write(cut, wav[: REDUCED.prompt_tokens_max * 960], 24000, subtype="FLOAT")
    default = model.conds
    try:
        model.prepare_conditionals(str(cut), exaggeration=0.5)
        np.testing.assert_array_equal(voice.prompt_tokens, model.conds.gen["prompt_token"].numpy())
        np.testing.assert_array_equal(voice.prompt_feat, model.conds.gen["prompt_feat"].numpy())
    finally:
        model.conds = default


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


def _synthetic_voice(prompt_tokens: int) -> Voice:
    rng = np.random.default_rng(0)
    return Voice(
        t3_speaker_emb=rng.standard_normal((1, 256)),
        t3_prompt_tokens=rng.integers(0, 6561, (1, 10)),
        cond_emb_base=rng.standard_normal((1, 34, 1024)),
        emotion_adv_weight=rng.standard_normal(1024),
        exaggeration=0.5,
        prompt_tokens=rng.integers(0, 6561, (1, prompt_tokens)),
        prompt_feat=rng.standard_normal((1, 2 * prompt_tokens + 1, 80)),
        xvector=rng.standard_normal((1, 192)),
        source="big.npz",
    )


def test_a_voice_over_the_bundles_prompt_cap_is_refused_before_compute():
    """A voice file cloned for the published sizes (up to 250 prompt tokens) on a reduced
    bundle: a one-line VoiceError naming the fix, from speak and synthesize, before T3 runs."""
    from types import SimpleNamespace

    from conversion.chatterbox.pipeline import ChatterboxPipeline, SpeakOptions
    from conversion.chatterbox.text import TextChunk

    fake = SimpleNamespace(config=REDUCED, session=None)  # no graph can run
    fake.check_voice = lambda v: ChatterboxPipeline.check_voice(fake, v)
    big = _synthetic_voice(REDUCED.prompt_tokens_max + 1)
    chunk = TextChunk("Hi.", np.array([255, 10, 0], np.int32))
    for call in (
        lambda: ChatterboxPipeline.check_voice(fake, big),
        lambda: ChatterboxPipeline.speak(fake, "Hi.", SpeakOptions(voice=big), chunks=[chunk]),
        lambda: ChatterboxPipeline.synthesize(fake, chunk, big, SpeakOptions()),
    ):
        with pytest.raises(VoiceError, match=r"big\.npz has 41 S3Gen prompt tokens.*at most 40"):
            call()
    ChatterboxPipeline.check_voice(fake, _synthetic_voice(REDUCED.prompt_tokens_max))


def test_cap_prompt_cuts_tokens_and_frames_together():
    from conversion.chatterbox.voice import cap_prompt

    voice = _synthetic_voice(45)
    cut = cap_prompt(voice, 40)
    assert cut.prompt_tokens.shape == (1, 40) and cut.prompt_feat.shape == (1, 80, 80)
    np.testing.assert_array_equal(cut.prompt_tokens, voice.prompt_tokens[:, :40])
    np.testing.assert_array_equal(cut.prompt_feat, voice.prompt_feat[:, :80])
    assert cap_prompt(voice, 45) is voice
