"""What the controller tells this broker: LeaderAndIsr, StopReplica and UpdateMetadata.

Owns: ``ControlPlane``, the broker's service for the control-plane APIs (the controller is
``tools/controller.py``, or any ZooKeeper-era Kafka controller): a stale controller epoch is
refused; leadership and the metadata cache change in ``ClusterState`` (saved on a worker
thread); a partition this broker is told to hold gets its topic entry and log
(``TopicAdmin.ensure_partition``; one it cannot make a log for is answered with that error,
KAFKA_STORAGE_ERROR, and the others go on); parked fetches of a partition it no longer leads
are answered at once, and so are Metadata requests parked for the first UpdateMetadata. A
partition with followers gets its role in replication: as leader, its leader epoch begins at
the log's end and ``Replication`` tracks the followers; as follower, ``ReplicaFetchers``
fetches it from its leader. A topic held here under another topic id than the one the
controller names is a former incarnation of that name (deleted while this broker was away,
then created again): its logs are deleted before the new one's partition is taken.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

import trio

from ...apis.metadata import DESCRIBED
from ...apis.services import ClusterMetadata, PartitionAssignment, TopicError, TopicInfo
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID
from ..common import Purgatory
from .cluster_state import ClusterState
from .replica_fetcher import ReplicaFetchers
from .replica_manager import ReplicaManager

log = logging.getLogger("trio_broker.server")


class HeldTopics(Protocol):
    """The topics this broker holds, as the control plane changes them (``TopicAdmin``):
    replication sits below the topic service, so it names only what it calls."""

    def held(self, name: str) -> TopicInfo | None:
        """The topic's entry in this broker's catalog (None: no partition of it here)."""
        ...

    async def ensure_partition(
        self, topic: str, topic_id: uuid.UUID | None, index: int
    ) -> None: ...

    async def forget(self, info: TopicInfo) -> None: ...


class ControlPlane:
    def __init__(
        self,
        broker_id: int,
        cluster: ClusterState,
        topics: HeldTopics,
        replica_manager: ReplicaManager,
        fetch_purgatory: Purgatory,
        metadata_purgatory: Purgatory,
    ) -> None:
        """``metadata_purgatory``: where Metadata and DescribeCluster requests wait for
        the first UpdateMetadata (under ``apis.metadata.DESCRIBED``)."""
        self.broker_id = broker_id
        self.cluster = cluster
        self.topics = topics
        self.replica_manager = replica_manager
        self.fetch_purgatory = fetch_purgatory
        self.metadata_purgatory = metadata_purgatory
        self.replication = replica_manager.replication
        self.fetchers: ReplicaFetchers | None = None  # set by the broker
        # Told when this broker comes to lead, or stops leading, a partition of a
        # coordinator's topic (partition, leads, leader epoch), in a ZooKeeper cluster:
        # the group coordinator's __consumer_offsets, the transaction coordinator's
        # __transaction_state.
        self.roles: dict[str, Callable[[int, bool, int], None]] = {}
        # Set (and replaced) after every applied control request: for waiters on the view.
        self.changed = trio.Event()

    async def run_replication(
        self, scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]
    ) -> None:
        """The leader's ISR checks and the follower's fetchers, until ``scope`` ends."""
        with scope:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.replication.run)
                if self.fetchers is not None:
                    await nursery.start(self.fetchers.run)
                task_status.started()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def leader_and_isr(
        self, controller_epoch: int, assignments: Sequence[PartitionAssignment]
    ) -> list[int]:
        """Apply LeaderAndIsr partition states; an error code for each."""
        if not self.cluster.check_controller(controller_epoch):
            return [int(ErrorCode.STALE_CONTROLLER_EPOCH)] * len(assignments)
        errors: list[int] = []
        for a in assignments:
            await self._drop_former_incarnation(a)
            error = self.cluster.assign(a)
            if error == ErrorCode.NONE:
                try:
                    await self.topics.ensure_partition(a.topic, a.topic_id, a.partition)
                except TopicError as exc:  # no log here (the disk or the descriptors failed)
                    errors.append(exc.error_code)
                    continue
                if a.leader != self.broker_id:
                    self.fetch_purgatory.complete_all((a.topic, a.partition))
                await self._take_role(a)
            errors.append(error)
        await trio.to_thread.run_sync(self.cluster.save)
        self._changed()
        return errors

    async def _take_role(self, a: PartitionAssignment) -> None:
        """Lead (the epoch begins at this log's end) or follow the partition's leader."""
        plog = self.replica_manager.partition(a.topic, a.partition)
        if plog is None:
            return
        role = self.roles.get(a.topic)
        if role is not None:
            role(a.partition, a.leader == self.broker_id, a.leader_epoch)
        plog.replicated = len(a.replicas) > 1
        fetchers = self.fetchers
        if a.leader == self.broker_id:
            if fetchers is not None:
                fetchers.unfollow(a.topic, a.partition)
            await self.replica_manager.io.run(lambda: plog.assign_epoch(a.leader_epoch))
            if plog.replicated:
                self.replication.become_leader(a, a.version, plog.log_end_offset)
            else:
                self.replication.resign(a.topic, a.partition)
            return
        self.replication.resign(a.topic, a.partition)
        if fetchers is not None:
            if a.leader >= 0:
                fetchers.follow(a.topic, a.partition, a.leader, a.leader_epoch)
            else:
                fetchers.unfollow(a.topic, a.partition)

    async def stop_replicas(
        self, controller_epoch: int, partitions: Sequence[tuple[str, int, bool]]
    ) -> list[int]:
        """Apply StopReplica: stop serving, and delete the log when asked."""
        if not self.cluster.check_controller(controller_epoch):
            return [int(ErrorCode.STALE_CONTROLLER_EPOCH)] * len(partitions)
        await self._stop(partitions)
        await trio.to_thread.run_sync(self.cluster.save)
        self._changed()
        return [int(ErrorCode.NONE)] * len(partitions)

    async def _stop(self, partitions: Sequence[tuple[str, int, bool]]) -> None:
        """Stop serving each partition, deleting its log when asked; a topic this broker
        then replicates nothing of leaves its catalog (a deletion)."""
        deleted: set[str] = set()
        for topic, index, delete in partitions:
            self.cluster.stop(topic, index)
            self.fetch_purgatory.complete_all((topic, index))
            self.replication.resign(topic, index)
            if self.fetchers is not None:
                self.fetchers.unfollow(topic, index)
            role = self.roles.get(topic)
            if role is not None:
                role(index, False, -1)
            if delete and self.replica_manager.partition(topic, index) is not None:
                await trio.to_thread.run_sync(
                    self.replica_manager.delete_partition_log, topic, index
                )
                deleted.add(topic)
        for topic in deleted:
            info = self.topics.held(topic)
            if info is not None and not any(
                key[0] == topic and state.replicas for key, state in self.cluster.leadership.items()
            ):
                await self.topics.forget(info)

    async def _drop_former_incarnation(self, a: PartitionAssignment) -> None:
        """Delete the topic held here under ``a.topic`` if its topic id is not the one the
        controller names: the controller's StopReplica for a deleted topic goes to its live
        replicas only, so a broker away then keeps the log, and a topic created again under
        that name must not take it over (its records would stand at the new partition's
        offsets, and the old leader epochs refuse the new ones). Kafka tells the two apart
        by topic id (KIP-516); in ZooKeeper mode it keeps the deletion pending until every
        replica is back, where this broker deletes on the new topic's first request."""
        info = self.topics.held(a.topic)
        if info is None or a.topic_id in (None, ZERO_UUID):
            return
        if info.topic_id in (ZERO_UUID, a.topic_id):
            return
        log.warning(
            "topic %s: held as topic id %s, the controller's is %s: a former topic of that "
            "name, deleted while this broker was away; its logs are deleted",
            a.topic,
            info.topic_id,
            a.topic_id,
        )
        await self._stop([(a.topic, p, False) for p in range(len(info.partitions))])
        self.cluster.forget_topic(a.topic)
        await self.topics.forget(info)  # its catalog entry and logs

    async def update_metadata(self, metadata: ClusterMetadata) -> int:
        if not self.cluster.check_controller(metadata.controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.cluster.cache.replace(metadata)
        self.metadata_purgatory.check(DESCRIBED)
        await trio.to_thread.run_sync(self.cluster.save)
        self._changed()
        return ErrorCode.NONE
