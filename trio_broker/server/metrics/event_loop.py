"""The event loop's own signals: its busy ratio and its stalls (the CPU-capacity signal).

Owns: ``EventLoopMonitor``, a ``trio.abc.Instrument``. Trio's scheduler alternates between
waiting for I/O (``before_io_wait`` .. ``after_io_wait``) and running every task that is
ready. The time from one ``after_io_wait`` to the next ``before_io_wait`` is one *run*:
for that long no socket was looked at, so no other connection, no control request and no
admin call could be served. A run is a **stall**; its length is recorded in a windowed
histogram (the metrics window) and in a one-second window (``last_second``).
The **busy ratio** is the share of wall time spent in runs: 1 - (time in I/O wait) / wall
time. In one CPython process the loop is one CPU, so a busy ratio near 1 means the broker
is CPU-bound: no pool size can help, only less work per request or more brokers.
Cumulative busy time is sampled at slot boundaries (``sample``) so that any window reads.
Must not: do anything costly per run (two clock reads and one histogram record).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from .window import Window, WindowedHistogram

_US = 1_000


class EventLoopMonitor(trio.abc.Instrument):
    def __init__(self, window: Window, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.window = window
        self.second = Window(1.0, 4, clock)  # "the last second": 0.75 .. 1 s of it
        self.clock = clock
        self.stalls = WindowedHistogram(window)
        self.recent_stalls = WindowedHistogram(self.second)
        self.busy_ns = 0  # cumulative time in runs
        self._run_started = clock()
        self._since = self._run_started
        self._samples: deque[tuple[int, int]] = deque(maxlen=window.slots + 2)
        # busy ns per quarter second, the current one last: (quarter number, busy ns)
        self._quarters: deque[list[int]] = deque(maxlen=self.second.slots + 1)
        self.sample(self._run_started)

    # -- the instrument (called by Trio's scheduler)

    def before_io_wait(self, timeout: float) -> None:
        now = self.clock()
        run = now - self._run_started
        self.busy_ns += run
        us = run // _US
        quarter = now // self.second.slot_ns
        self.stalls.record(us, now // self.window.slot_ns)
        self.recent_stalls.record(us, quarter)
        quarters = self._quarters
        if quarters and quarters[-1][0] == quarter:
            quarters[-1][1] += run
        else:
            quarters.append([quarter, run])

    def after_io_wait(self, timeout: float) -> None:
        self._run_started = self.clock()

    # -- reading

    def busy_so_far(self, now_ns: int) -> int:
        """Cumulative busy ns up to now (the current run counted: the reader is in it)."""
        return self.busy_ns + max(0, now_ns - self._run_started)

    def sample(self, now_ns: int | None = None) -> None:
        """Note the cumulative busy time now (called at each metrics slot boundary)."""
        now = self.clock() if now_ns is None else now_ns
        self._samples.append((now, self.busy_so_far(now)))

    def _window_ratio(self, now: int) -> float:
        busy_now = self.busy_so_far(now)
        t0, b0 = self._samples[-1]
        for t, b in self._samples:
            if t >= now - self.window.span_ns:
                t0, b0 = t, b
                break
        if now <= t0:
            return 0.0
        return min(1.0, max(0.0, (busy_now - b0) / (now - t0)))

    def _last_second_ratio(self, now: int) -> float:
        slot = self.second.slot_ns
        current = now // slot
        first = current - self.second.slots + 1  # the oldest quarter still in the second
        busy = sum(b for q, b in self._quarters if first <= q <= current)
        busy += max(0, now - max(self._run_started, current * slot))  # the run we are in
        span = now - max(first * slot, self._since)
        return min(1.0, max(0.0, busy / span)) if span > 0 else 0.0

    def figures(self, now_ns: int | None = None) -> dict[str, Any]:
        """The snapshot's ``event_loop`` section."""
        now = self.clock() if now_ns is None else now_ns
        recent = self.recent_stalls.read(now // self.second.slot_ns)
        return {
            "busy_ratio": round(self._window_ratio(now), 4),
            "stall_ms": self.stalls.read(now // self.window.slot_ns).scaled(1e-3),
            "last_second": {
                "busy_ratio": round(self._last_second_ratio(now), 4),
                "stall_p99_ms": round(recent.percentiles[3] / 1e3, 3),
                "stall_max_ms": round(recent.max / 1e3, 3),
            },
        }
