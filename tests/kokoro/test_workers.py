"""`voxport speak kokoro --workers N [--stream]` and the bench's worker figures.

The real runs (reduced bundle, 3 chunks): 2 workers streamed write the very wav bytes 1 worker
writes whole, and the streamed run prints a time to first audio before its end. The cheap runs
swap the runtime for a stand-in (`NoRuntime`: the bundle's host files, made-up chunk audio)
to check the stream's pauses, a failed stream and the bench figures without minutes of calls.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conversion.cli.main import main
from conversion.core.bundle import load_manifest
from conversion.core.runtime.timed_session import TimedSession
from conversion.core.runtime.workers import WorkerPool
from conversion.kokoro import bench, host, pipeline
from conversion.kokoro.port import PORT
from tests.kokoro.test_bench import CountingSession, StandInBundle, _cases

VOXPORT = os.path.join(os.path.dirname(sys.executable), "voxport")
TEXT = "Hello. Thank you. Come here."  # 3 chunks (the reduced gate's short sentences)
REDUCED = ["--config", "reduced"]
SPOKEN = re.compile(
    r"in (?P<total>[\d.]+) s .*time to first audio (?P<first>[\d.]+) s \((?P<how>.+)\)"
)


@pytest.fixture(scope="module")
def reduced_bundle() -> Path:
    """The reduced bundle `speak kokoro --config reduced` uses (reused when current)."""
    folder, config = PORT.resolve(None, "reduced", 0)
    return PORT.ensure_bundle(folder, config, "reduced", "fp32")


@pytest.fixture(scope="module")
def spoken(reduced_bundle, tmp_path_factory):
    """TEXT spoken twice: 1 worker written whole, 2 workers streamed."""
    tmp = tmp_path_factory.mktemp("kokoro-workers")

    def speak(name: str, *flags: str) -> tuple[Path, subprocess.CompletedProcess]:
        out = tmp / f"{name}.wav"
        argv = ["speak", "kokoro", TEXT, *REDUCED, "--bundle", str(reduced_bundle), "-o", str(out)]
        proc = subprocess.run(
            [VOXPORT, *argv, *flags], capture_output=True, text=True, timeout=1800, check=False
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return out, proc

    return speak("one", "--workers", "1"), speak("two", "--workers", "2", "--stream")


@pytest.mark.slow
def test_two_workers_streamed_write_the_bytes_one_worker_writes_whole(spoken):
    (one, _), (two, proc) = spoken
    assert "3 chunk(s), 2 worker(s)" in proc.stdout
    assert two.read_bytes() == one.read_bytes()
    assert not list(two.parent.glob(".*"))  # the hidden partial file was renamed


@pytest.mark.slow
def test_stream_prints_time_to_first_audio_before_the_end(spoken):
    (_, whole), (_, streamed) = spoken
    first = SPOKEN.search(streamed.stdout)
    assert first is not None, streamed.stdout
    assert first["how"] == "streamed"
    assert float(first["first"]) < float(first["total"])  # chunk 1 on disk before chunk 3
    assert SPOKEN.search(whole.stdout)["how"] == "whole utterance"


# -- stand-ins: no runtime calls ---------------------------------------------------------------


class NoRuntime(pipeline.KokoroPipeline):
    """The bundle's host files; each chunk's audio made up from its seed. The chunk of seed 1
    is "split again" into two parts (two results, a pause between them); seed `fail` raises."""

    fail: int | None = None
    threads: set[str] = set()

    def __init__(self, bundle, isolate: bool = False) -> None:
        self.path, self.manifest = Path(bundle), load_manifest(bundle, verify=False)
        self.load_host()
        self.session = TimedSession(CountingSession())

    def _speak_chunk(self, chunk, pack, speed, seed, fallback=None):
        NoRuntime.threads.add(threading.current_thread().name)
        if seed == self.fail:
            raise RuntimeError(f"boom at seed {seed}")
        parts = 2 if seed == 1 else 1
        return [
            pipeline.ChunkResult(np.full(600 * (seed + 1), 0.1 * (j + 1), np.float32), None, {}, 0)
            for j in range(parts)
        ]

    def close(self) -> None:
        pass


def _speak(monkeypatch, bundle: Path, out: Path, *flags: str) -> int:
    monkeypatch.setattr(pipeline, "KokoroPipeline", NoRuntime)
    argv = ["speak", "kokoro", TEXT, *REDUCED, "--bundle", str(bundle), "-o", str(out), *flags]
    return main(argv)


def test_stream_is_the_whole_file_pauses_and_split_chunks_included(
    reduced_bundle, tmp_path, monkeypatch, capsys
):
    NoRuntime.threads = set()
    assert _speak(monkeypatch, reduced_bundle, tmp_path / "whole.wav", "--workers", "1") == 0
    assert NoRuntime.threads == {threading.current_thread().name}
    assert (
        _speak(monkeypatch, reduced_bundle, tmp_path / "s.wav", "--workers", "2", "--stream") == 0
    )
    assert any(t.startswith("voxport-worker-") for t in NoRuntime.threads)  # the pool spoke
    assert (tmp_path / "s.wav").read_bytes() == (tmp_path / "whole.wav").read_bytes()
    out = capsys.readouterr().out
    assert "4 chunk(s), 2 worker(s)); time to first audio" in out and "(streamed)" in out
    # 4 results (chunk 1 split in two), 3 pauses of 0.2 s between them
    audio = host.join_audio([np.zeros(600), np.zeros(1200), np.zeros(1200), np.zeros(1800)])
    assert (tmp_path / "s.wav").stat().st_size == 44 + 2 * audio.size


def test_failed_stream_leaves_no_file(reduced_bundle, tmp_path, monkeypatch):
    monkeypatch.setattr(NoRuntime, "fail", 2)  # the last chunk, after two were written
    with pytest.raises(RuntimeError, match="boom at seed 2"):
        _speak(monkeypatch, reduced_bundle, tmp_path / "out.wav", "--workers", "2", "--stream")
    assert list(tmp_path.iterdir()) == []


class ClosingStandIn(StandInBundle):
    """A pool worker: its first sentence waits for the other worker's first (so both share
    the set, as real workers do while the runtime computes)."""

    first = threading.Barrier(2, timeout=30)

    def synthesize_ids(self, *args, **kwargs):
        if not self.raw.calls:
            self.first.wait()
        return super().synthesize_ids(*args, **kwargs)

    def close(self) -> None:
        pass


def test_bench_measures_one_and_n_workers_over_the_same_sentences():
    cases = _cases([5, 9, 5, 9])
    plan = {5: dict.fromkeys(("predictor", "vocoder"), 1), 9: dict.fromkeys(("vocoder",), 2)}
    pipeline = StandInBundle(plan)
    spoken: list[int] = []
    with WorkerPool(lambda isolate: ClosingStandIn(plan), 2) as pool:
        workers = pool._pipelines
        eager = {"eager_torch": lambda c, r: time.sleep(0.002)}  # an RTF that rounds above 0
        figures = bench.measure(cases, pipeline, eager, 2, pool=pool)
        spoken = [len(w.raw.calls) for w in workers]
    assert spoken[0] > 0 and spoken[1] > 0  # both workers spoke; every case twice in all
    assert sum(spoken) == len(pipeline.raw.calls) == 2 * (2 + 2 + 2 + 2)
    assert figures["workers"] == 2
    assert figures["coreai_bundle_rtf_1w"] == figures["coreai_bundle_rtf"]
    assert figures["coreai_bundle_rtf_2w"] == figures["coreai_bundle_2w_rtf"]
    for w in (1, 2):
        want = round(figures[f"coreai_bundle_rtf_{w}w"] / figures["eager_torch_rtf"], 4)
        assert figures[f"bundle_over_eager_{w}w"] == want
    assert figures["runtime_calls"] == len(pipeline.raw.calls)  # the 1-worker bundle's calls only
