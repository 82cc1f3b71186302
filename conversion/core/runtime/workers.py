"""Worker processes: N loaded pipelines, each with its own runtime child, driven by N threads.

The Core AI Linux runtime is single-threaded, so one process computes one call at a time.
With N pipelines opened `isolate=True` (an `IsolatedSession` child each, the pipeline loaded once
per child), N independent items (chunks, sentences) compute side by side: a thread waiting on
its child's pipe releases the GIL, and the host steps between calls are short.

`WorkerPool.map_in_order` hands results back in item order as soon as each next one is ready,
so a caller writes chunk 1's audio while chunk 2 is still computing. With one worker it is the
plain in-process path: one pipeline, `isolate=False`, items run in the caller's thread.

`WorkerPool.background(k)` is the other shape: one pipeline whose later stage runs on worker
`k` in a thread of its own, fed jobs in order while the caller's thread goes on with the
earlier stage on worker 0 (Audio8 decodes codec windows while frames are drawn).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

B = TypeVar("B")  # a loaded pipeline (a LoadedPipeline subclass: `close()`)
T = TypeVar("T")  # an item
R = TypeVar("R")  # a result


class WorkerPool(Generic[B]):
    """`workers` pipelines from `opener(isolate)`; the first is opened now (its host data —
    tables, voices, the tokenizer — is what callers chunk text with), the others when a map
    first needs them (so worker 0 starts computing while they load) or at `open_all()`.

    Use it as a context manager: every opened pipeline (and its child) is closed on exit.
    """

    def __init__(self, opener: Callable[[bool], B], workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.size = workers
        self._opener = opener
        self._owned = True
        self._lock = threading.Lock()
        # One worker: in process (no pipes, no copies). More: every one a child, so no
        # runtime call holds this process while another worker's result is being handled.
        self._pipelines: list[B | None] = [opener(workers > 1)] + [None] * (workers - 1)

    @classmethod
    def inline(cls, pipeline: B) -> WorkerPool[B]:
        """A one-worker pool over an already open `pipeline` (not closed by the pool)."""
        pool = cls.__new__(cls)
        pool.size, pool._opener, pool._owned = 1, None, False
        pool._lock = threading.Lock()
        pool._pipelines = [pipeline]
        return pool

    @property
    def pipeline(self) -> B:
        """Worker 0's pipeline: the one to read host data from."""
        return self._pipelines[0]

    def worker(self, k: int) -> B:
        """Worker `k`'s pipeline, opened (in a runtime child) on first use."""
        with self._lock:
            pipeline = self._pipelines[k]
        if pipeline is None:
            pipeline = self._opener(True)
            with self._lock:
                self._pipelines[k] = pipeline
        return pipeline

    def open_all(self) -> None:
        """Open every worker now, side by side (a bench keeps loading out of its timings)."""
        self.map_in_order(range(self.size), lambda _pipeline, _k: None, spread=True)

    def map_in_order(
        self,
        items: Sequence[T],
        work: Callable[[B, T], R],
        on_result: Callable[[int, R], None] | None = None,
        spread: bool = False,
    ) -> list[R]:
        """`work(pipeline, item)` for every item, up to `size` at once; the results in item
        order. `on_result(i, result)` runs in the caller's thread as soon as results 0..i are
        all in. The first error a worker raises is raised here once the workers have stopped
        (an item already computing finishes; no new one starts). `spread`: one item per
        worker at most (each item on its own pipeline)."""
        items = list(items)
        n = min(self.size, len(items))
        if n <= 1:
            out: list[R] = []
            for i, item in enumerate(items):
                out.append(work(self.pipeline, item))
                if on_result is not None:
                    on_result(i, out[-1])
            return out
        return _InOrder(self, items, work, n, spread).run(on_result)

    def background(self, k: int) -> Background[B]:
        """Worker `k` (opened in the new thread, so the caller starts at once) running the jobs
        `submit`ted to it one after another; a context manager (`Background`)."""
        if not 0 < k < self.size:
            raise ValueError(f"background worker {k} is not one of workers 1..{self.size - 1}")
        return Background(self, k)

    def close(self) -> None:
        """Close every opened pipeline (each child exits); the first close error is raised."""
        if not self._owned:
            return
        first: BaseException | None = None
        with self._lock:
            pipelines, self._pipelines = self._pipelines, [None] * self.size
        for pipeline in pipelines:
            if pipeline is None:
                continue
            try:
                pipeline.close()
            except BaseException as err:  # noqa: BLE001 (the others must close too)
                first = first or err
        if first is not None:
            raise first

    def __enter__(self) -> WorkerPool[B]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _InOrder(Generic[B, T, R]):
    """One `map_in_order` over threads: each thread owns one worker and takes the next item
    not yet taken; results wait in `done` until every earlier one has been handed back."""

    def __init__(self, pool: WorkerPool[B], items: list, work: Callable, n: int, spread: bool):
        self.pool, self.items, self.work, self.n, self.spread = pool, items, work, n, spread
        self.cond = threading.Condition()
        self.next_item = 0
        self.done: dict[int, R] = {}
        self.error: BaseException | None = None
        self.stop = False

    def _loop(self, k: int) -> None:
        try:
            pipeline = self.pool.worker(k)
            while True:
                with self.cond:
                    if self.stop or self.error is not None or self.next_item >= len(self.items):
                        return
                    i = self.next_item if not self.spread else k
                    self.next_item += 1
                result = self.work(pipeline, self.items[i])
                with self.cond:
                    self.done[i] = result
                    self.cond.notify_all()
                if self.spread:
                    return
        except BaseException as err:  # noqa: BLE001 (handed to the caller's thread)
            with self.cond:
                if self.error is None:
                    self.error = err
                self.cond.notify_all()

    def run(self, on_result: Callable[[int, R], None] | None) -> list[R]:
        threads = [
            threading.Thread(target=self._loop, args=(k,), name=f"voxport-worker-{k}", daemon=True)
            for k in range(self.n)
        ]
        for t in threads:
            t.start()
        out: list[R] = []
        try:
            for i in range(len(self.items)):
                with self.cond:
                    while i not in self.done and self.error is None:
                        self.cond.wait()
                    if self.error is not None:
                        break
                    result = self.done.pop(i)
                out.append(result)
                if on_result is not None:
                    on_result(i, result)
        finally:
            with self.cond:
                self.stop = True  # the caller's own error (a callback, Ctrl-C) stops them too
            for t in threads:
                t.join()  # no thread outlives the map: an item in flight finishes first
        if self.error is not None:
            raise self.error
        return out


