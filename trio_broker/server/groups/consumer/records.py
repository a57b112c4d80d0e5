"""KIP-848 consumer groups as ``__consumer_offsets`` records, and back.

Owns: ``RecordImages`` (what this coordinator last wrote of each consumer group, and the
records that bring the log up to the group as it is now), ``ConsumerReplay`` (the latest
state of every consumer group from the log's records, applied in order; a tombstone
deletes) and ``restore`` (a ``ConsumerGroup`` as the log left it).

The records are Kafka 4's (``protocol.messages.coordinator_records``, record types 3-8):
the group epoch (``ConsumerGroupMetadata``), the topics the target assignment was computed
from (``ConsumerGroupPartitionMetadata``, its racks left empty as Kafka 4 leaves them), each
member's subscription (``ConsumerGroupMemberMetadata``, with a classic member's session timeout and
protocols), the target assignment's epoch
(``ConsumerGroupTargetAssignmentMetadata``) and each member's target
(``ConsumerGroupTargetAssignmentMember``), and each member's epochs, state and partitions
(``ConsumerGroupCurrentMemberAssignment``). A member removed gets tombstones for its three
keys, a group removed for all of its keys.

How the records are chosen: Kafka's handlers build them alongside each change. Here the
coordinator asks, after each change, for the difference between the group as it is now
and what was last written for it: one comparison per member and per group field (no
encoding unless a value changed), so the cost of a heartbeat grows with the group's size,
where Kafka's grows with the change's. Pure: no trio, no I/O; must not decide when records
are written, nor change a group.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ....protocol.messages.coordinator_records import (
    CONSUMER_GROUP_VALUE_VERSION,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicPartitions,
    encode_key,
    encode_value,
)
from ....records import Record
from .model import (
    NO_PARTITIONS,
    ClassicMeta,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
)

# Kafka's MemberState byte values
MEMBER_STATE_BYTES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_STATE_OF_BYTE = {b: s for s, b in MEMBER_STATE_BYTES.items()}

# (record type,) for a group's record, (record type, member id) for a member's
ImageKey = tuple[int] | tuple[int, str]
Image = dict[ImageKey, Any]


def _image(group: ConsumerGroup | None) -> Image:
    """The group's records' contents as comparable values, by key."""
    if group is None:
        return {}
    image: Image = {
        (3,): group.group_epoch,
        (4,): tuple(sorted(group.subscription_metadata.items())),
        (6,): group.assignment_epoch,
    }
    for m in group.members.values():
        image[(5, m.member_id)] = (
            m.instance_id,
            m.rack_id,
            m.client_id,
            m.client_host,
            tuple(sorted(set(m.subscribed_topic_names))),
            m.subscribed_topic_regex,
            m.rebalance_timeout_ms,
            m.server_assignor,
            m.classic,
        )
        image[(8, m.member_id)] = (
            m.member_epoch,
            m.previous_member_epoch,
            m.state,
            m.assigned,
            m.pending_revocation,
        )
    for member_id, target in group.target.items():
        image[(7, member_id)] = target
    return image


def _topic_partitions(partitions: Partitions) -> list[TopicPartitions]:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for t, p in sorted(partitions, key=lambda tp: (str(tp[0]), tp[1])):
        by_topic.setdefault(t, []).append(p)
    return [TopicPartitions(topic_id=t, partitions=ps) for t, ps in by_topic.items()]


def _partitions(topics: Iterable[TopicPartitions]) -> Partitions:
    return frozenset((t.topic_id, p) for t in topics for p in t.partitions)


def _record_key(group_id: str, key: ImageKey) -> ConsumerGroupKey:
    record_type = key[0]
    if record_type == 3:
        return ConsumerGroupMetadataKey(group=group_id)
    if record_type == 4:
        return ConsumerGroupPartitionMetadataKey(group=group_id)
    if record_type == 6:
        return ConsumerGroupTargetAssignmentMetadataKey(group=group_id)
    member_id = str(key[1])  # type: ignore[misc]
    if record_type == 5:
        return ConsumerGroupMemberMetadataKey(group=group_id, member_id=member_id)
    if record_type == 7:
        return ConsumerGroupTargetAssignmentMemberKey(group=group_id, member_id=member_id)
    return ConsumerGroupCurrentMemberAssignmentKey(group=group_id, member_id=member_id)


def _record_value(key: ImageKey, value: Any) -> ConsumerGroupValue:
    record_type = key[0]
    if record_type == 3:
        return ConsumerGroupMetadataValue(epoch=value)
    if record_type == 4:
        return ConsumerGroupPartitionMetadataValue(
            topics=[
                ConsumerGroupPartitionMetadataValue.TopicMetadata(
                    topic_id=topic_id, topic_name=name, num_partitions=count, partition_metadata=[]
                )
                for name, (topic_id, count) in value
            ]
        )
    if record_type == 6:
        return ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=value)
    if record_type == 5:
        instance, rack, client, host, names, regex, timeout, assignor, classic = value
        return ConsumerGroupMemberMetadataValue(
            instance_id=instance,
            rack_id=rack,
            client_id=client,
            client_host=host,
            subscribed_topic_names=list(names),
            subscribed_topic_regex=regex,
            rebalance_timeout_ms=timeout,
            server_assignor=assignor,
            classic_member_metadata=None
            if classic is None
            else ClassicMemberMetadata(
                session_timeout_ms=classic.session_timeout_ms,
                supported_protocols=[
                    ClassicProtocol(name=n, metadata=md) for n, md in classic.protocols
                ],
            ),
        )
    if record_type == 7:
        return ConsumerGroupTargetAssignmentMemberValue(topic_partitions=_topic_partitions(value))
    epoch, previous, state, assigned, pending = value
    return ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=MEMBER_STATE_BYTES[state],
        assigned_partitions=_topic_partitions(assigned),
        partitions_pending_revocation=_topic_partitions(pending),
    )


# the order Kafka writes a change in: subscriptions and group epoch, then the target
# assignment (members, then its epoch), then the members' current assignments; a removed
# member's keys go current assignment first, its subscription last
_WRITE_ORDER = {5: 0, 3: 1, 4: 2, 7: 3, 6: 4, 8: 5}
_TOMBSTONE_ORDER = {8: 0, 7: 1, 5: 2, 6: 3, 4: 4, 3: 5}


class RecordImages:
    """What was last written of each consumer group this coordinator serves."""

    def __init__(self) -> None:
        self.images: dict[str, Image] = {}

    def changes(self, group_id: str, group: ConsumerGroup | None, now_ms: int) -> list[Record]:
        """The records that bring the log from what was last written of ``group_id`` to
        ``group`` (None: removed), in Kafka's order; from now on that is what was written."""
        old = self.images.get(group_id, {})
        new = _image(group)
        changed = sorted(
            (k for k, v in new.items() if old.get(k, _MISSING) != v),
            key=lambda k: (_WRITE_ORDER[k[0]], k[1:]),
        )
        gone = sorted(
            (k for k in old if k not in new), key=lambda k: (_TOMBSTONE_ORDER[k[0]], k[1:])
        )
        records = [
            Record(
                encode_key(_record_key(group_id, k)),
                encode_value(_record_value(k, new[k]), CONSUMER_GROUP_VALUE_VERSION),
                timestamp_ms=now_ms,
            )
            for k in changed
        ]
        # a member's tombstones come before the group's record changes they go with
        records[:0] = [
            Record(encode_key(_record_key(group_id, k)), None, timestamp_ms=now_ms) for k in gone
        ]
        if new:
            self.images[group_id] = new
        else:
            self.images.pop(group_id, None)
        return records

    def written(self, group: ConsumerGroup) -> None:
        """``group`` was read back from the log: that is what is written of it."""
        self.images[group.group_id] = _image(group)

    def forget(self, group_ids: Iterable[str]) -> None:
        for group_id in group_ids:
            self.images.pop(group_id, None)


