"""The group coordinator: every group's membership and committed offsets, durable.

Owns: ``GroupCoordinator``, which this broker is for every group. It implements the
``GroupCoordinatorView`` the group API handlers use: it checks what Kafka checks first
(a usable group id, a running coordinator), hands membership requests to ``Membership``,
serves committed offsets through its base ``CommittedOffsets`` (``commits``: OffsetCommit,
OffsetFetch, OffsetDelete), and does the rest itself: ListGroups, DescribeGroups,
DeleteGroups, and the expiry of offsets after ``offsets.retention.minutes`` (checked every
``offsets.retention.check.interval.ms``, tombstones written, empty groups with no offsets
left removed). KIP-848 groups (``consumer``) have their records written after each change
(a heartbeat is answered once they are appended); a classic request for a consumer group
with members goes to its classic members (``consumer.ClassicMembers``), and the online
migration between the two kinds of group is its base ``OnlineMigration``; group metrics
come from here (``figures``). Its life: ``run`` opens the offsets topic, replays it (groups of both
protocols and offsets come back as they were written; members get a fresh session), or,
in a cluster, each partition as this broker comes to lead it, then serves its timers and
its writer until ``stop``. It must not know about requests, connections or the wire, and
does all its waiting through the writer and the timers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import trio

from ...apis.group_services import (
    ConsumerGroupDescription,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
    GroupDescription,
    GroupOverview,
    JoinParams,
    JoinResult,
    LeaveResult,
    MemberDescription,
    MemberIdentity,
    Pending,
    SyncParams,
    SyncResult,
    TopicLookup,
)
from ...protocol.errors import ErrorCode
from .commits import CommittedOffsets
from .consumer import (
    ClassicMembers,
    ConsumerGroups,
    ConsumerGroupState,
    RecordImages,
    restore,
)
from .group import Group
from .log_format import (
    Replay,
    group_tombstone,
    offset_tombstone,
    restore_group,
)
from .membership import Membership
from .migration import OnlineMigration
from .offsets import expired_partitions
from .ownership import Ownership, unload
from .sessions import PARK_SLACK_MS
from .settings import CoordinatorConfig, wall_clock_ms
from .state import DEAD, DELETE_GROUP, EMPTY, STABLE, GroupState, Reply
from .storage import (
    Ack,
    OffsetsTopic,
    OrderedWriter,
    StoredRecord,
    partition_for,
)
from .timers import Timers

log = logging.getLogger("trio_broker.groups")

TopicPartition = tuple[str, int]


class GroupCoordinator(CommittedOffsets, OnlineMigration):
    def __init__(
        self,
        config: CoordinatorConfig,
        topic: OffsetsTopic,
        *,
        notify: Callable[[Hashable], object] = lambda key: None,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.config = config
        self.topic = topic
        self.now_ms = now_ms
        self.groups: dict[str, Group] = {}
        self.timers = Timers()
        self.writer = OrderedWriter(topic)
        self.membership = Membership(
            config.membership,
            self.groups,
            self.timers,
            self.writer,
            self.partition_for,
            notify,
            now_ms,
        )
        self.consumer = ConsumerGroups(config.consumer, self.timers)
        self.consumer.on_change = self._consumer_changed
        self.consumer.upgrade = self.upgrade  # KIP-848's online migration (``migration``)
        self.consumer.downgrade = self.downgrade
        self.classic_members = ClassicMembers(self.consumer)  # classic ones in a consumer group
        self.consumer_images = RecordImages()  # what is written of each consumer group
        self.active = False
        self.loaded_records = 0
        self._scope: trio.CancelScope | None = None
        self._notify = notify
        self._nursery: trio.Nursery | None = None
        self.ownership = Ownership()  # every group, unless the offsets topic is replicated
        if getattr(topic, "replicated", False):
            self.ownership.owned = set()

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, max(1, self.topic.partitions))

    # ================================================================ life cycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open and replay the offsets topic, then serve timers and writes until stopped."""
        await trio.to_thread.run_sync(self.topic.open)
        # folded in the worker thread as it is read: only the latest state stays in memory
        replay = await trio.to_thread.run_sync(self._replay, self.topic.scan())
        self._install(replay)
        with trio.CancelScope() as scope:
            self._scope = scope
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.timers.run)
                await nursery.start(self.writer.run)
                self._arm_retention()
                self.active = True
                task_status.started()
        self.active = False

    def stop(self) -> None:
        """Stop serving (requests now get COORDINATOR_NOT_AVAILABLE); ends ``run``."""
        self.active = False
        if self._scope is not None:
            self._scope.cancel()

    def load(self, records: Iterable[StoredRecord]) -> None:
        """Rebuild every group from the offsets topic's records (in log order)."""
        self._install(self._replay(records))

    @staticmethod
    def _replay(records: Iterable[StoredRecord]) -> Replay:
        replay = Replay()
        for r in records:
            replay.apply(r.key, r.value, r.producer_id, r.transactional, r.commit)
        return replay

    def _install(self, replay: Replay) -> None:
        for group_id, loaded in replay.groups().items():
            group = restore_group(group_id, loaded)
            self.groups[group_id] = group
            self.membership.restart_sessions(group)
            if group.size > self.config.membership.max_group_size:
                self.membership.prepare_rebalance(group, "loaded over group.max.size")
        for group_id, loaded_consumer in replay.consumer.loaded().items():
            consumer_group = restore(group_id, loaded_consumer)
            self.consumer.restore(consumer_group)
            self.consumer_images.written(consumer_group)
        self.loaded_records = replay.records
        if replay.records:
            log.info(
                "loaded %d groups from %d records of __consumer_offsets (%d unreadable)",
                len(self.groups),
                replay.records,
                replay.skipped,
            )

    def _check(self, group_id: str | None, *, allow_empty: bool) -> int:
        """Kafka's validateGroupStatus: the id, whether we serve at all, and whether this
        broker coordinates the group (its partition of the offsets topic)."""
        if group_id is None or (group_id == "" and not allow_empty):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.ownership.error_for(self.partition_for(group_id))

    # ===================================================== partition leadership

    def role_changed(self, partition: int, leader: bool, leader_epoch: int = 0) -> None:
        """LeaderAndIsr or StopReplica for a partition of the offsets topic: begin
        loading it (in the coordinator's own task) or forget it."""
        if leader and self._nursery is not None:
            self._nursery.start_soon(self.elect, partition)
        elif not leader:
            self.resign(partition)

    async def elect(self, partition: int) -> None:
        """This broker now leads ``partition`` of the offsets topic: read its groups back
        (on a worker thread) and serve them."""
        own = self.ownership
        if own.owned is None or partition in own.owned or partition in own.loading:
            return
        own.loading.add(partition)
        try:
            records = self.topic.scan_partition(partition)  # type: ignore[attr-defined]
            replay = await trio.to_thread.run_sync(self._replay, records)
            if partition in own.loading:  # not resigned meanwhile
                self._install(replay)
                own.owned.add(partition)
                log.info("coordinating the groups of partition %d", partition)
        finally:
            own.loading.discard(partition)

    def resign(self, partition: int) -> None:
        """``partition`` of the offsets topic is led elsewhere now: forget its groups."""
        own = self.ownership
        if own.owned is None:
            return
        own.loading.discard(partition)
        if partition not in own.owned:
            return
        own.owned.discard(partition)
        for group_id, group in list(self.groups.items()):
            if self.partition_for(group_id) == partition:
                unload(group, self.timers, self._notify)
                del self.groups[group_id]
        gone = [g for g in self.consumer.groups if self.partition_for(g) == partition]
        self.consumer.unload(gone)
        self.consumer_images.forget(gone)
        log.info("no longer coordinating the groups of partition %d", partition)

    # ================================================================ membership

    def join_group(
        self, params: JoinParams, topics: TopicLookup | None = None
    ) -> JoinResult | Pending[JoinResult]:
        group_id = params.group_id
        error = self._check(group_id, allow_empty=False)
        if error:
            return JoinResult(error, member_id=params.member_id)
        if self.consumer.in_use(group_id):
            if topics is None:  # (every handler passes them)
                return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, params.member_id)
            return self._join_consumer_group(params, topics)
        if self.consumer.groups.pop(group_id, None) is not None:
            self._consumer_changed(group_id)  # an empty consumer group is replaced
        return self.membership.join_group(params)

    def _join_consumer_group(
        self, params: JoinParams, topics: TopicLookup
    ) -> JoinResult | Pending[JoinResult]:
        """A classic member joins a consumer group: answered once what changed is
        written."""
        result = self.classic_members.join(params, topics)
        if result.error_code:
            return result
        pending: Pending[JoinResult] = Pending(PARK_SLACK_MS)

        def written(code: int) -> None:
            pending.result = JoinResult(code, member_id=result.member_id) if code else result
            self._notify(pending)

        self._consumer_changed(params.group_id, written)
        return pending

    def sync_group(self, params: SyncParams) -> SyncResult | Pending[SyncResult]:
        error = self._check(params.group_id, allow_empty=False)
        if error:
            return SyncResult(error)
        if self.consumer.in_use(params.group_id):
            return self.classic_members.sync(params)
        return self.membership.sync_group(params)

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        error = self._check(group_id, allow_empty=False)
        if error:
            return error
        if self.consumer.in_use(group_id):
            return self.classic_members.heartbeat(
                group_id, generation_id, member_id, group_instance_id
            )
        return self.membership.heartbeat(group_id, generation_id, member_id, group_instance_id)

    def leave_group(self, group_id: str, members: Sequence[MemberIdentity]) -> LeaveResult:
        error = self._check(group_id, allow_empty=False)
        if error:
            return LeaveResult(error)
        if self.consumer.in_use(group_id):
            codes = self.classic_members.leave(group_id, members)
            self._consumer_changed(group_id)  # written in order, not waited for
            return LeaveResult(ErrorCode.NONE, list(zip(members, codes, strict=True)))
        group = self.groups.get(group_id)
        if group is None:
            return LeaveResult(ErrorCode.NONE, [(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in members])
        if group.is_dead:
            return LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return LeaveResult(
            ErrorCode.NONE,
            [
                (m, self.membership.leave(group, m.member_id, m.group_instance_id, m.reason))
                for m in members
            ],
        )

    # ================================================================ admin

    def list_groups(self, states: Sequence[str]) -> tuple[int, list[GroupOverview]]:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        wanted = {s.lower() for s in states}
        overviews = [
            GroupOverview(g.group_id, g.protocol_type or "", str(g.state))
            for g in self.groups.values()
            if g.group_id not in self.consumer.groups  # only its offsets' holder
        ] + [GroupOverview(i, "consumer", s, "consumer") for i, s in self.consumer.overviews()]
        return ErrorCode.NONE, [g for g in overviews if not wanted or g.state.lower() in wanted]

    def describe_group(self, group_id: str) -> GroupDescription:
        error = self._check(group_id, allow_empty=True)
        if error:
            return GroupDescription(error, group_id)
        group = self.groups.get(group_id)
        if group is None or group_id in self.consumer.groups:  # not a classic group
            return GroupDescription(ErrorCode.NONE, group_id, str(DEAD))
        stable = group.state is STABLE and group.protocol_name is not None
        protocol = group.protocol_name if stable and group.protocol_name else ""
        members = tuple(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata_for(protocol) if stable else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupDescription(
            ErrorCode.NONE, group_id, str(group.state), group.protocol_type or "", protocol, members
        )

    def figures(self) -> dict[str, Any]:
        """The metrics' ``groups`` section: the groups this broker coordinates by protocol
        and state (a classic group holding only a consumer group's offsets is not one),
        rebalances since start (classic: completed; consumer: group epoch bumps), and the
        server-side assignor's runs and their time."""
        classic = {str(s): 0 for s in GroupState if s is not DEAD}
        for g in self.groups.values():
            if g.group_id not in self.consumer.groups and g.state is not DEAD:
                classic[str(g.state)] += 1
        consumer = {str(s): 0 for s in ConsumerGroupState if s is not ConsumerGroupState.DEAD}
        for _, state in self.consumer.overviews():
            consumer[state] += 1
        times = self.consumer.assignment_times
        return {
            "classic": {"groups": classic, "rebalances": self.membership.completed_rebalances},
            "consumer": {
                "groups": consumer,
                "rebalances": self.consumer.rebalances,
                "assignments": times.count,
                "assignment_time_ms": {"total": times.total_s * 1000, "max": times.max_s * 1000},
            },
        }

    # ============================================================== KIP-848

    async def consumer_group_heartbeat(
        self, params: ConsumerHeartbeat, topics: TopicLookup
    ) -> ConsumerHeartbeatResult | None:
        """The heartbeat, answered once the records of what it changed (and of every
        change before it in the group's partition) are in ``__consumer_offsets``, as
        acknowledged for offset commits. A failed write answers the error (the state in
        memory is not rolled back, as Kafka's is: the next heartbeat writes it again)."""
        if not self.consumer.config.enabled:
            return None
        error = self._check(params.group_id, allow_empty=False)
        if error:
            return ConsumerHeartbeatResult(error)
        result = self.consumer.heartbeat(params, topics)
        code = await self._consumer_changed(params.group_id).wait()
        if code and not result.error_code:
            return ConsumerHeartbeatResult(code, f"The group's records were not written ({code}).")
        return result

    def _consumer_changed(
        self, group_id: str, then: Callable[[int], object] = lambda code: None
    ) -> Ack:
        """Write the records that bring the log up to the consumer group as it is now.
        Submitted even when there are none: its ack then comes once everything written
        before it in that partition is (the writer keeps each partition's order)."""
        group = self.consumer.groups.get(group_id)
        records = self.consumer_images.changes(group_id, group, self.now_ms())

        def written(code: int) -> None:
            if code:  # not written: the next change writes the whole group again
                self.consumer_images.forget([group_id])
            then(code)

        return self.writer.submit(self.partition_for(group_id), records, written)

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        error = self._check(group_id, allow_empty=False)
        if error:
            return ConsumerGroupDescription(error, group_id)
        return self.consumer.describe(group_id)

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """DeleteGroups: a classic group must be Empty or Dead, a consumer group empty."""
        results: dict[str, int] = {}
        waiting = []
        now = self.now_ms()
        for group_id in dict.fromkeys(group_ids):
            error = self._check(group_id, allow_empty=True)
            if error:
                results[group_id] = error
                continue
            if self.consumer.in_use(group_id):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
                continue
            was_consumer = self.consumer.groups.pop(group_id, None) is not None
            group = self.groups.get(group_id)
            if was_consumer:  # its records' tombstones, written before its offsets'
                tombstones = self._consumer_changed(group_id)
                if group is None:
                    waiting.append((group_id, tombstones))
                    continue
            if group is None:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            reply = DELETE_GROUP[group.state]
            if not isinstance(reply, Reply):
                results[group_id] = reply
                continue
            waiting.append((group_id, self._remove_group(group, now)))
        for group_id, ack in waiting:
            results[group_id] = await ack.wait()
        return results

    def _remove_group(self, group: Group, now: int, expired: Sequence[TopicPartition] = ()) -> Ack:
        """Group and offsets gone, here and (tombstones) in the log."""
        group.transition_to(DEAD, now)
        del self.groups[group.group_id]
        for member_id in list(group.pending_members):
            self.timers.cancel(("session", group.group_id, member_id))
        group.pending_members.clear()
        gone = [*expired, *group.offsets]
        records = [offset_tombstone(group.group_id, tp, now) for tp in gone]
        group.offsets.clear()
        records.append(group_tombstone(group.group_id, now))
        log.info("group %s removed", group.group_id)
        return self.writer.submit(self.partition_for(group.group_id), records)

    # ================================================================ retention

    def _arm_retention(self) -> None:
        self.timers.schedule(
            ("retention",),
            self.config.offsets_retention_check_interval_ms / 1000,
            self._on_retention_check,
        )

    def _on_retention_check(self) -> None:
        try:
            self.expire_offsets()
            self.consumer.forget_empty(keep=self.groups.__contains__)  # no members, offsets
        finally:
            self._arm_retention()

    def expire_offsets(self) -> int:
        """Drop expired offsets (tombstones written); remove Empty groups left with none.
        Returns how many offsets expired."""
        now = self.now_ms()
        expired_count = 0
        for group in list(self.groups.values()):
            expired = expired_partitions(group, now, self.config.offsets_retention_ms)
            removed = group.remove_offsets(expired)
            expired_count += len(removed)
            if (
                group.state is EMPTY
                and not group.offsets
                and not group.pending_commits
                and not group.pending_members
            ):
                self._remove_group(group, now, removed)
                continue
            if removed:
                tombstones = [offset_tombstone(group.group_id, tp, now) for tp in removed]
                self.writer.submit(self.partition_for(group.group_id), tombstones)
        if expired_count:
            log.info("expired %d committed offsets", expired_count)
        return expired_count
