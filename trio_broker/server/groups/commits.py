"""Committed offsets, the part of the group coordinator that serves them.

Owns: ``CommittedOffsets``, the coordinator's OffsetCommit (acknowledged once the records
are in ``__consumer_offsets``; with a producer, TxnOffsetCommit, counted once its
transaction commits), OffsetFetch, OffsetDelete, the transaction markers' effect on
offsets, and dropping a deleted topic's offsets. A base class of ``GroupCoordinator``,
which supplies the groups, the writer and the checks named below; it must not know about
requests, connections or the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...apis.group_services import CommittedOffset, OffsetCommitEntry
from ...protocol.errors import ErrorCode
from .consumer import ConsumerGroups
from .group import Group
from .log_format import offset_commit_record, offset_tombstone
from .membership import Membership, validate_member
from .offsets import CONSUMER_PROTOCOL_TYPE, OffsetAndMetadata
from .settings import CoordinatorConfig
from .state import EMPTY, OFFSET_COMMIT, Reply
from .storage import OFFSETS_TOPIC, OrderedWriter

TopicPartition = tuple[str, int]


class CommittedOffsets:
    """The offsets half of ``GroupCoordinator`` (see there for the attributes)."""

    config: CoordinatorConfig
    groups: dict[str, Group]
    consumer: ConsumerGroups
    membership: Membership
    writer: OrderedWriter
    now_ms: Callable[[], int]

    def partition_for(self, group_id: str) -> int:
        raise NotImplementedError

    def _check(self, group_id: str | None, *, allow_empty: bool) -> int:
        raise NotImplementedError

    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        offsets: Sequence[OffsetCommitEntry],
        unknown_group_error: int = ErrorCode.ILLEGAL_GENERATION,
        producer: tuple[int, int] | None = None,
    ) -> dict[TopicPartition, int]:
        """OffsetCommit, or with ``producer`` TxnOffsetCommit: the offsets are written in a
        transactional batch of that producer's and count once its transaction commits
        (``complete_txn``); one without a generation or member is taken whatever the
        group's state, as Kafka's."""

        def every(code: int) -> dict[TopicPartition, int]:
            return {(e.topic, e.partition): code for e in offsets}

        error = self._check(group_id, allow_empty=True)
        consumer = (
            None if error else self.consumer.validate_commit(group_id, member_id, generation_id)
        )
        if error or consumer:
            return every(error or consumer or 0)
        now = self.now_ms()
        group = self.groups.get(group_id)
        if group is None:
            if (
                generation_id >= 0 and consumer is None
            ):  # an older generation of a group that is gone
                return every(unknown_group_error)
            # offsets kept for a client that does not use group management
            group = Group(group_id, EMPTY, now)
            self.groups[group_id] = group
        unchecked = consumer is not None or (
            producer is not None
            and generation_id < 0
            and member_id == ""
            and group_instance_id is None
            and not group.is_dead
        )
        if not unchecked:
            error = self._validate_commit(group, generation_id, member_id, group_instance_id)
            if error:
                return every(error)
        reply = OFFSET_COMMIT[group.state]
        if producer is None and not isinstance(reply, Reply):
            return every(reply)
        if group.state is not EMPTY and not unchecked:
            self.membership.touch(group, self._member_id(group, member_id, group_instance_id))

        results: dict[TopicPartition, int] = {}
        accepted: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        limit = self.config.offset_metadata_max_bytes
        for e in offsets:
            tp = (e.topic, e.partition)
            metadata = e.metadata or ""
            if len(metadata) > limit:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            expire = now + retention_time_ms if retention_time_ms >= 0 else None
            accepted.append(
                (tp, OffsetAndMetadata(e.offset, e.leader_epoch, metadata, now, expire))
            )
        if not accepted:
            self.membership.forget_if_unused(group)
            return results
        for tp, _ in accepted:
            group.pending_commits[tp] += 1

        def written(code: int) -> None:
            for tp, om in accepted:
                group.pending_commits[tp] -= 1
                if group.pending_commits[tp] <= 0:
                    del group.pending_commits[tp]
                if code:
                    continue
                if producer is None:
                    group.offsets[tp] = om
                else:  # counts once the transaction commits
                    group.pending_txn.setdefault(producer[0], {})[tp] = om
            if code:
                self.membership.forget_if_unused(group)

        records = [offset_commit_record(group_id, tp, om) for tp, om in accepted]
        ack = self.writer.submit(self.partition_for(group_id), records, written, producer)
        code = await ack.wait()
        for tp, _ in accepted:
            results[tp] = code
        return results

    def _validate_commit(
        self, group: Group, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        if group.is_dead:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.state is EMPTY:
            return ErrorCode.NONE  # an admin client or a consumer without group management
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            error = validate_member(group, member_id, group_instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.NONE
        if group.state is not EMPTY:  # only members commit for a group that has some
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    @staticmethod
    def _member_id(group: Group, member_id: str, group_instance_id: str | None) -> str:
        return group.static_member_id(group_instance_id) or member_id

    def fetch_offsets(
        self,
        group_id: str,
        partitions: Sequence[TopicPartition] | None,
        require_stable: bool,
        member: tuple[str | None, int] = (None, -1),
    ) -> tuple[int, dict[TopicPartition, CommittedOffset]]:
        """Committed offsets of ``partitions`` (all of the group's if None). With
        ``require_stable``, a partition with an offset committed in a transaction still
        open is UNSTABLE_OFFSET_COMMIT (the client asks again)."""
        error = self._check(group_id, allow_empty=True) or self.consumer.validate_fetch(
            group_id, *member
        )
        if error:
            return error, {}
        group = self.groups.get(group_id)
        stored = {} if group is None or group.is_dead else group.offsets
        unstable: set[TopicPartition] = set()
        if require_stable and group is not None:
            unstable = {tp for offsets in group.pending_txn.values() for tp in offsets}
        wanted = stored.keys() if partitions is None else partitions
        out = {}
        for tp in wanted:
            om = stored.get(tp)
            if tp in unstable:
                out[tp] = CommittedOffset(error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            else:
                out[tp] = CommittedOffset() if om is None else _committed(om)
        return ErrorCode.NONE, out

    def on_marker(self, topic: str, partition: int, producer_id: int, commit: bool) -> None:
        """``ReplicaManager.marker_observers``: a marker is in a partition's ISR."""
        if topic == OFFSETS_TOPIC:
            self.complete_txn(partition, producer_id, commit)

    def complete_txn(self, partition: int, producer_id: int, commit: bool) -> None:
        """A transaction marker landed in ``partition`` of the offsets topic: the offsets
        its producer committed in that transaction count (commit) or go (abort)."""
        for group_id, group in self.groups.items():
            if self.partition_for(group_id) != partition:
                continue
            offsets = group.pending_txn.pop(producer_id, None)
            if offsets and commit:
                group.offsets.update(offsets)

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        error = self._check(group_id, allow_empty=True)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_dead:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        results: dict[TopicPartition, int] = {}
        if group.state is EMPTY:
            eligible = list(partitions)
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = []
            for tp in partitions:
                if group.is_subscribed_to(tp[0]):
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        removed = group.remove_offsets(eligible)
        code: int = ErrorCode.NONE
        if removed:
            now = self.now_ms()
            tombstones = [offset_tombstone(group_id, tp, now) for tp in removed]
            code = await self.writer.submit(self.partition_for(group_id), tombstones).wait()
        for tp in eligible:
            results[tp] = code
        return ErrorCode.NONE, results

    def forget_topic(self, topic: str) -> int:
        """A topic was deleted: its committed offsets go too (tombstones written, not
        waited for). Returns how many were removed."""
        now = self.now_ms()
        count = 0
        for group in self.groups.values():
            removed = group.remove_offsets([tp for tp in group.offsets if tp[0] == topic])
            if removed:
                count += len(removed)
                tombstones = [offset_tombstone(group.group_id, tp, now) for tp in removed]
                self.writer.submit(self.partition_for(group.group_id), tombstones)
        return count


def _committed(om: OffsetAndMetadata) -> CommittedOffset:
    return CommittedOffset(om.offset, om.leader_epoch, om.metadata, ErrorCode.NONE)
