"""Audio8 over two workers: worker 1 decodes the codec windows while worker 0 draws the frames.

The audio is bit-identical to one worker's, streamed and whole (stand-in sessions, the CLI's
wav bytes, and real runtime children over a small bundle); the windows are `decode_whole`'s;
decoding starts before the last frame; both workers are recycled once per piece; an error in
the decode thread is raised in the caller, stops the frame loop, leaves no thread and no wav.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from conversion.audio8_tts import cli
from conversion.audio8_tts import pipeline as P
from conversion.audio8_tts.ar.graphs import FRAME, PREFILL
from conversion.audio8_tts.codec import host as host_codec
from conversion.audio8_tts.codec.config import REDUCED as CODEC_REDUCED
from conversion.audio8_tts.codec.graphs import CODEC_GRAPH
from conversion.audio8_tts.config import REDUCED
from conversion.audio8_tts.swift_fixtures import stand_in_tokenizer
from conversion.cli.main import main
from conversion.core.runtime.workers import WorkerPool
from conversion.core.speak import SpeakListener

torch.set_num_threads(1)

WINDOW = 8  # context 2: windows after frames 8, 14, 20, ...
TEXT = "Hello there. Thank you."  # two pieces (sentences stay apart)
FRAMES = 17  # windows [0,8) and [6,14) while frames come, [12,17) after the last
WAIT_S = 30.0  # an event that never comes fails the test instead of hanging it
FS = CODEC_REDUCED.frame_size
Audio8Pipeline = P.Audio8Pipeline  # the CLI tests replace the module's name with stand-ins
SpeakOptions = P.SpeakOptions


def _until(done, timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("voxport-worker-")]


class _Manifest:
    def function(self, graph: str, function: str) -> dict:
        return {"inputs": [{"shape": [1, REDUCED.num_codebooks, WINDOW]}]}


class _Session:
    """Stands in for a runtime session. A frame's draws depend only on (piece, step) and a
    window's samples only on its codes (causally, so context matters), so two sessions answer
    what one does. Every call is logged with the thread that made it; `hooks` run first."""

    def __init__(self, name: str, log: list, hooks: dict | None = None, eos=None) -> None:
        self.name, self.log, self.hooks = name, log, hooks or {}
        self.eos = eos or {}  # piece -> the step that draws eos
        self.manifest = _Manifest()
        self.piece, self.step = -1, 0
        self.calls: Counter[str] = Counter()
        self.closed = False

    def _log(self, what: str) -> None:
        self.log.append((self.name, what, threading.current_thread().name))

    def reset_state(self, graph: str, state: str = "default") -> None:
        self.piece, self.step = self.piece + 1, 0

    def recycle_if_leaking(self, limit_mb: float) -> bool:
        self._log("recycle")
        return False

    def close(self) -> None:
        self.closed = True

    def run(self, graph: str, function: str, inputs: dict, state: str = "default") -> dict:
        kind = "codec" if graph == CODEC_GRAPH else function
        self._log(kind)
        self.calls[kind] += 1
        if kind in self.hooks:
            self.hooks[kind](self)
        if graph == CODEC_GRAPH:
            codes = np.asarray(inputs["codes"], np.int64)[0]
            level = np.cumsum(codes.sum(axis=0) % 97) / 97.0  # causal: earlier frames count
            wav = np.repeat(np.sin(level), FS) * np.linspace(0.1, 0.5, FS * codes.shape[1])
            return {"wav": wav.astype(np.float32)[None]}
        if function == PREFILL:
            return {}
        return self._frame()

    def _frame(self) -> dict:
        c = REDUCED
        rng = np.random.default_rng([self.piece, self.step])
        code0 = int(rng.integers(0, c.codebook_size))
        eos = self.eos.get(self.piece) == self.step
        semantic = c.eos_token_id if eos else c.semantic_begin_id + code0
        codes = np.concatenate([[code0], rng.integers(0, c.codebook_size, c.num_codebooks - 1)])
        self.step += 1
        return {
            "logits": np.zeros((1, 4), np.float32),
            "semantic": np.array([semantic], np.int32),
            "normal": np.array([semantic], np.int32),
            "high": np.array([semantic], np.int32),
            "codes": codes.astype(np.int32),
            "fast_logits": np.zeros((c.num_codebooks - 1, 4), np.float32),
        }


def _bundle(session: _Session) -> Audio8Pipeline:
    pipeline = object.__new__(Audio8Pipeline)
    pipeline.session, pipeline.tokenizer = session, stand_in_tokenizer()
    pipeline.config, pipeline.codec_config = REDUCED, CODEC_REDUCED
    pipeline.path = Path("stand-in")
    return pipeline


class _Opener:
    """Opens stand-in bundles `w0`, `w1`, ... (each its own session) for a WorkerPool."""

    def __init__(self, hooks: dict | None = None, eos=None, fail_open: int | None = None):
        self.log: list = []
        self.hooks, self.eos, self.fail_open = hooks or {}, eos, fail_open
        self.sessions: list[_Session] = []

    def __call__(self, isolate: bool) -> Audio8Pipeline:
        k = len(self.sessions)
        if k == self.fail_open:
            raise RuntimeError(f"worker {k} failed to open")
        session = _Session(f"w{k}", self.log, self.hooks.get(k), self.eos)
        self.sessions.append(session)
        return _bundle(session)


class _Audio(SpeakListener):
    """Hands each piece of audio to `take`."""

    def __init__(self, take) -> None:
        self.take = take

    def audio(self, piece: np.ndarray) -> None:
        self.take(piece)


def _speak(opener: _Opener, workers: int, stream: bool, frames: int = FRAMES, take_audio=None):
    chunks: list[np.ndarray] = []
    with WorkerPool(opener, workers) as pool:
        result = pool.pipeline.speak(
            TEXT,
            SpeakOptions(seed=4, max_frames=frames, stream=stream),
            listener=_Audio(take_audio or chunks.append),
            pool=pool,
        )
    return result, chunks


# -- the windows -------------------------------------------------------------------------------


@pytest.mark.parametrize("window", [8, 32, 160])
def test_streaming_windows_are_decode_wholes(window):
    """Frame by frame, then the rest after the last: exactly `window_plan`'s windows (what
    `decode_whole` decodes), each complete as soon as its last frame is drawn."""
    context = P.context_frames(window)
    for total in range(3 * window + 3):
        windows = P._Windows(window)
        got, ready_at = [], []
        for t in range(total):
            for w in windows.add(np.full(10, t)):
                got.append(w)
                ready_at.append(t + 1)
        got += windows.rest(np.tile(np.arange(total), (10, 1)))
        plan = [
            (int(w.codes[0, 0]), int(w.codes[0, 0]) + w.context, int(w.codes[0, -1]) + 1)
            for w in got
        ]
        assert plan == host_codec.window_plan(total, window, context), total
        assert ready_at == [end for _, _, end in plan[: len(ready_at)]]  # no frame later


# -- stand-in sessions -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
def test_two_workers_give_one_workers_audio(stream):
    """Same audio, same chunks handed on in the same order (streamed: one per window; whole:
    one per piece), for no pool, a one-worker pool and two workers; with two, every window is
    decoded by worker 1 in its own thread, every frame by worker 0 in the caller's, and each
    piece recycles both workers — worker 1 after the previous piece's windows."""
    eos = {1: 15}  # the second piece ends early: its last window is [12,15)
    plain = _bundle(_Session("w0", [], eos=eos))
    ref = plain.speak(TEXT, SpeakOptions(seed=4, max_frames=FRAMES, stream=stream))
    one, one_chunks = _speak(_Opener(eos=eos), 1, stream)
    opener = _Opener(eos=eos)
    two, two_chunks = _speak(opener, 2, stream)

    assert ref.audio.size == (FRAMES + 15) * FS
    for got in (one, two):
        np.testing.assert_array_equal(got.audio, ref.audio)
        for a, b in zip(got.pieces, ref.pieces, strict=True):
            np.testing.assert_array_equal(a.wav, b.wav)
            np.testing.assert_array_equal(a.frames.codes, b.frames.codes)
            assert (a.decode.windows, a.decode.frames) == (b.decode.windows, b.decode.frames)
    assert [c.size for c in two_chunks] == [c.size for c in one_chunks]
    assert len(two_chunks) == (6 if stream else 2)  # three windows a piece, or one per piece
    main_thread = threading.current_thread().name
    assert {(w, t) for w, what, t in opener.log if what == "codec"} == {("w1", "voxport-worker-1")}
    assert {(w, t) for w, what, t in opener.log if what == FRAME} == {("w0", main_thread)}
    w1 = [what for w, what, _ in opener.log if w == "w1"]
    assert w1 == ["recycle", "codec", "codec", "codec"] * 2
    assert [what for w, what, _ in opener.log if w == "w0"].count("recycle") == 2
    assert two.first_audio_s is not None and all(p.first_audio_s for p in two.pieces)
    assert _worker_threads() == []


