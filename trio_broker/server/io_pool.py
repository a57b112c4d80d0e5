"""The io pool: ``num.io.threads`` worker threads for the request path's blocking storage
work (the part of Kafka's request handler threads that touches the disk).

Owns: ``IoPool``. ``run(fn)`` queues one blocking storage job (a request's appends, reads,
offset lookups or record deletions, batched by the caller into one call) and waits, as a
Trio task, for its result. ``size`` worker threads take jobs from one queue, as Kafka's
handler threads take requests from the request channel: a thread that finishes a job takes
the next one at once, without a round trip through the event loop, so under load the
threads are busy all the time and the pool's size is the number of storage operations in
flight. ``resize`` starts threads at once or retires some (each retiring thread finishes
its job first). The threads are ours rather than ``trio.to_thread``'s cache because there a
thread frees its slot only after the event loop has run the job's continuation: on a busy
loop that left a thread idle between jobs for a fifth of its time (measured with a 2 ms
storage delay and 16 producers).

It also keeps what the io signals are made of, all cumulative so a sampler can read any
window: the threads' busy time (``busy_ns``), the thread capacity the pool offered
(``capacity_ns``: the size integrated over time, right across resizes), and each job's time
waiting for a thread and time on it (``observers``, called on the event loop, ms).
Must not: run anything but storage work, or be waited on from a worker thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import outcome
import trio

T = TypeVar("T")

# Handler tasks per io thread. A handler runs its request's API logic on the event loop and
# then waits for an io thread; with one handler per thread, a thread would sit idle while
# its handler does the loop part. Two per thread let one request's loop work overlap
# another's storage job, so that under load every thread has its next job ready and the
# pool's size, not the handler count, is what bounds storage throughput.
HANDLERS_PER_IO_THREAD = 2

# A job's figures: (ms waiting for a thread, ms on the thread).
JobObserver = Callable[[float, float], None]


class _Job:
    __slots__ = ("deliver", "fn", "queued_ns")

    def __init__(self, fn: Callable[[], Any], deliver: Callable[..., None], queued_ns: int):
        self.fn = fn
        self.deliver = deliver
        self.queued_ns = queued_ns


# CPython hands the GIL to a waiting thread only after the running one has held it this
# long (default 5 ms). An io thread back from the disk waits for the GIL to deliver its
# result and to take its next job; behind a busy event loop that wait was about 1 ms per job
# at the default, half a 2 ms storage operation. The broker sets this at start-up.
GIL_SWITCH_INTERVAL_S = 0.0005

_RETIRE = None  # a retiring thread's ticket: the thread that takes it ends


class IoPool:
    def __init__(
        self, size: int, clock: Callable[[], int] = time.monotonic_ns, name: str = "io"
    ) -> None:
        if size < 1:
            raise ValueError(f"an io pool needs at least one thread, not {size}")
        self._clock = clock
        self._name = name
        self._size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads = 0  # threads started and not retired (started on the first job)
        self._next_id = 0
        self._lock = threading.Lock()  # the figures below are written from the threads
        self._busy_ns = 0
        self._unfinished = 0  # touched on the event loop only
        self._running: dict[int, int] = {}  # thread id -> start ns of its current job
        self._capacity_ns = 0
        self._capacity_since = clock()
        self.jobs = 0  # finished jobs, cumulative
        self.observers: list[JobObserver] = []

    # -- size

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        """Set the number of threads. Running jobs finish; new ones fit the new size."""
        if size < 1:
            raise ValueError(f"an io pool needs at least one thread, not {size}")
        now = self._clock()
        self._capacity_ns += self._size * (now - self._capacity_since)
        self._capacity_since = now
        self._size = size
        if self._threads:
            self._fit_threads()

    def _fit_threads(self) -> None:
        while self._threads < self._size:
            self._next_id += 1
            threading.Thread(
                target=self._work, name=f"{self._name}-{self._next_id}", daemon=True
            ).start()
            self._threads += 1
        while self._threads > self._size:
            self._jobs.put(_RETIRE)
            self._threads -= 1

    def close(self) -> None:
        """Retire every thread once the jobs queued before have run."""
        for _ in range(self._threads):
            self._jobs.put(_RETIRE)
        self._threads = 0

    # -- state

    @property
    def busy(self) -> int:
        """Jobs on a thread now."""
        return len(self._running)

    @property
    def unfinished(self) -> int:
        """Jobs whose awaiting task has not been given its result yet: waiting, on a
        thread, or finished with the result still on its way to the event loop."""
        return self._unfinished

    @property
    def waiting(self) -> int:
        """Jobs waiting for a thread now."""
        return self._jobs.qsize()  # a retiring thread's ticket counts until it is taken

    def capacity_ns(self, now_ns: int | None = None) -> int:
        now = self._clock() if now_ns is None else now_ns
        return self._capacity_ns + self._size * max(0, now - self._capacity_since)

    def busy_ns(self, now_ns: int | None = None) -> int:
        """Thread time spent on storage jobs so far, running jobs counted up to now."""
        now = self._clock() if now_ns is None else now_ns
        with self._lock:
            return self._busy_ns + sum(max(0, now - s) for s in self._running.values())

    # -- work

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on one of the pool's threads; its result or exception comes back.

        Not cancellable once queued (like ``trio.to_thread.run_sync``): a storage job runs
        to its end, so whatever it hands back (file regions) is never orphaned.
        """
        if self._threads < self._size:
            self._fit_threads()
        token = trio.lowlevel.current_trio_token()
        task = trio.lowlevel.current_task()
        observers = self.observers

        def finished(result: outcome.Outcome[T], wait_ms: float, work_ms: float) -> None:
            self._unfinished -= 1
            for observe in observers:  # on the event loop
                observe(wait_ms, work_ms)
            trio.lowlevel.reschedule(task, result)

        def deliver(result: outcome.Outcome[T], wait_ms: float, work_ms: float) -> None:
            token.run_sync_soon(finished, result, wait_ms, work_ms)  # from the thread

        self._unfinished += 1
        self._jobs.put(_Job(fn, deliver, self._clock()))

        def abort(_: Any) -> trio.lowlevel.Abort:
            return trio.lowlevel.Abort.FAILED  # the job runs to its end; then we return

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    def _work(self) -> None:
        """One worker thread: take jobs until a retirement ticket comes."""
        me = threading.get_ident()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            started = self._clock()
            with self._lock:
                self._running[me] = started
            result = outcome.capture(job.fn)
            ended = self._clock()
            with self._lock:
                del self._running[me]
                self._busy_ns += ended - started
                self.jobs += 1
            job.deliver(result, (started - job.queued_ns) / 1e6, (ended - started) / 1e6)
