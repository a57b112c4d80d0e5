"""The purgatory: requests that wait for something without holding a handler task.

Owns: ``DelayedOperation`` and ``Purgatory`` (Kafka's DelayedOperationPurgatory). A
handler that must wait (a fetch for ``min_bytes``, a produce with acks=all, a JoinGroup
until the rebalance completes) parks an operation under some keys and returns; whoever
changes the state behind a key calls ``check(key)``; an operation completes exactly once,
either when its ``ready()`` check passes or when its deadline passes. Completion runs
``complete()`` in the purgatory's own nursery, so it may do I/O (read a log in a thread)
before it sends the response. Deadlines live in one heap served by one timer task.
``shutdown()`` completes every waiting operation at once, so that graceful shutdown
answers them before it closes connections; ``stop()`` ends the purgatory's task.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Hashable, Iterable

import trio

log = logging.getLogger("trio_broker.server")


class DelayedOperation:
    """Subclass and implement ``ready`` (cheap, sync) and ``complete`` (async)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline  # trio clock seconds
        self.completed = False
        self.expired = False
        self.keys: tuple[Hashable, ...] = ()

    def ready(self) -> bool:
        """Whether the operation can complete now (called on every ``check`` of a key)."""
        raise NotImplementedError

    async def complete(self) -> None:
        """Build and send the response; ``expired`` says whether the deadline passed."""
        raise NotImplementedError


class Purgatory:
    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, set[DelayedOperation]] = {}
        self._heap: list[tuple[float, int, DelayedOperation]] = []
        self._seq = itertools.count()
        self._nursery: trio.Nursery | None = None
        self._wakeup = trio.Event()
        self._closing = False
        self._stopped = False
        self.completed_count = 0
        self.expired_count = 0

    @property
    def size(self) -> int:
        """Operations waiting (Kafka's PurgatorySize)."""
        return sum(1 for _, _, op in self._heap if not op.completed)

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await self._expire_loop()

    def park(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete ``op`` now if it is ready, else watch it under ``keys``.

        Returns True if it completed at once.
        """
        if self._closing or op.ready():
            self._finish(op, expired=self._closing)
            return True
        op.keys = tuple(keys)
        for key in op.keys:
            self._watchers.setdefault(key, set()).add(op)
        if op.deadline < math.inf:
            earliest = self._heap[0][0] if self._heap else math.inf
            heapq.heappush(self._heap, (op.deadline, next(self._seq), op))
            if op.deadline < earliest:
                self._wakeup.set()
        return False

    def check(self, key: Hashable) -> int:
        """Something behind ``key`` changed: complete the operations now ready."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        done = [op for op in ops if not op.completed and op.ready()]
        for op in done:
            self._finish(op, expired=False)
        return len(done)

    def watched(self, key: Hashable) -> int:
        return len(self._watchers.get(key, ()))

    def complete_all(self, key: Hashable) -> int:
        """Complete every operation under ``key`` now (e.g. the partition moved away)."""
        ops = list(self._watchers.get(key, ()))
        for op in ops:
            if not op.completed:
                self._finish(op, expired=False)
        return len(ops)

    def shutdown(self) -> None:
        """Complete every waiting operation now; later ones complete at once."""
        self._closing = True
        for _, _, op in list(self._heap):
            if not op.completed:
                self._finish(op, expired=True)
        for ops in list(self._watchers.values()):
            for op in list(ops):
                if not op.completed:
                    self._finish(op, expired=True)
        self._wakeup.set()

    def stop(self) -> None:
        """End the purgatory's task (after the network is down: nothing can park now)."""
        self.shutdown()
        self._stopped = True
        self._wakeup.set()

    def _finish(self, op: DelayedOperation, *, expired: bool) -> None:
        if op.completed:
            return
        op.completed = True
        op.expired = expired
        for key in op.keys:
            ops = self._watchers.get(key)
            if ops is not None:
                ops.discard(op)
                if not ops:
                    del self._watchers[key]
        if expired:
            self.expired_count += 1
        else:
            self.completed_count += 1
        assert self._nursery is not None, "the purgatory is not running"
        self._nursery.start_soon(self._complete, op)

    async def _complete(self, op: DelayedOperation) -> None:
        try:
            await op.complete()
        except Exception:
            log.exception("delayed operation %r failed to complete", op)

    async def _expire_loop(self) -> None:
        heap = self._heap
        while True:
            while heap and heap[0][2].completed:
                heapq.heappop(heap)
            if self._stopped:
                return
            deadline = heap[0][0] if heap else math.inf
            self._wakeup = trio.Event()
            with trio.move_on_at(deadline):
                await self._wakeup.wait()
            now = trio.current_time()
            while heap and heap[0][0] <= now:
                _, _, op = heapq.heappop(heap)
                if not op.completed:
                    self._finish(op, expired=True)
