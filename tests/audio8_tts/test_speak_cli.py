"""`voxport speak audio8_tts`: a failed run leaves no hidden partial wav, and a run whose first
frame drew the end of speech (nothing decoded) reports that instead of crashing."""

import types
from pathlib import Path

import numpy as np
import pytest

from conversion.audio8_tts import cli
from conversion.cli.main import main


class _Fails:
    """An Audio8Pipeline whose speak writes one chunk of audio, then fails."""

    def __init__(self, _bundle, isolate=False):
        self.codec_config = types.SimpleNamespace(sample_rate=24000)
        self.session = None

    def close(self):
        pass

    def speak(self, text, voice, seed, stream, on_audio, on_frame, pool=None):
        on_audio(np.zeros(2400, np.float32))
        raise RuntimeError("the runtime died mid-utterance")


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_speak_leaves_no_partial_file(tmp_path, monkeypatch, stream, workers):
    import conversion.audio8_tts.pipeline as pipeline

    monkeypatch.setattr(pipeline, "Audio8Pipeline", _Fails)
    monkeypatch.setattr(cli.PORT, "resolve_weights", lambda *a, **k: tmp_path / "weights")
    monkeypatch.setattr(cli.PORT, "ensure_bundle", lambda *a, **k: tmp_path / "bundle")
    out = tmp_path / "out" / "x.wav"
    argv = ["speak", "audio8_tts", "Hello.", "-o", str(out), "--config", "reduced", "--workers"]
    argv.append(workers)
    with pytest.raises(RuntimeError, match="mid-utterance"):
        main(argv + (["--stream"] if stream else []))
    # neither x.wav nor .x.wav.partial, nor the folder made for them (issue 21: a failed run
    # removes the parents it made for -o)
    assert not out.parent.exists()


def test_nothing_decoded_is_said_not_crashed():
    piece = types.SimpleNamespace(
        decode=types.SimpleNamespace(clamped=0),
        frames=types.SimpleNamespace(codes=np.zeros((10, 0), np.int64)),
    )
    result = types.SimpleNamespace(
        audio=np.zeros(0, np.float32), seconds=1.5, first_audio_s=None, pieces=[piece]
    )
    line = cli.spoken_line(Path("x.wav"), result, 24000, stream=True)
    assert "no audio: the end of speech came at the first frame" in line
    assert line.startswith("wrote x.wav: 0.00 s of audio in 1.5 s") and "0 frames" in line
    result.first_audio_s = 0.25
    assert "time to first audio 0.25 s (streamed)" in cli.spoken_line(
        Path("x.wav"), result, 24000, True
    )
