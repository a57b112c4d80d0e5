"""The io pool: ``num.io.threads`` worker threads for the request path's blocking storage
work (the part of Kafka's request handler threads that touches the disk).

Owns: ``IoPool``. ``run(fn)`` queues one blocking storage job (a request's appends, reads,
offset lookups or record deletions, batched by the caller into one call) and waits, as a
Trio task, for its result. ``size`` worker threads take jobs from one queue, as Kafka's
handler threads take requests from the request channel: a thread that finishes a job takes
the next one at once, without a round trip through the event loop, so under load the
threads are busy all the time and the pool's size is the number of storage operations in
flight. While jobs are short (``JOIN_ONLY_BELOW_MS``), a job queued when the jobs ahead
of it will already keep every idle thread busy joins the last of them
(``MAX_CALLERS_PER_JOB``): one thread runs its callers one after
the other and hands their results back in one wake-up of the loop; each caller's function
still counts as one job in the figures below. ``resize`` starts threads at once or retires
some (each retiring thread finishes its job first). The threads are ours rather than
``trio.to_thread``'s cache because there a thread frees its slot only after the event loop
has run the job's continuation: on a busy loop that left a thread idle between jobs for a
fifth of its time (measured with a 2 ms storage delay and 16 producers).

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


# One caller's storage function, its continuation on the event loop (given the outcome,
# ms waiting and ms working) and when it was queued.
_Entry = tuple[Callable[[], Any], Callable[[outcome.Outcome[Any], float, float], None], int]

# When the jobs already queued will keep every idle thread busy, a new job joins the last
# one still queued instead of queueing behind it, up to this many callers a job: the
# thread that takes it runs them one after the other and hands all results back to the
# loop in one wake-up. Each job costs a thread wake-up, a GIL hand-over and a wake-up of
# the loop; 16 tasks running short jobs on 8 threads got 1.5x the jobs per second with
# two thirds of the CPU per job (the numbers are in BENCHMARKS.md). A job of its own would
# have waited for a busy thread anyway; what a joined caller can lose is a thread freed
# while it waits behind the others, which the cap and the short-jobs rule below bound.
MAX_CALLERS_PER_JOB = 8
# ... and only while the pool's jobs are short (their recent mean time on a thread below
# this): then the hop is a large part of each, and a thread runs a joined job's callers in
# well under a millisecond. Long jobs (a slow disk, fsyncs) gain nothing from sharing a
# hop, and callers joined behind one would wait for it while a thread freed meanwhile
# could have taken them: the advisor's slow-disk proof (5 ms a storage operation) lost
# its parallelism that way.
JOIN_ONLY_BELOW_MS = 0.5

# A finished caller: its continuation, the outcome, ms waiting, ms working.
_Done = tuple[
    Callable[[outcome.Outcome[Any], float, float], None], outcome.Outcome[Any], float, float
]


class _Job:
    __slots__ = ("entries", "taken", "token")

    def __init__(self, entry: _Entry, token: trio.lowlevel.TrioToken) -> None:
        self.entries = [entry]
        self.taken = False  # set by the thread that takes it: no caller joins after that
        self.token = token


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
        self.jobs = 0  # finished jobs (each caller's function counts as one), cumulative
        self.joined = 0  # callers that joined a queued job (MAX_CALLERS_PER_JOB), cumulative
        self._last: _Job | None = None  # the job queued last (maybe taken by now)
        self._untaken = 0  # jobs queued that no thread has taken yet
        self._waiting = 0  # callers in those jobs
        self._recent_work_ms = 0.0  # a moving mean of a job's time on a thread (the loop's)
        self._idle = 0  # threads waiting for a job
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
            with self._lock:
                self._idle += 1  # idle from the start: a job queued now is its to take
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
        """Callers' jobs waiting for a thread now (each counted, joined or not)."""
        return self._waiting

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
        task = trio.lowlevel.current_task()
        observers = self.observers

        def finished(result: outcome.Outcome[T], wait_ms: float, work_ms: float) -> None:
            self._unfinished -= 1
            self._recent_work_ms += (work_ms - self._recent_work_ms) * 0.05
            for observe in observers:  # on the event loop
                observe(wait_ms, work_ms)
            trio.lowlevel.reschedule(task, result)

        self._unfinished += 1
        entry: _Entry = (fn, finished, self._clock())
        if not self._join_last(entry):
            job = _Job(entry, trio.lowlevel.current_trio_token())
            self._last = job
            self._jobs.put(job)

        def abort(_: Any) -> trio.lowlevel.Abort:
            return trio.lowlevel.Abort.FAILED  # the job runs to its end; then we return

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    def _join_last(self, entry: _Entry) -> bool:
        """Add ``entry`` to the last queued job when jobs are short, the jobs already
        queued will keep every idle thread busy (so a job of its own would wait for a busy
        one anyway) and that job has room; otherwise count the job about to be queued."""
        short = self._recent_work_ms < JOIN_ONLY_BELOW_MS
        with self._lock:
            last = self._last
            if (
                short
                and last is not None
                and not last.taken
                and self._untaken >= self._idle
                and len(last.entries) < MAX_CALLERS_PER_JOB
            ):
                last.entries.append(entry)
                self.joined += 1
                self._waiting += 1
                return True
            self._untaken += 1
            self._waiting += 1
            return False

    def _work(self) -> None:
        """One worker thread: take jobs until a retirement ticket comes."""
        me = threading.get_ident()
        clock, lock, running = self._clock, self._lock, self._running
        while True:
            job = self._jobs.get()
            with lock:
                self._idle -= 1
                if job is not None:
                    job.taken = True
                    self._untaken -= 1
                    self._waiting -= len(job.entries)
            if job is None:
                return
            done: list[_Done] = []
            for fn, finished, queued_ns in job.entries:
                started = clock()
                with lock:
                    running[me] = started
                result = outcome.capture(fn)
                ended = clock()
                with lock:
                    del running[me]
                    self._busy_ns += ended - started
                    self.jobs += 1
                done.append(
                    (finished, result, (started - queued_ns) / 1e6, (ended - started) / 1e6)
                )
            job.token.run_sync_soon(_deliver, done)
            with lock:
                self._idle += 1


def _deliver(done: list[_Done]) -> None:
    """On the event loop: each finished caller's continuation, in order."""
    for finished, result, wait_ms, work_ms in done:
        finished(result, wait_ms, work_ms)
