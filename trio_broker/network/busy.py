"""A connection's busy time, as its processor accounts for it.

Owns: ``BusyMeter``: the wall time of a connection's network work minus the time it waited
for its peer (socket readiness, counted in the ``WaitClock``), charged to whichever
processor owns the connection when a stretch of work ends (the basis of the network
pool's idle ratio). Plain bookkeeping: no I/O.
"""

from __future__ import annotations

from time import perf_counter_ns

from .connection import Connection
from .send import WaitClock


class BusyMeter:
    """Busy time of one connection's work, charged to its current owner: the wall time
    since ``start`` minus the waits for the peer counted in ``clock`` since then."""

    __slots__ = ("clock", "conn", "running", "t0", "w0")

    def __init__(self, conn: Connection, clock: WaitClock) -> None:
        self.conn = conn
        self.clock = clock
        self.running = False
        self.t0 = 0
        self.w0 = 0

    def start(self) -> None:
        self.running = True
        self.t0 = perf_counter_ns()
        self.w0 = self.clock.waited_ns

    def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        busy = perf_counter_ns() - self.t0 - (self.clock.waited_ns - self.w0)
        if busy > 0:
            self.conn.processor.add_busy(busy)
