"""`voxport speak|tokenize|voice chatterbox_turbo` on seeded random weights, reduced sizes:
the speak path end to end (chunks, seeds, workers), the host verbs, and bad input refused in
one line before any export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from conversion.chatterbox_turbo.config import REDUCED
from conversion.chatterbox_turbo.voice import TurboVoice
from conversion.cli.main import main
from conversion.s3gen.snapshot import synthetic_reference

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")
COMMON = ["--weights", "random", "--config", "reduced"]
LONG = (
    "Hello there. This sentence is long enough to need two chunks at the reduced budget, "
    "surely! And a third sentence follows it, so the split has work to do."
)


def _speak(tmp: Path, text: str, out: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [VOXPORT, "speak", "chatterbox_turbo", text, *COMMON, "-o", str(tmp / out), *extra],
        cwd=tmp, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def spoken(tmp_path_factory):
    """One checkout: the long text spoken at seed 0 by one worker and by two, and at seed 1."""
    tmp = tmp_path_factory.mktemp("turbo-speak")
    runs = {
        "one": _speak(tmp, LONG, "one.wav", "--workers", "1"),
        "two": _speak(tmp, LONG, "two.wav", "--workers", "2"),
        "seed1": _speak(tmp, LONG, "seed1.wav", "--workers", "1", "--seed", "1"),
    }
    for name, proc in runs.items():
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
    return tmp, runs


def test_speak_splits_long_text_and_every_chunk_is_spoken(spoken):
    tmp, runs = spoken
    wav, rate = sf.read(tmp / "one.wav", dtype="float32")
    assert rate == 24_000
    assert "2 chunk(s)" in runs["one"].stdout + runs["one"].stderr
    # each chunk is at least its three silence tokens: 3 tokens x 960 samples, less the fade
    assert wav.size >= 2 * 3 * 960 and np.isfinite(wav).all() and np.abs(wav).max() > 0


def test_speak_is_the_same_for_any_worker_count_and_moves_with_the_seed(spoken):
    tmp, _ = spoken
    one, two, seed1 = (
        sf.read(tmp / f, dtype="float32")[0] for f in ("one.wav", "two.wav", "seed1.wav")
    )
    assert np.array_equal(one, two)
    assert one.shape != seed1.shape or not np.array_equal(one, seed1)


def test_a_short_reference_is_one_line_before_export(tmp_path):
    ref = tmp_path / "short.wav"
    sf.write(ref, synthetic_reference(3.0, seed=4), 24_000)  # the publisher asserts > 5 s
    proc = _speak(tmp_path, "Hi.", "x.wav", "--ref", str(ref))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("voxport: error: ") and "5.0 s" in lines[-1], lines
    assert not (tmp_path / "bundles").exists() and not (tmp_path / "x.wav").exists()


@pytest.mark.parametrize(
    ("flag", "value"), [("--top-p", "0"), ("--top-k", "-1"), ("--temperature", "0")]
)
def test_bad_sampling_flags_are_one_line_before_anything_loads(tmp_path, capsys, flag, value):
    out = tmp_path / "x.wav"
    code = main(["speak", "chatterbox_turbo", "Hi.", *COMMON, flag, value, "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and flag in err[0], err
    assert not out.exists()


def test_tokenize_gives_the_publishers_ids(capsys, turbo_model):
    assert main(["tokenize", "chatterbox_turbo", LONG, *COMMON]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "chatterbox_turbo" and doc["text_budget"] == REDUCED.text_budget
    assert len(doc["chunks"]) >= 2
    from chatterbox.tts_turbo import punc_norm

    for chunk in doc["chunks"]:  # the publisher's own normaliser and AutoTokenizer
        assert len(chunk["ids"]) <= REDUCED.text_budget
        assert chunk["ids"] == turbo_model.tokenizer(punc_norm(chunk["text"]))["input_ids"]
    assert " ".join(c["text"] for c in doc["chunks"]).replace("  ", " ") == punc_norm(LONG)


def test_voice_file_holds_the_publishers_conditionals(tmp_path, capsys, turbo_model):
    ref = tmp_path / "ref.wav"
    sf.write(ref, synthetic_reference(6.0, seed=4), 24_000)
    out = tmp_path / "voice.npz"
    assert main(["voice", "chatterbox_turbo", "--ref", str(ref), "-o", str(out), *COMMON]) == 0
    got = TurboVoice.load(out)
    saved = turbo_model.conds
    try:  # the publisher's own conditionals, in memory
        turbo_model.prepare_conditionals(str(ref))
        conds = turbo_model.conds
    finally:
        turbo_model.conds = saved
    np.testing.assert_array_equal(got.t3_speaker_emb, conds.t3.speaker_emb.numpy().reshape(1, -1))
    np.testing.assert_array_equal(
        got.t3_prompt_tokens, conds.t3.cond_prompt_speech_tokens.numpy().reshape(1, -1)
    )
    np.testing.assert_array_equal(got.prompt_tokens, conds.gen["prompt_token"].numpy())
    np.testing.assert_array_equal(got.prompt_feat, conds.gen["prompt_feat"].numpy())
    np.testing.assert_array_equal(got.xvector, conds.gen["embedding"].numpy())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_voice_file_of_another_model_is_refused(tmp_path):
    path = tmp_path / "v.npz"
    np.savez(path, format=np.array("voxport-chatterbox-voice/1"))
    with pytest.raises(Exception, match="not a Chatterbox Turbo voice file"):
        TurboVoice.load(path)


def test_a_reduced_snapshot_refuses_the_published_config(turbo_snapshot, capsys, tmp_path):
    code = main([
        "speak", "chatterbox_turbo", "Hi.", "--weights", str(turbo_snapshot),
        "--config", "published", "-o", str(tmp_path / "x.wav"),
    ])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "--config reduced" in err[-1], err
