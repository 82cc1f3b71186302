"""gates.asr: text normalisation, WER by hand-counted edits, and offline Whisper end to end.

The end-to-end tests need the ``espeak-ng`` binary (apt package ``espeak-ng``) to make
speech without any model download; they are skipped where it is missing.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import soundfile as sf

from gates import asr

# The Speech Accent Archive's elicitation sentence: common words, clear with espeak-ng.
# (The "quick brown fox" pangram is a poor probe of tiny.en on espeak voices: measured
# WER 0.11-0.44 depending on voice and rate.)
SENTENCE = "please call stella and ask her to bring these things with her from the store"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello, World!", "hello world"),
        ("  Don't   STOP\n", "dont stop"),
        ("a well-known fact.", "a well known fact"),
        ("It costs 1,000.50 dollars; 42 left.", "it costs 1000.50 dollars 42 left"),
        ("\u201cQuoted\u201d \u2014 text\u2026", "quoted text"),
    ],
)
def test_normalize_text(raw, expected):
    assert asr.normalize_text(raw) == expected


@pytest.mark.parametrize(
    ("ref", "hyp", "wer"),
    [
        ("the cat sat", "the bat sat on", 2 / 3),  # 1 substitution + 1 insertion
        ("the cat sat", "The cat, sat.", 0.0),  # normalisation removes case/punctuation
        ("the cat sat on the mat", "the sat on mat", 2 / 6),  # 2 deletions
        ("a b c d", "d c b a", 1.0),  # 4 substitutions; keeping one word aligned also costs 4
        ("one two three", "", 1.0),  # everything deleted
        ("one", "one two three four", 3.0),  # insertions can push WER above 1
        ("", "", 0.0),
        ("", "spurious", 1.0),
    ],
)
def test_word_error_rate_hand_counts(ref, hyp, wer):
    assert asr.word_error_rate(ref, hyp) == pytest.approx(wer)


def test_model_ships_with_the_package():
    path = asr.model_path()
    assert (path / "model.bin").is_file() and (path / "config.json").is_file()


def _espeak(text: str, tmp_path) -> tuple[np.ndarray, int]:
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng not installed (apt-get install espeak-ng)")
    wav_path = tmp_path / "speech.wav"
    subprocess.run([exe, "-v", "en-us", "-s", "160", "-w", str(wav_path), text], check=True)
    wav, sr = sf.read(wav_path, dtype="float32")
    return wav, sr


def test_whisper_understands_synthetic_speech(tmp_path):
    wav, sr = _espeak(SENTENCE, tmp_path)
    assert sr != asr.WHISPER_SR  # exercises the resampling path (espeak-ng writes 22.05 kHz)
    hypothesis = asr.transcribe(wav, sr)
    wer = asr.word_error_rate(SENTENCE, hypothesis)
    print(f"espeak-ng WER {wer:.3f}: {hypothesis!r}")
    assert wer <= 0.2, hypothesis


def test_white_noise_is_not_speech():
    sr = 24000
    noise = np.random.default_rng(0).normal(scale=0.3, size=3 * sr).astype(np.float32)
    wer = asr.wer_of_audio(noise, sr, SENTENCE)
    print(f"white noise WER {wer:.3f}")
    assert wer > 0.8
