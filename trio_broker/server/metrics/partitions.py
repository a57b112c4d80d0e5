"""Per-partition load: the counters the data path bumps for each partition replica.

Owns: ``PartitionCounters`` (one partition's cumulative figures since this broker
started: messages and bytes produced to it and bytes fetched from it by consumers, the
produce and consumer fetch requests that named it, both while this broker led it, and the
bytes of replication: fetched from its leader as follower, sent to its followers as
leader) and ``PartitionMetrics``, which keeps them by (topic, partition) and merges them
into the state of the replicas the broker holds for the snapshot's ``partitions``
section (``figures``). Recording is one dict lookup and a few integer additions per
partition; a partition's counters are made on its first record and dropped only with its
topic (``forget_topic``), so a replica that leaves and comes back goes on counting.
Must not: read a clock, derive rates (readers difference two snapshots), or know where
the partitions' state comes from (the broker hands it over, ``BrokerMetrics.set_partitions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Key = tuple[str, int]

COUNTERS = (
    "messages_in",
    "bytes_in",
    "bytes_out",
    "produce_requests",
    "fetch_requests",
    "replication_bytes_in",
    "replication_bytes_out",
)


class PartitionCounters:
    __slots__ = COUNTERS

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.produce_requests = 0
        self.fetch_requests = 0
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}


_ZERO = PartitionCounters()


class PartitionMetrics:
    def __init__(self) -> None:
        self.by_partition: dict[Key, PartitionCounters] = {}

    def counters(self, key: Key) -> PartitionCounters:
        c = self.by_partition.get(key)
        if c is None:
            c = self.by_partition[key] = PartitionCounters()
        return c

    def produced(self, topic: str, partition: int, nbytes: int, messages: int) -> None:
        c = self.counters((topic, partition))
        c.messages_in += messages
        c.bytes_in += nbytes
        c.produce_requests += 1

    def fetched(self, sizes: Iterable[tuple[str, int, int]]) -> None:
        """One consumer fetch response: (topic, partition, bytes) per partition answered."""
        by_partition = self.by_partition
        for topic, partition, nbytes in sizes:
            c = by_partition.get((topic, partition))
            if c is None:
                c = self.counters((topic, partition))
            c.fetch_requests += 1
            c.bytes_out += nbytes

    def replication_sent(self, sizes: Iterable[tuple[str, int, int]]) -> None:
        """One follower's fetch response: (topic, partition, bytes) sent as leader."""
        for topic, partition, nbytes in sizes:
            if nbytes:
                self.counters((topic, partition)).replication_bytes_out += nbytes

    def replication_received(self, topic: str, partition: int, nbytes: int) -> None:
        """Bytes fetched from the leader and appended here as follower."""
        self.counters((topic, partition)).replication_bytes_in += nbytes

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.by_partition if k[0] == topic]:
            del self.by_partition[key]

    def figures(self, states: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Each held replica's state (``topic``, ``partition`` and the rest) with its
        counters (zeros where none was recorded)."""
        out = []
        for state in states:
            c = self.by_partition.get((state["topic"], state["partition"]), _ZERO)
            out.append({**state, **c.as_dict()})
        return out
