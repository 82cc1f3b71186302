"""`voxport tokenize|voice chatterbox` and the host files a bundle carries for a device host."""

import json
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from conversion.chatterbox import host_files, weights
from conversion.chatterbox.config import REDUCED
from conversion.chatterbox.export import TOKENIZER
from conversion.chatterbox.port import PORT
from conversion.chatterbox.text import TextTokenizer
from conversion.chatterbox.voice import Voice, clone_voice
from conversion.cli.main import main

COMMON = ["--weights", "random", "--config", "reduced"]
TEXT = "Hello there. This sentence is long enough to need two chunks at the reduced budget, surely!"


def test_tokenize_prints_the_pipelines_chunks(capsys):
    assert main(["tokenize", "chatterbox", TEXT, *COMMON]) == 0
    doc = json.loads(capsys.readouterr().out)
    folder = PORT.resolve_weights("random", REDUCED, 0)
    want = TextTokenizer(folder / TOKENIZER).chunks(TEXT, REDUCED.text_budget)
    assert doc["model"] == "chatterbox" and doc["text_budget"] == REDUCED.text_budget
    assert len(doc["chunks"]) == len(want) >= 2
    for got, w in zip(doc["chunks"], want, strict=True):
        assert got["text"] == w.text
        assert got["ids"] == w.ids.tolist()
        assert got["ids"][0] == weights.START_TEXT and got["ids"][-1] == weights.STOP_TEXT


def test_tokenize_empty_text_is_a_one_line_error(capsys):
    assert main(["tokenize", "chatterbox", "  ", *COMMON]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


@pytest.fixture
def reference(tmp_path) -> Path:
    path = tmp_path / "ref.wav"
    sf.write(path, weights.synthetic_reference(2.0, seed=4, sample_rate=24_000), 24_000)
    return path


def test_voice_writes_the_clone_as_npz(tmp_path, reference, capsys):
    out = tmp_path / "voice.npz"
    assert main(["voice", "chatterbox", "--ref", str(reference), "-o", str(out), *COMMON]) == 0
    assert "wrote" in capsys.readouterr().out
    got = Voice.load(out)
    model = weights.load_model(PORT.resolve_weights("random", REDUCED, 0), REDUCED)
    assert got.equal(clone_voice(model, reference))
    with np.load(out) as z:  # what the Swift host reads: no pickles, the format tag
        assert str(z["format"]) == "voxport-chatterbox-voice/1"
        assert {"cond_emb_base", "emotion_adv_weight", "prompt_feat", "xvector"} <= set(z.files)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


@pytest.mark.parametrize("case", ["missing", "not_audio", "unwritable", "not_npz", "exaggeration"])
def test_voice_bad_input_is_one_line_before_compute(tmp_path, reference, capsys, monkeypatch, case):
    def no_model(*a, **k):
        raise AssertionError("the model must not load for bad input")

    monkeypatch.setattr(weights, "load_model", no_model)
    ref, out, extra = str(reference), tmp_path / "voice.npz", []
    if case == "missing":
        ref = str(tmp_path / "nope.wav")
    elif case == "not_audio":
        (tmp_path / "bad.wav").write_bytes(b"not a wav")
        ref = str(tmp_path / "bad.wav")
    elif case == "unwritable":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "voice.npz"
    elif case == "not_npz":
        out = tmp_path / "voice.pt"
    else:
        extra = ["--exaggeration", "3"]
    assert main(["voice", "chatterbox", "--ref", ref, "-o", str(out), *COMMON, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("voxport: error:") and "\n" not in err, err
    assert not out.exists()


def test_host_files_carry_the_publishers_licence_and_a_readme():
    licence = metadata.distribution("chatterbox-tts").read_text("licenses/LICENSE")
    assert host_files.LICENSE_SOURCE.read_text() == licence
    assert licence.startswith("MIT License")
    added = {}

    class Writer:
        def add_file(self, src, name=None):
            added[name] = Path(src).read_bytes()

    host_files.add_host_files(Writer())
    assert set(added) == set(host_files.HOST_FILES)
    assert added["LICENSE"].decode() == licence
    assert b"voxport tokenize chatterbox" in added["README.md"]
    assert PORT.layout >= 2  # bundles from before the host files (layout 1) are re-exported