class Background(Generic[B]):
    """Jobs `job(pipeline)` run on one worker's pipeline in a thread of its own, one after another
    in the order submitted, while the caller's thread does other work.

    The first error (the pipeline failing to open, a job raising) is kept and every later job
    skipped: `check()` raises it in the caller's thread (call it between steps to stop early)
    and leaving the `with` block — which waits for every job submitted — raises it too.
    Leaving on the caller's own error skips the jobs not started and waits only for the one
    in flight (a runtime call cannot be cut): no thread outlives the block.
    """

    def __init__(self, pool: WorkerPool[B], k: int) -> None:
        self._pool, self._k = pool, k
        self._jobs: queue.SimpleQueue[Callable[[B], None] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._cancelled = False
        self._thread = threading.Thread(target=self._loop, name=f"voxport-worker-{k}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        pipeline: B | None = None
        try:
            pipeline = self._pool.worker(self._k)
        except BaseException as err:  # noqa: BLE001 (handed to the caller's thread)
            self._error = err
        while (job := self._jobs.get()) is not None:
            if self._error is not None or self._cancelled:
                continue  # skipped: the queue is drained up to the end marker
            try:
                job(pipeline)
            except BaseException as err:  # noqa: BLE001 (handed to the caller's thread)
                self._error = err

    def submit(self, job: Callable[[B], None]) -> None:
        """Queue `job` after every job submitted before it (raises a kept error first)."""
        self.check()
        self._jobs.put(job)

    def check(self) -> None:
        """Raise the first error a job raised, if any."""
        if self._error is not None:
            raise self._error

    def __enter__(self) -> Background[B]:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self._cancelled = exc_type is not None
        self._jobs.put(None)
        self._thread.join()
        if exc_type is None:
            self.check()
