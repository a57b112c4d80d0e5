"""The pool of request bytes (``queued.max.request.bytes``): memory bounds reading.

Owns: ``MemoryPool``. Before a connection reads the body of a request it reserves the
request's size; when the pool is used up, connections stop reading (their channel is
muted, as Kafka mutes channels when its memory pool is exhausted) until memory comes back,
which happens when requests complete. Like Kafka's non-strict SimpleMemoryPool, a
reservation succeeds whenever any memory is left, so one request larger than what remains
is not starved; nothing grows without bound. Capacity <= 0 means unbounded.
"""

from __future__ import annotations

import trio


class MemoryPool:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self.waits = 0  # times a connection had to wait for memory
        self._lot = trio.lowlevel.ParkingLot()

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def available(self) -> int:
        return self.capacity - self.used if self.bounded else 0

    def try_reserve(self, size: int) -> bool:
        if self.bounded and self.used >= self.capacity:
            return False
        self.used += size
        return True

    async def reserve(self, size: int) -> None:
        """Reserve ``size`` bytes, waiting while the pool is used up."""
        if not self.try_reserve(size):
            self.waits += 1
            while not self.try_reserve(size):
                await self._lot.park()

    def release(self, size: int) -> None:
        self.used -= size
        if self.bounded and self.used < self.capacity:
            self._lot.unpark_all()
