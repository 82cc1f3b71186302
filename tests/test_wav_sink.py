"""`WavSink`, where `voxport speak` puts a pipeline's audio: streamed or whole, the same bytes
as one `write_wav` of every piece joined, and no file at all when the speak fails."""

import time

import numpy as np
import pytest

from conversion.core.host.audio_io import WavSink, write_wav
from conversion.core.speak import SpeakListener, SpeakResult

SR = 24_000


def _pieces() -> list[np.ndarray]:
    rng = np.random.default_rng(3)  # over [-1, 1]: the clipping is part of what must agree
    return [rng.uniform(-1.2, 1.2, n).astype(np.float32) for n in (0, 2400, 4801, 7)]


class _Pipeline:
    """A pipeline that hands its listener fixed pieces (failing after the first with audio
    when `fails`) and returns them joined, as every `SpeakingPipeline` does."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails

    def speak(self, listener: SpeakListener) -> SpeakResult:
        pieces = _pieces()
        for piece in pieces:
            listener.audio(piece)
            if self.fails and piece.size:
                raise RuntimeError("the runtime died mid-utterance")
        return SpeakResult(np.concatenate(pieces), SR)


class _Into(SpeakListener):
    def __init__(self, sink: WavSink) -> None:
        self.sink = sink

    def audio(self, piece: np.ndarray) -> None:
        self.sink.audio(piece)


def _speak(target, stream: bool, fails: bool = False) -> WavSink:
    with WavSink(target, SR, stream, time.perf_counter()) as sink:
        result = _Pipeline(fails).speak(_Into(sink))
        sink.finish(result.audio)
    return sink


def test_streamed_and_whole_are_the_bytes_of_one_write(tmp_path):
    want = write_wav(tmp_path / "want.wav", np.concatenate(_pieces()), SR).read_bytes()
    for stream in (False, True):
        sink = _speak(tmp_path / f"{stream}.wav", stream)
        assert (tmp_path / f"{stream}.wav").read_bytes() == want, stream
        assert sink.first_audio_s is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["False.wav", "True.wav", "want.wav"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_speak_leaves_no_file(tmp_path, stream):
    with pytest.raises(RuntimeError, match="mid-utterance"):
        _speak(tmp_path / "x.wav", stream, fails=True)
    assert list(tmp_path.iterdir()) == []  # neither x.wav nor its hidden .partial
