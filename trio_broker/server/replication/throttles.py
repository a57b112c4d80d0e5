"""Replication throttles (KIP-73): Kafka's ReplicationQuotaManager, once per side.

Owns: which partitions of a topic a ``*.replication.throttled.replicas`` list throttles
on one broker (``throttled_partitions``, as Kafka's TopicConfigHandler: the entries naming
this broker's id, or every partition for ``"*"``; the lists' syntax is the topic config's,
``config.topic_config.throttled_replicas_problem``), and ``ReplicationQuota``: one
side's throttled partitions, by topic, and the byte rate of what this broker sends
(leader) or receives (follower) for them, against ``leader.replication.throttled.rate`` /
``follower.replication.throttled.rate``.

The rules are Kafka's (ReplicaManager, ReplicaFetcherThread): a partition's data is held
back only for a replica out of the ISR, on a partition the side throttles, while the
side's rate is over its bound (``holds``); the bytes of every throttled partition count,
in-sync replicas' too (``record``), so that replication as a whole stays near the rate.
The rate is measured as Kafka's SimpleRate: over ``replication.quota.window.num`` samples
of ``replication.quota.window.size.seconds``, and over at least one window, not the
``num - 1`` windows of the client quotas' Rate: a throttled copy starts at its rate,
instead of sending ten seconds' worth at once (a burst that would make a throttle of a few
megabytes do nothing at all). Memory only; the bounds are read from the running config at
every check, so a change applies at once. Must not: read or send records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..config import (
    FOLLOWER,
    LEADER,
    LONG_MAX,
    THROTTLED_REPLICAS,
    throttled_replicas_problem,
)
from ..quotas import SampledRate

log = logging.getLogger("trio_broker.replication")

THROTTLED_RATE = {
    LEADER: "leader.replication.throttled.rate",
    FOLLOWER: "follower.replication.throttled.rate",
}
NO_THROTTLE = LONG_MAX  # Kafka's default rate: Long.MAX_VALUE, no throttle

EVERY_PARTITION: frozenset[int] | None = None  # what "*" throttles
_NONE: frozenset[int] = frozenset()


def split_list(raw: str) -> tuple[str, ...]:
    """A list value as the config parser splits it: comma-separated, trimmed."""
    text = raw.strip()
    return tuple(item.strip() for item in text.split(",")) if text else ()


def throttled_partitions(items: Sequence[str], broker_id: int) -> frozenset[int] | None:
    """The partitions a (valid) list throttles on ``broker_id``: those of the entries
    naming it, or ``EVERY_PARTITION`` (None) for ``"*"``."""
    if "".join(items) == "*":
        return EVERY_PARTITION
    out = set()
    for item in items:
        partition, _, broker = item.partition(":")
        if int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


class ReplicationQuota:
    """One side's throttle (``LEADER`` or ``FOLLOWER``) on this broker."""

    def __init__(
        self,
        side: str,
        broker_id: int,
        bound: Callable[[], int],
        *,
        samples: int,
        window_s: float,
        clock: Callable[[], float],
    ) -> None:
        self.side = side
        self.broker_id = broker_id
        self.key = THROTTLED_REPLICAS[side]
        self._bound = bound
        self._clock = clock
        self._rate = SampledRate(samples, window_s, min_windows=1)
        # topic -> its throttled partitions here (None: every one); absent: none
        self._throttled: dict[str, frozenset[int] | None] = {}
        self.held_back = 0  # partitions whose data was held back, since start
        self.bytes_total = 0  # bytes of throttled partitions, since start

    # ----------------------------------------------------------- which ones

    def note_topic(self, topic: str, configs: Mapping[str, str]) -> None:
        """A topic's overrides, as they are now in force here (creation, a change)."""
        items = split_list(configs.get(self.key) or "")
        if items and throttled_replicas_problem(items) is not None:
            log.warning("%s: ignoring %s=%s", topic, self.key, configs[self.key])
            items = ()
        partitions = throttled_partitions(items, self.broker_id) if items else frozenset()
        if partitions is EVERY_PARTITION or partitions:
            self._throttled[topic] = partitions
        else:
            self._throttled.pop(topic, None)

    def forget_topic(self, topic: str) -> None:
        self._throttled.pop(topic, None)

    def is_throttled(self, topic: str, partition: int) -> bool:
        # One lookup: the lists change on worker threads (a topic's configs put in force)
        partitions = self._throttled.get(topic, _NONE)
        return partitions is None or partition in partitions

    def throttled_among(self, keys: Iterable[tuple[str, int]]) -> int:
        """How many of ``keys`` (partitions led or followed here) this side throttles."""
        return sum(1 for topic, partition in keys if self.is_throttled(topic, partition))

    # ---------------------------------------------------------------- rate

    @property
    def bound(self) -> int:
        return int(self._bound())

    def exceeded(self) -> bool:
        """Is the rate over the bound now? (Never without a throttle rate.)"""
        bound = self.bound
        return bound < NO_THROTTLE and self._rate.measure(self._clock()) > bound

    def holds(self, topic: str, partition: int, in_sync: bool) -> bool:
        """Kafka's shouldLeaderThrottle / shouldFollowerThrottle: leave this partition's
        data out of the fetch (and count that it was)."""
        if in_sync or not self.is_throttled(topic, partition) or not self.exceeded():
            return False
        self.held_back += 1
        return True

    def record(self, size: int) -> None:
        """Bytes of a throttled partition sent (leader) or received (follower)."""
        self.bytes_total += size
        self._rate.record(float(size), self._clock())

    def record_sent(self, sizes: Iterable[tuple[str, int, int]]) -> None:
        """(topic, partition, bytes) of a response: the throttled ones count."""
        total = sum(size for topic, p, size in sizes if size and self.is_throttled(topic, p))
        if total:
            self.record(total)

    def byte_rate(self) -> float:
        return self._rate.measure(self._clock())

    def figures(self, keys: Iterable[tuple[str, int]]) -> dict[str, Any]:
        """For the metrics: the bound (None: no throttle), the byte rate of throttled
        partitions, how many of ``keys`` are throttled, and the totals since start."""
        bound = self.bound
        return {
            "rate_limit": None if bound >= NO_THROTTLE else bound,
            "byte_rate": round(self.byte_rate(), 1),
            "throttled_partitions": self.throttled_among(keys),
            "bytes": self.bytes_total,
            "held_back": self.held_back,
        }


class ReplicationQuotas:
    """Both sides of this broker's replication throttles (Kafka's ReplicationQuotaManagers
    ``leader`` and ``follower``)."""

    def __init__(
        self,
        broker_id: int,
        config: Callable[[], Mapping[str, Any]],
        *,
        samples: int,
        window_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        def quota(side: str) -> ReplicationQuota:
            key = THROTTLED_RATE[side]
            return ReplicationQuota(
                side,
                broker_id,
                lambda: config()[key],
                samples=samples,
                window_s=window_s,
                clock=clock,
            )

        self.leader = quota(LEADER)
        self.follower = quota(FOLLOWER)

    def note_topic(self, topic: str, configs: Mapping[str, str]) -> None:
        self.leader.note_topic(topic, configs)
        self.follower.note_topic(topic, configs)

    def forget_topic(self, topic: str) -> None:
        self.leader.forget_topic(topic)
        self.follower.forget_topic(topic)