_MISSING = object()


@dataclass(slots=True)
class LoadedConsumerGroup:
    epoch: int | None = None
    assignment_epoch: int = 0
    subscription_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    members: dict[str, ConsumerGroupMemberMetadataValue] = field(default_factory=dict)
    targets: dict[str, Partitions] = field(default_factory=dict)
    current: dict[str, ConsumerGroupCurrentMemberAssignmentValue] = field(default_factory=dict)


class ConsumerReplay:
    """The latest state of every consumer group from its records, applied in log order."""

    def __init__(self) -> None:
        self.groups: dict[str, LoadedConsumerGroup] = {}

    def apply(self, key: ConsumerGroupKey, value: ConsumerGroupValue | None) -> None:
        group = self.groups.setdefault(key.group, LoadedConsumerGroup())
        if isinstance(key, ConsumerGroupMetadataKey):
            if value is None:  # the group is gone, with all its records
                del self.groups[key.group]
            else:
                assert isinstance(value, ConsumerGroupMetadataValue)
                group.epoch = value.epoch
        elif isinstance(key, ConsumerGroupPartitionMetadataKey):
            topics = value.topics if isinstance(value, ConsumerGroupPartitionMetadataValue) else []
            group.subscription_metadata = {
                t.topic_name: (t.topic_id, t.num_partitions) for t in topics
            }
        elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
            if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
                group.assignment_epoch = value.assignment_epoch
            else:
                group.assignment_epoch = 0
        else:
            _apply_member(group, key, value)

    def loaded(self) -> dict[str, LoadedConsumerGroup]:
        """The groups whose epoch record is there (the others are remains of a removal)."""
        return {g: loaded for g, loaded in self.groups.items() if loaded.epoch is not None}


