"""`voxport speak chatterbox --workers N [--stream]`: chunks side by side, the same audio.

The real run (reduced bundle, 2 chunks, a few T3 tokens each so it stays cheap): 2 runtime
children give the very samples 1 in-process bundle gives, and the streamed pieces end to end
are that audio. The CLI's --stream runs over a stand-in (no runtime calls).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conversion.chatterbox import pipeline
from conversion.chatterbox.pipeline import ChatterboxPipeline, SpeakOptions
from conversion.chatterbox.port import PORT
from conversion.cli.main import main
from conversion.core.bundle import load_manifest
from conversion.core.errors import UserError
from conversion.core.runtime.workers import WorkerPool
from conversion.core.speak import SpeakListener

TEXT = "A quick brown fox jumps over a lazy dog by the river. It ran off."  # 2 chunks
COMMON = ["--weights", "random", "--config", "reduced"]
FEW_TOKENS = SpeakOptions(max_new_tokens=6)  # T3's loop is what costs: 6 steps, not 48


@pytest.fixture(scope="module")
def reduced_bundle() -> Path:
    """The reduced bundle already under bundles/ when it loads (any weights do for the
    1-vs-N identity), else the one `speak chatterbox --weights random --config reduced` uses."""
    folder, config = PORT.resolve("random", "reduced", 0)
    path = PORT.bundle_path("reduced", "fp32", weights_tag=PORT.weights_tag(folder))
    try:
        load_manifest(path)
        return path
    except UserError:
        return PORT.ensure_bundle(folder, config, "reduced", "fp32")


class _Pieces(SpeakListener):
    """Keeps each piece of audio it hears."""

    def __init__(self) -> None:
        self.pieces: list[np.ndarray] = []

    def audio(self, piece: np.ndarray) -> None:
        self.pieces.append(piece)


@pytest.mark.slow
def test_two_workers_speak_the_samples_one_worker_speaks(reduced_bundle):
    with WorkerPool(lambda isolate: ChatterboxPipeline(reduced_bundle, isolate=isolate), 1) as one:
        chunks = one.pipeline.chunks(TEXT)
        assert len(chunks) == 2
        options = replace(FEW_TOKENS, seed=3)
        want = one.pipeline.speak(TEXT, options, chunks=chunks, pool=one).audio
    heard = _Pieces()
    with WorkerPool(lambda isolate: ChatterboxPipeline(reduced_bundle, isolate=isolate), 2) as two:
        spoken = two.pipeline.speak(TEXT, options, chunks=chunks, pool=two, listener=heard)
        got, results = spoken.audio, spoken.pieces
    assert want.size > 0 and [r.text for r in results] == [c.text for c in chunks]
    assert got.tobytes() == want.tobytes()  # bit-identical
    assert len(heard.pieces) == 2 and np.concatenate(heard.pieces).tobytes() == got.tobytes()


# -- the CLI over a stand-in ------------------------------------------------------------------


class NoRuntime(ChatterboxPipeline):
    """The bundle's host files; each chunk's audio made up from its index."""

    def __init__(self, bundle, isolate: bool = False) -> None:
        self.path, self.manifest = Path(bundle), load_manifest(bundle, verify=False)
        self.load_host()

    def synthesize(self, chunk, voice, options, seed=0, index=0, **_kw):
        t3 = SimpleNamespace(stopped=False)
        wav = np.linspace(-1.5, 1.5, 2400 * (index + 1), dtype=np.float32)
        return pipeline.ChunkResult(chunk.text, t3, np.zeros(3), None, None, wav)

    def close(self) -> None:
        pass


def test_cli_stream_is_the_whole_file_and_prints_time_to_first_audio(
    reduced_bundle, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(pipeline, "ChatterboxPipeline", NoRuntime)
    monkeypatch.setattr(PORT, "ensure_bundle", lambda *a, **k: reduced_bundle)  # no export check

    def speak(name: str, *flags: str) -> bytes:
        out = tmp_path / name
        assert main(["speak", "chatterbox", TEXT, *COMMON, "-o", str(out), *flags]) == 0
        return out.read_bytes()

    whole = speak("whole.wav", "--workers", "1")
    assert speak("s.wav", "--workers", "2", "--stream") == whole
    lines = capsys.readouterr().out.splitlines()
    assert re.search(r"2 worker\(s\)\); time to first audio [\d.]+ s \(streamed\)", lines[-1])
    assert "time to first audio" in lines[0] and "(whole utterance)" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.wav", "whole.wav"]
