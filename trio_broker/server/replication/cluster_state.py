"""The control plane's effect on this broker: partition leadership and the cluster view.

Owns: ``ClusterState`` — which partitions this broker leads (and at which leader epoch),
which it follows, the controller epoch it has seen, and the ``MetadataCache`` of the whole
cluster — and the three control requests that change them, as Kafka's ReplicaManager and
MetadataCache apply them:
- LeaderAndIsr makes this broker leader or follower of partitions (creating the topic and
  the log when they are new here). A request from an older controller epoch is refused
  with STALE_CONTROLLER_EPOCH, a partition state whose leader epoch is not newer than the
  one held is refused with STALE_CONTROLLER_EPOCH too, a partition this broker is not a
  replica of with UNKNOWN_TOPIC_OR_PARTITION. On a partition it no longer leads, produce and
  fetch get NOT_LEADER_OR_FOLLOWER, and fetches parked for it complete at once.
- StopReplica stops serving partitions and, when asked, deletes their logs.
- UpdateMetadata replaces the cluster view that Metadata answers from.
The state is kept in ``cluster_state.json`` in the first log dir (written atomically), so a
restarted broker keeps its role until a controller says otherwise. Blocking file I/O in
``save``; the rest is in-memory and cheap.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...apis.services import ClusterBroker, ClusterMetadata, PartitionAssignment, PartitionInfo
from ...protocol.errors import ErrorCode
from ..datadir import JsonDocument
from .metadata_cache import MetadataCache

log = logging.getLogger("trio_broker.server")


@dataclass(frozen=True, slots=True)
class Leadership:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterState:
    FILE = "cluster_state.json"

    def __init__(self, directory: Path, broker_id: int) -> None:
        self.document = JsonDocument(directory / self.FILE, what="cluster state")
        self.broker_id = broker_id
        self.controller_epoch = -1
        self.leadership: dict[tuple[str, int], Leadership] = {}
        self.cache = MetadataCache()
        # In a ZooKeeper cluster the controller's word is the only one: a partition it
        # has not described to this broker (since this broker started) is nobody's here,
        # not, as for a broker on its own, this one's.
        self.authoritative = False
        # True while this broker's ZooKeeper session is lost (until it registers again):
        # it leads nothing then, as the controller has moved its leaderships meanwhile.
        self.fenced: Callable[[], bool] = lambda: False

    # ---------------------------------------------------------------- queries

    def leads(self, topic: str, partition: int) -> bool:
        """Partitions no controller has spoken of are led here (a broker on its own)."""
        if self.fenced():
            return False
        state = self.leadership.get((topic, partition))
        if state is None:  # not a replica here: the cluster's view says who leads
            cached = self.cache.partitions.get(topic, {}).get(partition)
            if cached is None:
                return not self._placed(topic)
            return cached.leader == self.broker_id
        return state.leader == self.broker_id

    def leader_epoch(self, topic: str, partition: int) -> int:
        state = self.leadership.get((topic, partition))
        return 0 if state is None else state.leader_epoch

    def epoch_error(self, topic: str, partition: int, current_epoch: int) -> int:
        """Kafka's check of a request's current leader epoch (-1: not checked): older
        than this leader's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH."""
        if current_epoch == -1:
            return ErrorCode.NONE
        epoch = self.leader_epoch(topic, partition)
        if current_epoch < epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH if current_epoch > epoch else ErrorCode.NONE

    def leader_of(self, topic: str, partition: int) -> int:
        state = self.leadership.get((topic, partition))
        return self.broker_id if state is None else state.leader

    def partition_info(self, topic: str, partition: int) -> PartitionInfo:
        """What Metadata says of a partition this broker holds."""
        cached = self.cache.partitions.get(topic, {}).get(partition)
        if cached is not None:
            return cached
        state = self.leadership.get((topic, partition))
        if state is None and self._placed(topic):  # not described yet: no leader known
            return PartitionInfo(partition, -1, -1, (), ())
        if state is None:
            me = self.broker_id
            return PartitionInfo(partition, me, 0, (me,), (me,))
        return PartitionInfo(partition, state.leader, state.leader_epoch, state.replicas, state.isr)

    def _placed(self, topic: str) -> bool:
        return self.authoritative

    # --------------------------------------------------------------- changes

    def check_controller(self, controller_epoch: int) -> bool:
        """Accept a control request's controller epoch (False: it is stale)."""
        if controller_epoch < self.controller_epoch:
            return False
        self.controller_epoch = controller_epoch
        return True

    def assign(self, a: PartitionAssignment) -> int:
        """Apply one LeaderAndIsr partition state; returns its error code."""
        if self.broker_id not in a.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        key = (a.topic, a.partition)
        current = self.leadership.get(key)
        if current is not None and a.leader_epoch <= current.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.leadership[key] = Leadership(a.leader, a.leader_epoch, a.replicas, a.isr)
        role = "leader" if a.leader == self.broker_id else f"follower of {a.leader}"
        log.info("%s-%d: %s at leader epoch %d", a.topic, a.partition, role, a.leader_epoch)
        return ErrorCode.NONE

    def stop(self, topic: str, partition: int) -> None:
        """StopReplica: the partition is no longer served here."""
        state = self.leadership.get((topic, partition))
        epoch = -1 if state is None else state.leader_epoch
        self.leadership[(topic, partition)] = Leadership(-1, epoch, (), ())

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self.leadership if k[0] == topic]:
            del self.leadership[key]

    # ------------------------------------------------------------ persistence

    def load(self) -> None:
        data = self.document.read()
        if data is None:
            return
        with self.document.parsing():
            self._load(data)

    def _load(self, data: dict[str, Any]) -> None:
        self.controller_epoch = data["controller_epoch"]
        if self.authoritative:
            # A ZooKeeper cluster's broker leads nothing until the controller says so
            # again (it tells a broker that has just registered): what it led before it
            # stopped may have moved meanwhile.
            return
        for entry in data["leadership"]:
            self.leadership[(entry["topic"], entry["partition"])] = Leadership(
                entry["leader"],
                entry["leader_epoch"],
                tuple(entry["replicas"]),
                tuple(entry["isr"]),
            )
        cache = data.get("cache")
        if cache is not None:
            self.cache.replace(
                ClusterMetadata(
                    cache["controller_id"],
                    cache["controller_epoch"],
                    [
                        ClusterBroker(
                            b["broker_id"],
                            {k: (v[0], v[1]) for k, v in b["endpoints"].items()},
                            b["rack"],
                        )
                        for b in cache["brokers"]
                    ],
                    {
                        topic: {
                            int(p): PartitionInfo(
                                s["index"],
                                s["leader"],
                                s["leader_epoch"],
                                tuple(s["replicas"]),
                                tuple(s["isr"]),
                                tuple(s["offline"]),
                            )
                            for p, s in parts.items()
                        }
                        for topic, parts in cache["partitions"].items()
                    },
                    {t: uuid.UUID(i) for t, i in cache["topic_ids"].items()},
                )
            )

    def save(self) -> None:
        data: dict[str, Any] = {
            "controller_epoch": self.controller_epoch,
            "leadership": [
                {"topic": t, "partition": p, **asdict(s)} for (t, p), s in self.leadership.items()
            ],
        }
        if self.cache.from_controller:
            c = self.cache
            data["cache"] = {
                "controller_id": c.controller_id,
                "controller_epoch": c.controller_epoch,
                "brokers": [asdict(b) for b in c.brokers.values()],
                "partitions": {
                    t: {str(p): asdict(s) for p, s in parts.items()}
                    for t, parts in c.partitions.items()
                },
                "topic_ids": {t: str(i) for t, i in c.topic_ids.items()},
            }
        self.document.write(data)