@pytest.mark.parametrize("stream", [True, False])
def test_windows_decode_while_frames_are_drawn(stream):
    """The last frame of the first piece is drawn only after its first window was decoded
    (and, streamed, handed on): decoding no longer waits for the end of generation."""
    handed_on = threading.Event()
    seen: list[bool] = []

    def decoding_started() -> bool:
        return any(w == "w1" and what == "codec" for w, what, _ in opener.log)

    def last_frame(session: _Session) -> None:
        if session.piece == 0 and session.step == FRAMES - 1:
            seen.append(handed_on.wait(WAIT_S) if stream else _until(decoding_started))

    opener = _Opener({0: {FRAME: last_frame}})
    _speak(opener, 2, stream, take_audio=lambda _chunk: handed_on.set())
    assert seen == [True]


def test_padding_frames_decode_as_decode_whole():
    """Should frames ever hold a negative code (`generate` never draws one; the publisher's
    `decode_audio` skips such frames), two workers still give `decode_whole`'s audio."""

    def negative(session: _Session) -> None:
        session.negative = session.step == 3

    class _Padded(_Session):
        def _frame(self) -> dict:
            out = super()._frame()
            if getattr(self, "negative", False):
                out["codes"][4] = -1
            return out

    class _PaddedOpener(_Opener):
        def __call__(self, isolate: bool) -> Audio8Pipeline:
            session = _Padded(f"w{len(self.sessions)}", self.log, {FRAME: negative})
            self.sessions.append(session)
            return _bundle(session)

    plain = _bundle(_Padded("w0", [], {FRAME: negative}))
    want = plain.speak(TEXT, SpeakOptions(seed=4, max_frames=FRAMES))
    got, _ = _speak(_PaddedOpener(), 2, stream=False)
    assert want.pieces[0].decode.dropped == 1
    np.testing.assert_array_equal(got.audio, want.audio)


