"""Keyed one-shot timers on the trio clock, served by one task.

Owns: ``Timers``: ``schedule(key, delay, callback)`` arms (or re-arms) the timer of
``key``; ``cancel(key)`` disarms it; ``run`` fires due callbacks, in deadline order, from
its own task. Callbacks are plain functions: the coordinator's state changes are
synchronous, so a timer firing never interleaves with a request. Deadlines live in a heap
with lazy deletion (a re-armed key leaves its old entry behind, skipped when it surfaces).
The session, join, sync and retention timeouts of the group coordinator run here; with
``trio.testing.MockClock(autojump_threshold=0)`` they pass without waiting. It must not
know what the timers are for; a failing callback is logged and the others still fire.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Callable, Hashable

import trio

log = logging.getLogger("trio_broker.groups")

Callback = Callable[[], None]


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Hashable]] = []
        self._armed: dict[Hashable, tuple[int, float, Callback]] = {}
        self._seq = itertools.count()
        self._wakeup = trio.Event()

    def __len__(self) -> int:
        return len(self._armed)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._armed

    def deadline(self, key: Hashable) -> float | None:
        entry = self._armed.get(key)
        return None if entry is None else entry[1]

    def schedule(self, key: Hashable, delay_s: float, callback: Callback) -> None:
        """Fire ``callback`` ``delay_s`` seconds from now, unless re-armed or cancelled."""
        deadline = trio.current_time() + max(0.0, delay_s)
        seq = next(self._seq)
        earliest = self._heap[0][0] if self._heap else math.inf
        self._armed[key] = (seq, deadline, callback)
        heapq.heappush(self._heap, (deadline, seq, key))
        if deadline < earliest:
            self._wakeup.set()

    def cancel(self, key: Hashable) -> None:
        self._armed.pop(key, None)

    def _pop_due(self, now: float) -> list[Callback]:
        due = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, seq, key = heapq.heappop(heap)
            entry = self._armed.get(key)
            if entry is not None and entry[0] == seq:
                del self._armed[key]
                due.append(entry[2])
        return due

    def _next_deadline(self) -> float:
        heap = self._heap
        while heap:
            _, seq, key = heap[0]
            entry = self._armed.get(key)
            if entry is not None and entry[0] == seq:
                return heap[0][0]
            heapq.heappop(heap)
        return math.inf

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Fire timers until cancelled."""
        task_status.started()
        while True:
            self._wakeup = trio.Event()
            with trio.move_on_at(self._next_deadline()):
                await self._wakeup.wait()
            for callback in self._pop_due(trio.current_time()):
                try:
                    callback()
                except Exception:
                    log.exception("group coordinator timer %r failed", callback)
