"""Audio8 reference clips: a clip that cannot make a voice is refused with the one
`ReferenceAudioError` both cloning models raise (a `UserError`: one line, exit 2)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from conversion.audio8_tts.voice import load_reference
from conversion.core.errors import ReferenceAudioError, UserError

SR = 16_000


def test_bad_references_raise_the_shared_error(tmp_path):
    with pytest.raises(ReferenceAudioError, match="does not exist"):
        load_reference(tmp_path / "missing.wav", SR)
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    with pytest.raises(ReferenceAudioError, match="could not be read as audio.*WAV or FLAC"):
        load_reference(text, SR)
    short = tmp_path / "short.wav"
    sf.write(short, 0.1 * np.ones(SR // 10, np.float32), SR)
    with pytest.raises(ReferenceAudioError, match=r"0\.10 s long"):
        load_reference(short, SR)
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(SR, np.float32), SR)
    with pytest.raises(ReferenceAudioError, match="silent"):
        load_reference(silent, SR)
    assert issubclass(ReferenceAudioError, UserError)


def test_both_models_raise_the_same_class():
    from conversion.audio8_tts import voice as audio8_voice
    from conversion.s3gen import reference as s3gen_reference  # Chatterbox's and Turbo's reader

    assert audio8_voice.ReferenceAudioError is s3gen_reference.ReferenceAudioError
    assert audio8_voice.ReferenceAudioError is ReferenceAudioError


def test_a_good_clip_loads_as_float32_mono(tmp_path):
    path = tmp_path / "tone.wav"
    t = np.arange(SR) / SR
    stereo = np.stack([0.3 * np.sin(2 * np.pi * 220 * t)] * 2, axis=1)
    sf.write(path, stereo, SR)
    wav = load_reference(path, SR)
    assert wav.dtype == np.float32 and wav.ndim == 1 and wav.size == SR


def test_an_empty_file_is_named_empty(tmp_path):
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    with pytest.raises(ReferenceAudioError, match=r"empty file \(0 bytes\)"):
        load_reference(empty, SR)


def test_a_five_minute_clip_is_refused_from_its_header(tmp_path, monkeypatch):
    """Refused before any of its 5 minutes is decoded or resampled (the header has its length)."""
    import librosa

    path = tmp_path / "long.wav"
    sf.write(path, 0.1 * np.ones(300 * 8_000, np.float32), 8_000)
    decoded = []
    monkeypatch.setattr(librosa, "load", lambda *a, **k: decoded.append(a) or (np.zeros(0), SR))
    with pytest.raises(ReferenceAudioError, match=r"300\.00 s long.*0\.5-30 s"):
        load_reference(path, 44_100)
    assert decoded == []


def test_8khz_stereo_is_downmixed_and_resampled(tmp_path):
    """Each channel's tone survives at half its level (the mean of the channels), at 44.1 kHz."""
    rate, seconds = 8_000, 2.0
    t = np.arange(int(rate * seconds)) / rate
    left, right = 0.3 * np.sin(2 * np.pi * 200 * t), 0.3 * np.sin(2 * np.pi * 500 * t)
    path = tmp_path / "stereo8k.wav"
    sf.write(path, np.stack([left, right], axis=1), rate, subtype="FLOAT")
    wav = load_reference(path, 44_100)
    assert wav.dtype == np.float32 and wav.shape == (int(44_100 * seconds),)
    spectrum = np.abs(np.fft.rfft(wav)) * 2 / wav.size  # amplitude per 0.5 Hz bin
    freqs = np.fft.rfftfreq(wav.size, 1 / 44_100)
    for f in (200, 500):
        assert spectrum[np.argmin(np.abs(freqs - f))] == pytest.approx(0.15, abs=0.01)
    assert spectrum[freqs > 4_100].max() < 0.01  # nothing above the source's Nyquist