@pytest.mark.parametrize("where", ["codec", "listener.audio", "open", "frame"])
def test_an_error_beside_the_frames_is_raised_here(where):
    """A window that fails, a `listener.audio` that fails (both in the decode thread), worker 1
    failing to open, or the frame loop failing: raised in the caller, the frame loop stopped
    early, no thread left behind, every opened bundle closed."""
    frames = 200
    failed = threading.Event()

    def codec(_session: _Session) -> None:
        failed.set()
        raise RuntimeError("codec window failed")

    def take_audio(_chunk) -> None:
        if where == "listener.audio":
            failed.set()
            raise RuntimeError("listener.audio failed")

    def frame(session: _Session) -> None:
        if session.step == 10 and where != "frame":  # the decode thread fails meanwhile
            assert failed.wait(WAIT_S)
            time.sleep(0.1)
        if where == "frame" and session.step == 12:
            raise RuntimeError("frame loop failed")

    hooks = {0: {FRAME: frame}, 1: {"codec": codec} if where == "codec" else {}}
    opener = _Opener(hooks, fail_open=1 if where == "open" else None)
    if where == "open":
        failed.set()
    with pytest.raises(RuntimeError, match=f"{'worker 1' if where == 'open' else where}"):
        _speak(opener, 2, stream=True, frames=frames, take_audio=take_audio)
    drawn = [what for w, what, _ in opener.log if w == "w0"].count("frame")
    assert drawn < frames
    assert _worker_threads() == []
    assert all(s.closed for s in opener.sessions)


# -- the CLI -------------------------------------------------------------------------------------


def _cli_speak(tmp_path, monkeypatch, workers: int, stream: bool, hooks=None) -> Path:
    opener = _Opener(hooks)
    monkeypatch.setattr(P, "Audio8Pipeline", lambda _path, isolate=False: opener(isolate))
    monkeypatch.setattr(cli.PORT, "resolve_weights", lambda *a, **k: tmp_path / "weights")
    monkeypatch.setattr(cli.PORT, "ensure_bundle", lambda *a, **k: tmp_path / "bundle")
    out = tmp_path / f"w{workers}{'s' if stream else ''}" / "x.wav"
    out.parent.mkdir()
    argv = ["speak", "audio8_tts", TEXT, "-o", str(out), "--config", "reduced"]
    assert main(argv + ["--workers", str(workers)] + (["--stream"] if stream else [])) == 0
    return out