def _apply_member(
    group: LoadedConsumerGroup, key: ConsumerGroupKey, value: ConsumerGroupValue | None
) -> None:
    member_id = getattr(key, "member_id", "")
    if isinstance(key, ConsumerGroupMemberMetadataKey):
        if isinstance(value, ConsumerGroupMemberMetadataValue):
            group.members[member_id] = value
        else:
            group.members.pop(member_id, None)
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
            group.targets[member_id] = _partitions(value.topic_partitions)
        else:
            group.targets.pop(member_id, None)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        group.current[member_id] = value
    else:
        group.current.pop(member_id, None)


def restore(group_id: str, loaded: LoadedConsumerGroup) -> ConsumerGroup:
    """A ``ConsumerGroup`` as the log left it: its epochs, the topics its target was
    computed from, its members with their subscriptions, epochs, states and partitions,
    and its target assignment. A member without a current-assignment record starts at
    epoch 0 holding nothing, as Kafka's member does."""
    group = ConsumerGroup(
        group_id,
        group_epoch=loaded.epoch or 0,
        assignment_epoch=loaded.assignment_epoch,
        subscription_metadata=dict(loaded.subscription_metadata),
    )
    for member_id, meta in loaded.members.items():
        member = ConsumerMember(
            member_id=member_id,
            instance_id=meta.instance_id,
            rack_id=meta.rack_id,
            client_id=meta.client_id,
            client_host=meta.client_host,
            rebalance_timeout_ms=meta.rebalance_timeout_ms,
            subscribed_topic_names=tuple(meta.subscribed_topic_names),
            subscribed_topic_regex=meta.subscribed_topic_regex,
            server_assignor=meta.server_assignor,
            classic=_classic(meta.classic_member_metadata),
        )
        current = loaded.current.get(member_id)
        if current is not None:
            member = replace(
                member,
                member_epoch=current.member_epoch,
                previous_member_epoch=current.previous_member_epoch,
                state=_STATE_OF_BYTE.get(current.state, MemberState.STABLE),
                assigned=_partitions(current.assigned_partitions),
                pending_revocation=_partitions(current.partitions_pending_revocation),
            )
        group.put(member)
    group.target = {
        m: loaded.targets.get(m, NO_PARTITIONS) for m in group.members if m in loaded.targets
    }
    group.resolved_regexes = {
        m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex
    }
    return group


def _classic(meta: ClassicMemberMetadata | None) -> ClassicMeta | None:
    if meta is None:
        return None
    protocols = tuple((p.name, bytes(p.metadata)) for p in meta.supported_protocols)
    return ClassicMeta(meta.session_timeout_ms, protocols)
