"""The bundle's host files (what the Swift host reads instead of the tokenizer and configs), the
`tokenize` and `voice` verbs, and the Swift fixtures' writer."""

import json

import numpy as np
import pytest
import soundfile as sf

from conversion.audio8_tts import host_files, swift_fixtures
from conversion.audio8_tts.codec.config import REDUCED as CODEC_REDUCED
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.port import PORT
from conversion.audio8_tts.prompt import build_prompt, clean_text, split_text
from conversion.audio8_tts.voice import Voice, transcript_ids
from conversion.cli.main import main

COMMON = ["--weights", "random", "--config", "reduced"]


@pytest.fixture(scope="module")
def tokenizer():
    return swift_fixtures.stand_in_tokenizer(REDUCED)


def _row0(table: dict, ids: list[int], voice: Voice | None, tok) -> list[int]:
    p = table["prompt"]
    if voice is None:
        return p["plain_prefix"] + ids + p["tail"]
    frames = (voice.codes[0] + table["tokens"]["semantic_begin"]).tolist()
    head = p["reference_prefix"] + voice.text_ids.tolist() + p["speech_header"]
    return head + frames + p["suffix_head"] + ids + p["tail"]


@pytest.mark.parametrize("text", ["Hello there.", "  a  b\tc ", "日本語"])
@pytest.mark.parametrize("ref", [None, "A clip.", "<|speaker:2|> tagged"])
def test_host_table_segments_rebuild_the_pipeline_prompt(tokenizer, text, ref):
    table = host_files.host_table(tokenizer, REDUCED, CODEC_REDUCED)
    ids = tokenizer.encode(clean_text(text), add_special_tokens=False).ids
    voice = None
    if ref is not None:
        codes = swift_fixtures.formula_codes(4)
        voice = Voice(codes, ref, "t", transcript_ids(tokenizer, ref))
    want = build_prompt(tokenizer, REDUCED, text, None if voice is None else voice.codes, ref)
    assert _row0(table, ids, voice, tokenizer) == want[0].tolist()


def test_host_table_numbers(tokenizer):
    t = json.loads(host_files.host_table_bytes(tokenizer, REDUCED, CODEC_REDUCED))
    assert t["format"] == host_files.HOST_TABLE_FORMAT
    assert t["tokens"]["eos"] == REDUCED.eos_token_id == 4400
    assert t["frame"]["prefill_window"] == 32 and t["frame"]["ras_window"] == 10
    assert t["frame"]["max_new_frames"] == 128  # min(512, 512 // 4), the pipeline's budget
    assert t["codec"]["book_sizes"] == [4096] + [1024] * 9
    assert t["codec"]["frame_size"] == 2048 and t["codec"]["sample_rate"] == 44_100
    assert PORT.layout >= 2  # the host tables came with layout 2 (3: faster graphs, same files)


def test_tokenize_prints_the_pipelines_pieces(capsys, tokenizer):
    text = "Hello there. How are you today?"
    assert main(["tokenize", "audio8_tts", text, *COMMON]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == "audio8_tts" and doc["max_frames"] == 128
    pieces = split_text(tokenizer, REDUCED, text, 128)
    assert [c["text"] for c in doc["chunks"]] == pieces == ["Hello there.", "How are you today?"]
    for c in doc["chunks"]:
        assert c["ids"] == tokenizer.encode(c["text"], add_special_tokens=False).ids
        assert c["prompt"] == build_prompt(tokenizer, REDUCED, c["text"])[0].tolist()


def _voice_error(argv, capsys, monkeypatch):
    def no_export(*_a, **_k):
        raise AssertionError("voice exported a bundle before checking its input")

    monkeypatch.setattr(PORT, "ensure_bundle", no_export)
    code = main(argv)
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("voxport: error:")]
    return code, err


def _wav(path, seconds=2.0):
    sf.write(path, 0.1 * np.sin(np.arange(int(seconds * 16_000)) / 5).astype(np.float32), 16_000)
    return path


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("missing", "does not exist"),
        ("garbage", "could not be read as audio"),
        ("no_text", "--ref-text is required"),
        ("blank_text", "--ref-text is required"),
        ("unwritable", "cannot create"),
    ],
)
def test_voice_bad_input_is_one_line_before_compute(tmp_path, capsys, monkeypatch, case, needle):
    ref, out = _wav(tmp_path / "ref.wav"), tmp_path / "voice.npz"
    text = ["--ref-text", "hello"]
    if case == "missing":
        ref = tmp_path / "nope.wav"
    elif case == "garbage":
        ref = tmp_path / "bad.wav"
        ref.write_bytes(b"not a wav at all" * 10)
    elif case == "no_text":
        text = []
    elif case == "blank_text":
        text = ["--ref-text", "   "]
    elif case == "unwritable":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "voice.npz"
    argv = ["voice", "audio8_tts", "--ref", str(ref), *text, "-o", str(out), *COMMON]
    code, err = _voice_error(argv, capsys, monkeypatch)
    assert code == 2 and len(err) == 1 and needle in err[0], err
    assert not out.exists()


def test_voice_file_is_written_atomically(tmp_path, monkeypatch):
    v = Voice(swift_fixtures.formula_codes(3), "hi", "x", np.array([1, 2], np.int32))
    target = tmp_path / "v.npz"
    v.save(target)
    back = Voice.load(target)
    assert back.text_ids.tolist() == [1, 2] and back.codes.tolist() == v.codes.tolist()

    def broken(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError):
        v.save(tmp_path / "w.npz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.npz"]  # no partial file left


def test_swift_fixtures_are_small_and_deterministic(tmp_path):
    from conversion.fixtures.plumbing import pinned_zip_clock

    digests = []
    for run in ("a", "b"):
        swift_fixtures.write_fixtures(tmp_path / run, pinned_zip_clock)
        files = sorted(p for p in (tmp_path / run).rglob("*") if p.is_file())
        digests.append({str(p.relative_to(tmp_path / run)): p.read_bytes() for p in files})
    assert digests[0] == digests[1]
    assert sum(len(b) for b in digests[0].values()) <= 5_000_000


@pytest.mark.slow
def test_voice_registers_through_the_bundle(tmp_path, monkeypatch, capsys):
    bundle = tmp_path / "bundle"
    assert main(["export", "audio8_tts", *COMMON, "--output-dir", str(bundle)]) == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert set(host_files.HOST_FILES) <= set(manifest["meta"]["files"])
    assert manifest["key"]["layout"] >= 2  # a bundle with the host files
    monkeypatch.setattr(PORT, "ensure_bundle", lambda *_a, **_k: bundle)
    out = tmp_path / "voice.npz"
    ref = _wav(tmp_path / "ref.wav", 0.9)
    argv = ["voice", "audio8_tts", "--ref", str(ref), "--ref-text", " Hi  there ", "-o", str(out)]
    assert main([*argv, *COMMON]) == 0
    v = Voice.load(out)
    # the clip is cut to the reduced encoder's bucket (8 frames), as registration says it does
    frames = min(-(-int(0.9 * 44_100) // 2048), CODEC_REDUCED.encoder_frames)
    assert v.text == "Hi there" and v.codes.shape == (10, frames)
    tok = swift_fixtures.stand_in_tokenizer(REDUCED)
    assert v.text_ids.tolist() == transcript_ids(tok, "Hi there").tolist()
