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
    from conversion.chatterbox import voice as chatterbox_voice

    assert audio8_voice.ReferenceAudioError is chatterbox_voice.ReferenceAudioError
    assert audio8_voice.ReferenceAudioError is ReferenceAudioError


def test_a_good_clip_loads_as_float32_mono(tmp_path):
    path = tmp_path / "tone.wav"
    t = np.arange(SR) / SR
    stereo = np.stack([0.3 * np.sin(2 * np.pi * 220 * t)] * 2, axis=1)
    sf.write(path, stereo, SR)
    wav = load_reference(path, SR)
    assert wav.dtype == np.float32 and wav.ndim == 1 and wav.size == SR