def test_speak_cli_wav_bytes_are_the_same_for_one_and_two_workers(tmp_path, monkeypatch, capsys):
    wavs = {
        (w, s): _cli_speak(tmp_path, monkeypatch, w, s).read_bytes()
        for w in (1, 2)
        for s in (False, True)
    }
    assert len(set(wavs.values())) == 1 and len(wavs[1, False]) > 44
    out = capsys.readouterr().out
    assert "1 worker(s)" in out and "2 worker(s)" in out
    assert not list(tmp_path.rglob(".*partial"))


@pytest.mark.parametrize("stream", [True, False])
def test_speak_cli_failed_decode_worker_leaves_no_wav(tmp_path, monkeypatch, stream):
    def codec(session: _Session) -> None:
        if session.calls["codec"] == 3:
            raise RuntimeError("the decode worker died")

    with pytest.raises(RuntimeError, match="decode worker died"):
        _cli_speak(tmp_path, monkeypatch, 2, stream, hooks={1: {"codec": codec}})
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


# -- real runtime children -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_bundle(tmp_path_factory):
    """The cheapest real bundle: an `ar` graph of one slow and one fast layer over 128 KV rows
    (the reduced sizes otherwise; seeded random weights) and a codec graph of WINDOW frames."""
    from conversion.audio8_tts.ar.graphs import ar_graph_spec
    from conversion.audio8_tts.codec.graphs import codec_graph_spec
    from conversion.audio8_tts.codec.weights import load_codec, write_random_codec
    from conversion.audio8_tts.tokenizer import TOKENIZER_FILE
    from conversion.audio8_tts.weights import random_model
    from conversion.core.bundle import BundleWriter

    tmp = tmp_path_factory.mktemp("a8workers")
    config = dataclasses.replace(REDUCED, n_layer=1, n_fast_layer=1, max_seq_len=128)
    codec = load_codec(write_random_codec(tmp / "codec.pth", CODEC_REDUCED, seed=0), CODEC_REDUCED)
    tokenizer = tmp / TOKENIZER_FILE
    tokenizer.write_text(stand_in_tokenizer(config).to_str())
    manifest_config = {
        "config": config.to_json(),
        "codec_config": CODEC_REDUCED.to_json(),
        "graphs": {"ar": "fp32", "codec": "fp32"},
    }
    dest = tmp / "bundle"
    with (
        torch.no_grad(),
        BundleWriter(dest, "audio8_tts", precision="fp32", config=manifest_config) as bw,
    ):
        # the plain draws: worker mechanics, not the sampler paths (those: test_calibration)
        bw.add_graph(ar_graph_spec(random_model(config, seed=0, calibrated=False)))
        bw.add_graph(codec_graph_spec(codec, WINDOW))
        bw.add_file(tokenizer)
    return dest


def test_two_runtime_children_speak_what_one_process_does(small_bundle):
    """The real runtime: one worker in process vs two children (worker 1 decoding), whole and
    streamed, bit-identical; both children restarted between the pieces of the first run
    (recycle_mb tiny: worker 1's restart runs in its thread, after the first piece's windows)
    and the audio still the same."""
    text, frames = "Hi there. Go on.", 10  # a piece: [0,8) beside the frames, [6,10) after
    with Audio8Pipeline(small_bundle) as pipeline:
        assert pipeline.codec_window == WINDOW
        want = {
            s: pipeline.speak(text, SpeakOptions(seed=2, max_frames=frames, stream=s))
            for s in (False, True)
        }
    np.testing.assert_array_equal(want[True].audio, want[False].audio)
    assert want[True].audio.size > 0 and len(want[True].pieces) == 2

    with WorkerPool(lambda isolate: Audio8Pipeline(small_bundle, isolate=isolate), 2) as pool:
        pool.open_all()  # both children load side by side
        workers = [pool.pipeline, pool.worker(1)]
        for stream in (False, True):
            # the whole run restarts both children before its second piece (not before its
            # first: a fresh child has nothing to give back); the streamed run none
            limit = Audio8Pipeline.recycle_mb if stream else 1e-6
            for b in workers:
                b.recycle_mb = limit
            options = SpeakOptions(seed=2, max_frames=frames, stream=stream)
            got = pool.pipeline.speak(text, options, pool=pool)
            np.testing.assert_array_equal(got.audio, want[stream].audio)
            assert [p.decode.windows for p in got.pieces] == [2, 2]
        assert [b.session._session.restarts for b in workers] == [1, 1]
        assert "codec.main" not in workers[0].session.function_ms
        assert "ar.frame" not in workers[1].session.function_ms
