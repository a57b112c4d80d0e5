"""Idle ratios of handler and processor pools over the window, right across resizes.

Owns: ``BusySampler`` and its two kinds, ``HandlerSampler`` (a ``HandlerPool``: Kafka's
RequestHandlerAvgIdlePercent) and ``ProcessorSampler`` (a listener's processors:
NetworkProcessorAvgIdlePercent), and ``IdleFigures``, what they read as.

Every unit (a handler or a processor) keeps a cumulative busy time in ns. A sampler notes
each unit's busy time at every slot boundary of the window (``sample``) and remembers the
units it saw until they are out of the window. Reading (``idle``) takes the oldest sample
inside the window as its start ``t0``; for each unit that existed at some point of
``[t0, now]`` it takes the busy time over the part of the window the unit existed
(``busy(end) - busy(max(t0, start))``, clamped to that part) and the pool's idle ratio is
``1 - sum(busy) / sum(existence)``: a unit counts in proportion to how long it existed
within the window, so growing or shrinking a pool never pushes the ratio out of 0..1.
Processors are read differently (``shares_one_cpu``): they are tasks of the one event
loop, so their pool's idle ratio is ``1 - sum(busy) / window``, the share of the loop's
time that the network work did not take. At a constant load it stays where it is when
only the number of processors changes; each processor's own ratio is its share likewise.
A handler in the middle of a request counts its request's time so far as busy, so a held
handler reads as busy at once, not only after it finishes.
Must not: change the pools it reads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .window import Window


@dataclass(slots=True)
class IdleFigures:
    idle_ratio: float  # the pool's, weighted by each unit's existence in the window
    units: dict[int, float] = field(default_factory=dict)  # live unit id -> idle ratio
    existence_ns: int = 0  # unit-nanoseconds the pool existed in the window
    busy_ns: int = 0
    window_ns: int = 0  # the length of [t0, now]


class BusySampler:
    """Samples the busy time of a changing set of units; reads idle ratios over a window."""

    # Units that share one CPU (tasks of the event loop): the pool's busy time is divided
    # by the window, not by the units' summed existence.
    shares_one_cpu = False

    def __init__(self, window: Window, units: Callable[[], Iterable[Any]]) -> None:
        self.window = window
        self._units = units
        self._known: dict[int, Any] = {}
        self._samples: deque[tuple[int, dict[int, int]]] = deque(maxlen=window.slots + 2)
        self.sample(window.clock())

    # -- what a unit is (overridden per kind)

    def start_of(self, unit: Any) -> int:
        raise NotImplementedError

    def end_of(self, unit: Any) -> int:
        """When the unit left its pool, or 0 while it is in it."""
        raise NotImplementedError

    def busy_of(self, unit: Any, now_ns: int) -> int:
        """Busy ns of ``unit`` up to ``now_ns`` (never decreasing as ``now_ns`` grows)."""
        raise NotImplementedError

    # -- sampling and reading

    def _discover(self) -> list[Any]:
        live = list(self._units())
        for unit in live:
            self._known[id(unit)] = unit
        return live

    def sample(self, now_ns: int) -> None:
        """Note every unit's busy time now (called at each slot boundary)."""
        self._discover()
        busy = {key: self.busy_of(u, now_ns) for key, u in self._known.items()}
        self._samples.append((now_ns, busy))
        # A unit that left before this window began cannot count in any later one.
        horizon = now_ns - self.window.span_ns
        for key, unit in list(self._known.items()):
            end = self.end_of(unit)
            if end and end < horizon:
                del self._known[key]

    def _base(self, now_ns: int) -> tuple[int, dict[int, int]]:
        since = now_ns - self.window.span_ns
        for t, busy in self._samples:
            if t >= since:
                return t, busy
        return self._samples[-1]

    def idle(self, now_ns: int | None = None) -> IdleFigures:
        now = self.window.clock() if now_ns is None else now_ns
        live = self._discover()
        t0, base = self._base(now)
        total_busy = total_exist = 0
        ratios: dict[int, float] = {}
        per_key: dict[int, float] = {}
        for key, unit in self._known.items():
            start = self.start_of(unit)
            end = self.end_of(unit) or now
            a = max(t0, start)
            b = min(now, end)
            if b <= a:
                continue
            before = base.get(key, 0) if start <= t0 else 0
            busy = self.busy_of(unit, b) - before
            busy = min(max(busy, 0), b - a)
            total_busy += busy
            total_exist += b - a
            per_key[key] = 1.0 - busy / (b - a)
        for unit in live:
            ratios[unit.id] = per_key.get(id(unit), 1.0)
        span = max(0, now - t0)
        if self.shares_one_cpu:
            idle = max(0.0, 1.0 - total_busy / span) if span else 1.0
        else:
            idle = 1.0 - total_busy / total_exist if total_exist else 1.0
        return IdleFigures(idle, ratios, total_exist, total_busy, span)


class HandlerSampler(BusySampler):
    """A handler pool (``server.handlers.handler_pool.HandlerPool``)."""

    def __init__(self, window: Window, pool: Any) -> None:
        self.pool = pool
        super().__init__(window, lambda: pool.handlers)

    def start_of(self, unit: Any) -> int:
        started: int = unit.started_ns
        return started

    def end_of(self, unit: Any) -> int:
        ended: int = unit.ended_ns
        return ended

    def busy_of(self, unit: Any, now_ns: int) -> int:
        busy: int = unit.busy_ns
        current = unit.current
        if current is not None:
            since = current.times.dequeue_ns
            if since and now_ns > since:
                busy += now_ns - since
        return busy


class ProcessorSampler(BusySampler):
    """The processors of one listener (``network.listener.ListenerRuntime``): busy is the
    time their network work took on the event loop, waits for peers excluded."""

    shares_one_cpu = True

    def __init__(self, window: Window, listener: Any) -> None:
        self.listener = listener
        super().__init__(window, lambda: listener.processors)

    def start_of(self, unit: Any) -> int:
        created: int = unit.created_ns
        return created

    def end_of(self, unit: Any) -> int:
        retired: int = unit.retired_ns
        return retired

    def busy_of(self, unit: Any, now_ns: int) -> int:
        busy: int = unit.busy_ns
        return busy


class IoSampler:
    """The io pool's threads (``server.common.io_pool.IoPool``): idle is the share of the thread
    capacity the pool offered in the window (its size integrated over time, so resizes
    count as they happened) that no storage job used."""

    def __init__(self, window: Window, pool: Any) -> None:
        self.window = window
        self.pool = pool
        self._samples: deque[tuple[int, int, int]] = deque(maxlen=window.slots + 2)
        self.sample(window.clock())

    def sample(self, now_ns: int) -> None:
        self._samples.append((now_ns, self.pool.busy_ns(now_ns), self.pool.capacity_ns(now_ns)))

    def idle(self, now_ns: int | None = None) -> float:
        now = self.window.clock() if now_ns is None else now_ns
        _, busy0, cap0 = self._samples[-1]
        for t, busy, cap in self._samples:
            if t >= now - self.window.span_ns:
                busy0, cap0 = busy, cap
                break
        capacity = self.pool.capacity_ns(now) - cap0
        if capacity <= 0:
            return 1.0
        busy_ns = self.pool.busy_ns(now) - busy0
        return min(1.0, max(0.0, 1.0 - busy_ns / capacity))
