"""The worker pool: results in item order as soon as each next one is ready, items side by
side, one worker = the in-process path, a worker's error raised with every child closed; and
the streamed wav a `--stream` speak writes (byte-identical to the whole file, no partial left).

Ordering and overlap use stand-in bundles (no runtime); identity and cleanup use the self-test
MLP bundle in real runtime children.
"""

from __future__ import annotations

import threading

import numpy as np
import psutil
import pytest

from conversion.core.host.audio_io import streamed_wav, write_wav
from conversion.core.runtime.loaded_pipeline import LoadedPipeline
from conversion.core.runtime.workers import WorkerPool
from tests.test_bundle import _mlp_bundle

WAIT_S = 30.0  # an event that never comes fails the test instead of hanging it


class StandIn:
    def __init__(self, isolate: bool) -> None:
        self.isolate = isolate
        self.closed = False

    def close(self) -> None:
        self.closed = True


class MlpBundle(LoadedPipeline):
    model = "test"  # what _mlp_bundle's manifest says


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    dest = tmp_path_factory.mktemp("workers") / "mlp"
    _, inputs = _mlp_bundle(dest, seed=0)
    x = inputs["x"].numpy()
    return dest, [x * (k + 1) for k in range(4)]


def _children() -> set[int]:
    """This process's live child processes (runtime children are reaped when closed)."""
    return {p.pid for p in psutil.Process().children(recursive=True) if p.is_running()}


def _worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("voxport-worker-")]


def test_results_come_back_in_order_as_soon_as_each_next_is_ready():
    """Item 0 finishes only after item 1 has (so they ran side by side), and item 2 starts
    only after item 0 was handed back (so delivery did not wait for the whole map)."""
    one_done, zero_delivered = threading.Event(), threading.Event()
    delivered: list[tuple[int, str]] = []

    def work(bundle: StandIn, item: int) -> str:
        if item == 0:
            assert one_done.wait(WAIT_S), "item 1 never ran beside item 0"
        if item == 1:
            one_done.set()
        if item == 2:
            assert zero_delivered.wait(WAIT_S), "item 0 was not handed back before the end"
        return f"r{item}"

    def on_result(i: int, result: str) -> None:
        delivered.append((i, result))
        if i == 0:
            zero_delivered.set()

    with WorkerPool(StandIn, 2) as pool:
        out = pool.map_in_order(range(4), work, on_result)
        assert all(b.isolate for b in pool._pipelines)  # more than one: every one a child
    assert out == ["r0", "r1", "r2", "r3"]
    assert delivered == list(enumerate(out))
    assert _worker_threads() == []


def test_one_worker_is_the_in_process_path():
    callers: list[str] = []

    def work(bundle: StandIn, x: int) -> int:
        callers.append(threading.current_thread().name)
        return x * 2

    with WorkerPool(StandIn, 1) as pool:
        out = pool.map_in_order([3, 1, 2], work)
        bundle = pool.pipeline
        assert bundle.isolate is False
    assert out == [6, 2, 4]
    assert callers == [threading.current_thread().name] * 3  # no thread, no child
    assert bundle.closed


def test_inline_pool_leaves_the_bundle_open():
    bundle = StandIn(False)
    with WorkerPool.inline(bundle) as pool:
        assert pool.map_in_order([1, 2], lambda b, x: (b is bundle, x)) == [(True, 1), (True, 2)]
    assert not bundle.closed


def test_two_runtime_children_give_what_one_in_process_bundle_gives(mlp):
    dest, xs = mlp
    before = _children()
    # Items 0 and 1 meet here, so each is held by its own worker (else worker 0 could take
    # every item while worker 1's child is still loading).
    both = threading.Barrier(2, timeout=WAIT_S)

    def work(b: MlpBundle, x: np.ndarray) -> tuple[np.ndarray, int]:
        if any(x is xs[k] for k in (0, 1)):
            both.wait()
        return b.session.run("mlp", "main", {"x": x})["y"], b.session._session._proc.pid

    with WorkerPool(lambda isolate: MlpBundle(dest, isolate=isolate), 1) as pool:
        want = [pool.pipeline.session.run("mlp", "main", {"x": x})["y"] for x in xs]
    with WorkerPool(lambda isolate: MlpBundle(dest, isolate=isolate), 2) as pool:
        got = pool.map_in_order(xs, work)
    for (y, _), ref in zip(got, want, strict=True):
        np.testing.assert_array_equal(y, ref)  # bit-identical, not close
    assert len({pid for _, pid in got}) == 2  # both children computed
    assert _children() == before


def test_a_worker_error_is_raised_and_every_child_closed(mlp):
    dest, xs = mlp
    before = _children()
    started: list[int] = []

    def work(b: MlpBundle, x: np.ndarray) -> np.ndarray:
        started.append(1)
        if len(started) == 2:
            raise ValueError("boom in item 1")
        return b.session.run("mlp", "main", {"x": x})["y"]

    with (
        pytest.raises(ValueError, match="boom in item 1"),
        WorkerPool(lambda isolate: MlpBundle(dest, isolate=isolate), 2) as pool,
    ):
        assert len(_children() - before) == 1  # worker 0 opened up front, the other lazily
        pool.map_in_order(xs, work)
    assert len(started) < len(xs)  # no new item started after the error
    assert _children() == before and _worker_threads() == []


def test_a_worker_that_cannot_open_is_raised(tmp_path, mlp):
    dest, xs = mlp
    before = _children()
    opened: list[bool] = []

    def opener(isolate: bool) -> MlpBundle:
        opened.append(isolate)
        if len(opened) == 2:
            return MlpBundle(tmp_path / "missing", isolate=isolate)
        return MlpBundle(dest, isolate=isolate)

    with pytest.raises(Exception, match="missing"), WorkerPool(opener, 2) as pool:
        pool.map_in_order(xs, lambda b, x: b.session.run("mlp", "main", {"x": x}))
    assert opened == [True, True]
    assert _children() == before and _worker_threads() == []


def test_streamed_wav_is_the_whole_file_and_leaves_nothing_on_error(tmp_path):
    rng = np.random.default_rng(0)
    pieces = [rng.uniform(-1.2, 1.2, n).astype(np.float32) for n in (2400, 0, 4801, 7)]
    write_wav(tmp_path / "whole.wav", np.concatenate(pieces), 24_000)
    with streamed_wav(tmp_path / "streamed.wav", 24_000) as write:
        for piece in pieces:
            write(piece)
    assert (tmp_path / "streamed.wav").read_bytes() == (tmp_path / "whole.wav").read_bytes()

    with pytest.raises(RuntimeError, match="stop"), streamed_wav(tmp_path / "x.wav", 24_000) as w:
        w(pieces[0])
        raise RuntimeError("stop")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streamed.wav", "whole.wav"]
