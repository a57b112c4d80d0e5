"""Connection limits, as Kafka's ConnectionQuotas: how many, from where, how fast.

Owns: ``ConnectionLimits`` (plain values the broker derives from its config) and
``ConnectionQuotas``, which the acceptors consult:
- ``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``): a connection
  over its address's limit is refused at accept (closed at once, counted);
- ``max.connections``, broker-wide and per listener (``listener.name.<l>.max.connections``):
  over the limit, the least recently active connection of the listener is closed to make
  room (Kafka's closeExcessConnections), those that never sent a request first, so a
  flood cannot lock regular clients out;
- ``max.connection.creation.rate``, broker-wide and per listener: the acceptor waits before
  accepting more than the rate allows in any one second (KIP-612), counted as throttled.
Control-plane connections never count against, or are closed for, data-plane limits.
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field

import trio

UNLIMITED = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = UNLIMITED
    per_listener: dict[str, int] = field(default_factory=dict)
    max_per_ip: int = UNLIMITED
    per_ip_overrides: dict[str, int] = field(default_factory=dict)
    max_creation_rate: int = UNLIMITED
    per_listener_rate: dict[str, int] = field(default_factory=dict)


class _RateWindow:
    """Accept times of the last second, to hold accepts to ``rate`` per second."""

    __slots__ = ("times",)

    def __init__(self) -> None:
        self.times: collections.deque[float] = collections.deque()

    def delay(self, rate: int, now: float) -> float:
        """Seconds to wait before one more accept keeps within ``rate`` per second."""
        times = self.times
        while times and times[0] <= now - 1.0:
            times.popleft()
        if rate >= UNLIMITED or len(times) < rate:
            return 0.0
        if rate <= 0:
            return math.inf
        return times[len(times) - rate] + 1.0 - now

    def record(self, now: float) -> None:
        self.times.append(now)


class ConnectionQuotas:
    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.per_ip: collections.Counter[str] = collections.Counter()
        self.per_listener: collections.Counter[str] = collections.Counter()
        self.data_plane_total = 0
        self.rejected = 0  # refused at accept: over the per-IP limit
        self.evicted = 0  # closed to make room under max.connections
        self.throttled_accepts = 0  # accepts delayed by the creation rate
        self._broker_rate = _RateWindow()
        self._listener_rates: dict[str, _RateWindow] = collections.defaultdict(_RateWindow)

    def update(self, limits: ConnectionLimits) -> None:
        self.limits = limits

    def ip_limit(self, ip: str) -> int:
        return self.limits.per_ip_overrides.get(ip, self.limits.max_per_ip)

    def admit(self, ip: str) -> bool:
        """Whether one more connection from ``ip`` is within its limit."""
        return self.per_ip[ip] < self.ip_limit(ip)

    def opened(self, listener: str, ip: str, *, control: bool) -> None:
        self.per_ip[ip] += 1
        self.per_listener[listener] += 1
        if not control:
            self.data_plane_total += 1

    def closed(self, listener: str, ip: str, *, control: bool) -> None:
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]
        self.per_listener[listener] -= 1
        if not control:
            self.data_plane_total -= 1

    def excess(self, listener: str, *, control: bool) -> int:
        """How many connections the listener is over its limit or the broker's."""
        if control:
            return 0
        over_listener = self.per_listener[listener] - self.limits.per_listener.get(
            listener, UNLIMITED
        )
        over_broker = self.data_plane_total - self.limits.max_connections
        return max(0, over_listener, over_broker)

    async def wait_for_creation_slot(self, listener: str, *, control: bool) -> None:
        """Wait until one more connection keeps within the creation rates, then count it."""
        if control:
            return
        rate_window = self._listener_rates[listener]
        listener_rate = self.limits.per_listener_rate.get(listener, UNLIMITED)
        throttled = False
        while True:
            now = trio.current_time()
            delay = max(
                self._broker_rate.delay(self.limits.max_creation_rate, now),
                rate_window.delay(listener_rate, now),
            )
            if delay <= 0:
                break
            throttled = True
            await trio.sleep(delay)
        if throttled:
            self.throttled_accepts += 1
        now = trio.current_time()
        self._broker_rate.record(now)
        rate_window.record(now)
