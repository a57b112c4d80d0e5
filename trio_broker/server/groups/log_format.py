"""Groups and offsets as ``__consumer_offsets`` records, and back.

Owns: building the records the coordinator writes, in Kafka's layouts (key version 1 +
``OffsetCommitValue`` v3, or v1 when the commit carries an expiry time; key version 2 +
``GroupMetadataValue`` v3; a null value is a tombstone), and ``Replay``, which folds the
records of the log, in order, into the latest state of every group: later records win, a
tombstone deletes (KIP-848 groups' records it hands to ``consumer.ConsumerReplay``).
Records it cannot decode (written by someone else) are counted and skipped.
``restore_group`` rebuilds a ``Group`` from what the replay found: Stable with its members
if it had any, else Empty. Pure; no trio, no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...protocol.errors import CorruptRequest
from ...protocol.messages.coordinator_records import (
    CONSUMER_GROUP_RECORDS,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from ...records import Record
from .consumer import ConsumerReplay
from .group import Group
from .member import Member
from .offsets import OffsetAndMetadata
from .state import EMPTY, STABLE

log = logging.getLogger("trio_broker.groups")

TopicPartition = tuple[str, int]

OFFSET_VALUE_VERSION = 3  # leader epoch, no expiry time
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3  # static members, state timestamp


def offset_commit_record(group_id: str, tp: TopicPartition, om: OffsetAndMetadata) -> Record:
    key = OffsetCommitKey(group=group_id, topic=tp[0], partition=tp[1])
    if om.expire_timestamp_ms is not None:
        value = OffsetCommitValue(
            offset=om.offset,
            metadata=om.metadata,
            commit_timestamp=om.commit_timestamp_ms,
            expire_timestamp=om.expire_timestamp_ms,
        )
        version = OFFSET_VALUE_VERSION_WITH_EXPIRY
    else:
        value = OffsetCommitValue(
            offset=om.offset,
            leader_epoch=om.leader_epoch,
            metadata=om.metadata,
            commit_timestamp=om.commit_timestamp_ms,
        )
        version = OFFSET_VALUE_VERSION
    return Record(
        encode_key(key), encode_value(value, version), timestamp_ms=om.commit_timestamp_ms
    )


def offset_tombstone(group_id: str, tp: TopicPartition, now_ms: int) -> Record:
    key = OffsetCommitKey(group=group_id, topic=tp[0], partition=tp[1])
    return Record(encode_key(key), None, timestamp_ms=now_ms)


def group_metadata_record(group: Group, assignments: Mapping[str, bytes], now_ms: int) -> Record:
    """The group as it is now, with ``assignments`` as its members' assignments."""
    protocol = group.protocol_name
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata_for(protocol) if protocol is not None else b"",
            assignment=assignments.get(m.member_id, b""),
        )
        for m in group.members.values()
    ]
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=(
            group.state_timestamp_ms if group.state_timestamp_ms is not None else -1
        ),
        members=members,
    )
    key = encode_key(GroupMetadataKey(group=group.group_id))
    return Record(key, encode_value(value, GROUP_VALUE_VERSION), timestamp_ms=now_ms)


def group_tombstone(group_id: str, now_ms: int) -> Record:
    return Record(encode_key(GroupMetadataKey(group=group_id)), None, timestamp_ms=now_ms)


@dataclass(slots=True)
class LoadedGroup:
    metadata: GroupMetadataValue | None = None
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    # producer id -> offsets committed in its transaction, still open at the log's end
    pending_txn: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)


_CONSUMER_GROUP_KEYS = tuple(key for key, _ in CONSUMER_GROUP_RECORDS.values())


class Replay:
    """The latest state of every group, from the log's records applied in order. Offsets
    committed in a transaction (TxnOffsetCommit) wait for its marker: a commit makes them
    the group's, an abort drops them, and those still open at the end stay pending."""

    def __init__(self) -> None:
        self.metadata: dict[str, GroupMetadataValue] = {}
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # producer id -> group -> offsets of its open transaction
        self.pending: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
        self.consumer = ConsumerReplay()  # KIP-848 groups' records
        self.records = 0
        self.skipped = 0

    def apply(
        self,
        key: bytes | None,
        value: bytes | None,
        producer_id: int = -1,
        transactional: bool = False,
        commit: bool | None = None,
    ) -> None:
        if commit is not None:  # a transaction marker
            for group, offsets in self.pending.pop(producer_id, {}).items():
                if commit:
                    self.offsets.setdefault(group, {}).update(offsets)
            return
        self.records += 1
        if key is None:
            self.skipped += 1
            return
        try:
            k = decode_key(key)
            v = decode_value(k, value) if value is not None else None
        except CorruptRequest as exc:
            self.skipped += 1
            log.warning("skipping an unreadable __consumer_offsets record: %s", exc)
            return
        if isinstance(k, _CONSUMER_GROUP_KEYS):
            self.consumer.apply(k, v)  # type: ignore[arg-type]
        elif isinstance(k, OffsetCommitKey):
            tp = (k.topic, k.partition)
            if v is None:
                self.offsets.get(k.group, {}).pop(tp, None)
            else:
                assert isinstance(v, OffsetCommitValue)
                om = OffsetAndMetadata(
                    offset=v.offset,
                    leader_epoch=v.leader_epoch,
                    metadata=v.metadata,
                    commit_timestamp_ms=v.commit_timestamp,
                    expire_timestamp_ms=v.expire_timestamp if v.expire_timestamp >= 0 else None,
                )
                if transactional:
                    self.pending.setdefault(producer_id, {}).setdefault(k.group, {})[tp] = om
                else:
                    self.offsets.setdefault(k.group, {})[tp] = om
        elif v is None:
            self.metadata.pop(k.group, None)
        else:
            assert isinstance(v, GroupMetadataValue)
            self.metadata[k.group] = v

    def groups(self) -> dict[str, LoadedGroup]:
        out: dict[str, LoadedGroup] = {}
        for group_id, value in self.metadata.items():
            out[group_id] = LoadedGroup(metadata=value)
        for group_id, offsets in self.offsets.items():
            if offsets:
                out.setdefault(group_id, LoadedGroup()).offsets = dict(offsets)
        for producer_id, groups in self.pending.items():
            for group_id, offsets in groups.items():
                loaded = out.setdefault(group_id, LoadedGroup())
                loaded.pending_txn[producer_id] = dict(offsets)
        return out


def restore_group(group_id: str, loaded: LoadedGroup) -> Group:
    """A ``Group`` as the log left it."""
    value = loaded.metadata
    if value is None:
        group = Group(group_id, EMPTY)
        group.offsets = dict(loaded.offsets)
        group.pending_txn = dict(loaded.pending_txn)
        return group
    stamp = value.current_state_timestamp if value.current_state_timestamp >= 0 else None
    group = Group(group_id, STABLE if value.members else EMPTY, stamp)
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    for m in value.members:
        protocols = ((value.protocol or "", bytes(m.subscription)),)
        member = Member(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=(
                m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout
            ),
            session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            protocols=protocols,
            assignment=bytes(m.assignment),
        )
        group.add(member)
    group.protocol_type = value.protocol_type or None
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    group.subscribed_topics = group.compute_subscribed_topics()
    group.offsets = dict(loaded.offsets)
    group.pending_txn = dict(loaded.pending_txn)
    return group
