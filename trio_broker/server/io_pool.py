"""The io pool: ``num.io.threads`` worker threads for the request path's blocking storage
work (the part of Kafka's request handler threads that touches the disk).

Owns: ``IoPool``. ``run(fn)`` runs one blocking storage job (a request's appends, reads,
offset lookups or record deletions, batched by the caller into one call) on a worker
thread. Threads come from Trio's thread cache; a ``trio.CapacityLimiter`` of ``size``
tokens bounds how many jobs are in flight, so the pool size is the number of storage
operations that can run at once, and ``resize`` changes that capacity at once (a job
already running finishes; a smaller pool admits no new job until it fits).

It also keeps what the io signals are made of, all cumulative so a sampler can read any
window: the busy time of the threads (``busy_ns``), the thread capacity the pool offered
(``capacity_ns``: the size integrated over time, right across resizes), and each job's
time waiting for a thread and time on it (``observe`` callbacks, milliseconds). The event
loop never blocks here: a job that waits for a thread waits as a Trio task.
Must not: run anything but storage work, or be called from a worker thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import trio

T = TypeVar("T")

# A job's figures: (ms waiting for a thread, ms on the thread).
JobObserver = Callable[[float, float], None]


class IoPool:
    def __init__(self, size: int, clock: Callable[[], int] = time.monotonic_ns) -> None:
        if size < 1:
            raise ValueError(f"an io pool needs at least one thread, not {size}")
        self._clock = clock
        self._limiter = trio.CapacityLimiter(size)
        self._lock = threading.Lock()  # busy accounting is written from the threads
        self._busy_ns = 0
        self._running: dict[int, int] = {}  # job key -> start ns, for busy-so-far
        self._keys = 0
        self._capacity_ns = 0
        self._capacity_since = clock()
        self.jobs = 0  # finished jobs, cumulative
        self.observers: list[JobObserver] = []

    # -- size

    @property
    def size(self) -> int:
        return int(self._limiter.total_tokens)

    def resize(self, size: int) -> None:
        """Set the number of threads. Running jobs finish; new ones fit the new size."""
        if size < 1:
            raise ValueError(f"an io pool needs at least one thread, not {size}")
        now = self._clock()
        self._capacity_ns += self.size * (now - self._capacity_since)
        self._capacity_since = now
        self._limiter.total_tokens = size

    # -- state

    @property
    def busy(self) -> int:
        """Jobs on a thread now."""
        return int(self._limiter.borrowed_tokens)

    @property
    def waiting(self) -> int:
        """Jobs waiting for a thread now."""
        return int(self._limiter.statistics().tasks_waiting)

    def capacity_ns(self, now_ns: int | None = None) -> int:
        now = self._clock() if now_ns is None else now_ns
        return self._capacity_ns + self.size * max(0, now - self._capacity_since)

    def busy_ns(self, now_ns: int | None = None) -> int:
        """Thread time spent on storage jobs so far, running jobs counted up to now."""
        now = self._clock() if now_ns is None else now_ns
        with self._lock:
            return self._busy_ns + sum(max(0, now - s) for s in self._running.values())

    # -- work

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on one of the pool's threads; its result or exception comes back.

        Not cancellable once started (like ``trio.to_thread.run_sync``): a storage job
        runs to its end, so whatever it hands back (file regions) is never orphaned.
        """
        queued = self._clock()
        started = ended = 0
        with self._lock:
            self._keys += 1
            key = self._keys

        def job() -> T:
            nonlocal started, ended
            started = self._clock()
            with self._lock:
                self._running[key] = started
            try:
                return fn()
            finally:
                ended = self._clock()
                with self._lock:
                    del self._running[key]
                    self._busy_ns += ended - started
                    self.jobs += 1

        try:
            return await trio.to_thread.run_sync(job, limiter=self._limiter)
        finally:
            if started and ended:
                wait_ms = (started - queued) / 1e6
                work_ms = (ended - started) / 1e6
                for observe in self.observers:
                    observe(wait_ms, work_ms)
