"""Client quota enforcement (Kafka's ClientQuotaManager and ClientRequestQuotaManager).

Owns: ``SampledRate`` (a rate over ``quota.window.num`` samples of
``quota.window.size.seconds``, as Kafka's Rate stat measures it), ``QuotaManager`` and the
throttle arithmetic. For each request it finds the quota that applies to the client by
Kafka's precedence (user+client-id, user+default client, user, default user+client-id,
default user+default client, default user, client-id, default client-id), records usage in
the sensor that quota names (so clients sharing a default-entity quota share one sensor),
and returns how long the client must be throttled:
``throttle_ms = (observed - quota) / quota * window``, bounded by the whole quota window
for byte rates and by one sample window for request time (Kafka's bounds).

Three kinds, each with its own sensors: ``producer_byte_rate`` (Produce request bytes),
``consumer_byte_rate`` (Fetch response bytes) and ``request_percentage`` (handler and
network time, as a percentage of one thread; the broker's capacity is
``(num.io.threads + num.network.threads) * 100``). Stores nothing: quotas come from the
``QuotaStore``, which the admin API and AlterClientQuotas write.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .store import EntityType, QuotaEntity, QuotaStore, Values

PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"

# Most (kind, user, client id) lookups remembered between quota changes; past it the
# cache starts again (clients with ever-new ids must not grow it without bound).
_LOOKUPS_CACHED = 4096


class SampledRate:
    """Sum of values per second over the last ``samples`` windows of ``window_s``.

    The time a rate is measured over is the time since its oldest sample began, but at
    least ``min_windows`` windows: Kafka's Rate (client quotas) takes ``samples - 1``, so
    a client new to a quota may send ten windows' worth at once; its SimpleRate
    (replication throttles) takes one, so a throttled copy runs at its rate from the
    first second (``replication.throttles``).
    """

    __slots__ = ("_samples", "_starts", "_totals", "min_windows", "samples", "window_s")

    def __init__(self, samples: int, window_s: float, min_windows: int | None = None) -> None:
        self.samples = samples
        self.window_s = window_s
        self.min_windows = samples - 1 if min_windows is None else min_windows
        self._starts: list[float] = []
        self._totals: list[float] = []

    def record(self, value: float, now: float) -> None:
        if not self._starts or now - self._starts[-1] >= self.window_s:
            self._starts.append(now)
            self._totals.append(0.0)
            if len(self._starts) > self.samples:
                del self._starts[0], self._totals[0]
        self._totals[-1] += value

    def _expire(self, now: float) -> None:
        horizon = now - self.samples * self.window_s
        while self._starts and self._starts[0] + self.window_s <= horizon:
            del self._starts[0], self._totals[0]

    def window(self, now: float) -> float:
        """Seconds the rate is measured over: at least ``min_windows`` full windows."""
        self._expire(now)
        elapsed = now - self._starts[0] if self._starts else 0.0
        return max(elapsed, self.min_windows * self.window_s)

    def measure(self, now: float) -> float:
        self._expire(now)
        return sum(self._totals) / self.window(now)


@dataclass(frozen=True, slots=True)
class QuotaMatch:
    entity: QuotaEntity
    bound: float
    sensor: tuple[str, str | None, str | None]  # (kind, user tag, client tag)


def candidate_entities(user: str, client_id: str) -> list[QuotaEntity]:
    """Kafka's quota precedence, most specific first."""
    u, c = EntityType.USER, EntityType.CLIENT_ID
    return [
        QuotaEntity.of({u: user, c: client_id}),
        QuotaEntity.of({u: user, c: None}),
        QuotaEntity.of({u: user}),
        QuotaEntity.of({u: None, c: client_id}),
        QuotaEntity.of({u: None, c: None}),
        QuotaEntity.of({u: None}),
        QuotaEntity.of({c: client_id}),
        QuotaEntity.of({c: None}),
    ]


def _sensor_tags(entity: QuotaEntity, user: str, client_id: str) -> tuple[str | None, str | None]:
    """Whose usage a quota meters: named entities per name, default ones per client."""
    d = dict(entity.parts)
    user_tag = user if EntityType.USER in d else None
    client_tag = client_id if EntityType.CLIENT_ID in d else None
    return user_tag, client_tag


def _lookup(
    quotas: Mapping[QuotaEntity, Values], kind: str, user: str, client_id: str
) -> QuotaMatch | None:
    """Kafka's precedence walk over one snapshot of the store."""
    for entity in candidate_entities(user, client_id):
        values = quotas.get(entity)
        if values is not None and kind in values:
            u, c = _sensor_tags(entity, user, client_id)
            return QuotaMatch(entity, float(values[kind]), (kind, u, c))
    return None


class QuotaManager:
    def __init__(
        self,
        store: QuotaStore,
        *,
        samples: int,
        window_s: float,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.samples = samples
        self.window_s = window_s
        self.clock = clock
        self._sensors: dict[tuple[str, str | None, str | None], SampledRate] = {}
        self.throttled = {PRODUCE: 0, FETCH: 0, REQUEST: 0}
        # Lookups of quota_for, valid while the store's snapshot is the one they read:
        # every request of a client asks the same question two or three times, and the
        # eight-entity precedence walk cost 16% of a one-record Produce's CPU.
        self._lookups: dict[tuple[str, str, str], QuotaMatch | None] = {}
        self._lookups_of: Mapping[QuotaEntity, Values] | None = None

    def quota_for(self, kind: str, user: str, client_id: str) -> QuotaMatch | None:
        """The quota of ``kind`` that applies to (user, client id), if any."""
        quotas = self.store.snapshot
        if not quotas:
            return None
        if quotas is not self._lookups_of:
            self._lookups.clear()
            self._lookups_of = quotas
        key = (kind, user, client_id)
        try:
            return self._lookups[key]
        except KeyError:
            pass
        if len(self._lookups) >= _LOOKUPS_CACHED:
            self._lookups.clear()
        match = self._lookups[key] = _lookup(quotas, kind, user, client_id)
        return match

    def _sensor(self, key: tuple[str, str | None, str | None]) -> SampledRate:
        sensor = self._sensors.get(key)
        if sensor is None:
            sensor = self._sensors[key] = SampledRate(self.samples, self.window_s)
        return sensor

    def record(self, kind: str, user: str, client_id: str, value: float) -> int:
        """Record usage; return the throttle time in ms (0 when within the quota)."""
        match = self.quota_for(kind, user, client_id)
        if match is None:
            return 0
        now = self.clock()
        sensor = self._sensor(match.sensor)
        sensor.record(value, now)
        observed = sensor.measure(now)
        if observed <= match.bound:
            return 0
        window = sensor.window(now)
        throttle_s = (observed - match.bound) / match.bound * window
        bound_s = self.samples * self.window_s if kind != REQUEST else self.window_s
        self.throttled[kind] += 1
        return max(1, math.ceil(min(throttle_s, bound_s) * 1000))

    def record_quietly(self, kind: str, user: str, client_id: str, value: float) -> None:
        """Record usage that throttles later requests, not this one (network time)."""
        match = self.quota_for(kind, user, client_id)
        if match is not None:
            self._sensor(match.sensor).record(value, self.clock())

    def observed(self, kind: str, user: str, client_id: str) -> float | None:
        """The current observed rate for the client under ``kind`` (None: no quota)."""
        match = self.quota_for(kind, user, client_id)
        if match is None:
            return None
        return self._sensor(match.sensor).measure(self.clock())
