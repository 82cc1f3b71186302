"""`voxport speak audio8_tts`: a failed run leaves no hidden partial wav, and a run whose first
frame drew the end of speech (nothing decoded) reports that instead of crashing."""

import types
from pathlib import Path

import numpy as np
import pytest

from conversion.audio8_tts import cli
from conversion.cli.main import main
from conversion.cli.speak import spoken_line
from conversion.core.speak import SpeakResult


class _Fails:
    """An Audio8Pipeline whose speak hands on one chunk of audio (streamed), then fails."""

    sample_rate = 24000

    def __init__(self, _bundle, isolate=False):
        self.codec_config = types.SimpleNamespace(sample_rate=24000)
        self.session = None

    def close(self):
        pass

    def speak(self, text, options, *, listener=None, pool=None):
        listener.audio(np.zeros(2400, np.float32))  # streamed: on disk before the failure
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
    result = SpeakResult(np.zeros(0, np.float32), 24000, [], "1 piece(s), 0 frames")
    line = spoken_line(Path("x.wav"), result, 1.5, None, stream=True, workers=1)
    assert "no audio: nothing was spoken" in line
    assert line.startswith("wrote x.wav: 0.00 s of audio in 1.5 s") and "0 frames" in line
    result.audio = np.zeros(6000, np.float32)
    assert "time to first audio 0.25 s (streamed)" in spoken_line(
        Path("x.wav"), result, 1.5, 0.25, True, 1
    )
