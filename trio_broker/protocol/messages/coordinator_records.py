"""The records of ``__consumer_offsets``: Kafka's own key and value layouts, all versions.

Owns: the declarations of ``OffsetCommitKey`` (key versions 0-1), ``GroupMetadataKey``
(key version 2), ``OffsetCommitValue`` (0-4, flexible from 4) and ``GroupMetadataValue``
(0-4, flexible from 4), and of KIP-848's consumer group records (key versions 3-8, which
Kafka calls record types: ``ConsumerGroupMetadata``, ``ConsumerGroupPartitionMetadata``,
``ConsumerGroupMemberMetadata``, ``ConsumerGroupTargetAssignmentMetadata``,
``ConsumerGroupTargetAssignmentMember``, ``ConsumerGroupCurrentMemberAssignment``; keys not
flexible, values version 0 and flexible), as Kafka's group coordinator JSON schemas
describe them, and ``encode_key`` / ``encode_value`` / ``decode_key`` / ``decode_value``,
which add or read the int16 version that prefixes each key and value in the log. The
member metadata's tagged ``ClassicMemberMetadata`` (tag 0: the session timeout and the
protocols of a classic member inside a consumer group) is declared, written and read. These
are data records, not API messages: nothing here is registered with ``protocol.api``. No I/O.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from .. import codegen
from ..errors import CorruptRequest
from ..schema import Struct, array, field

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2
VALUE_VERSIONS = range(0, 5)
FIRST_FLEXIBLE_VALUE_VERSION = 4

_VERSION = struct.Struct(">h")


class OffsetCommitKey(Struct):
    group: str = field("string")
    topic: str = field("string")
    partition: int = field("int32")


class GroupMetadataKey(Struct):
    group: str = field("string")


class OffsetCommitValue(Struct):
    offset: int = field("int64")
    leader_epoch: int = field("int32", "3+", default=-1, ignorable=True)
    metadata: str = field("string")
    commit_timestamp: int = field("int64")
    expire_timestamp: int = field("int64", "1", default=-1, ignorable=True)


class GroupMetadataValue(Struct):
    class MemberMetadata(Struct):
        member_id: str = field("string")
        group_instance_id: str | None = field(
            "string", "3+", nullable="3+", default=None, ignorable=True
        )
        client_id: str = field("string")
        client_host: str = field("string")
        rebalance_timeout: int = field("int32", "1+", default=-1, ignorable=True)
        session_timeout: int = field("int32")
        subscription: bytes = field("bytes")
        assignment: bytes = field("bytes")

    protocol_type: str = field("string")
    generation: int = field("int32")
    protocol: str | None = field("string", nullable="0+")
    leader: str | None = field("string", nullable="0+")
    current_state_timestamp: int = field("int64", "2+", default=-1, ignorable=True)
    members: list[MemberMetadata] = field(array(MemberMetadata))


# ---------------------------------------------------------------- KIP-848 (key versions 3-8)


class ConsumerGroupMetadataKey(Struct):  # 3
    group: str = field("string")


class ConsumerGroupMetadataValue(Struct):
    epoch: int = field("int32")


class ConsumerGroupPartitionMetadataKey(Struct):  # 4
    group: str = field("string")


class ConsumerGroupPartitionMetadataValue(Struct):
    class TopicMetadata(Struct):
        class PartitionMetadata(Struct):  # "not used after 4.0": always written empty
            partition: int = field("int32")
            racks: list[str] = field(array("string"))

        topic_id: uuid.UUID = field("uuid")
        topic_name: str = field("string")
        num_partitions: int = field("int32")
        partition_metadata: list[PartitionMetadata] = field(array(PartitionMetadata))

    topics: list[TopicMetadata] = field(array(TopicMetadata))


class ConsumerGroupMemberMetadataKey(Struct):  # 5
    group: str = field("string")
    member_id: str = field("string")


class ClassicProtocol(Struct):
    name: str = field("string")
    metadata: bytes = field("bytes")


class ClassicMemberMetadata(Struct):
    session_timeout_ms: int = field("int32")
    supported_protocols: list[ClassicProtocol] = field(array(ClassicProtocol))


class ConsumerGroupMemberMetadataValue(Struct):
    instance_id: str | None = field("string", nullable="0+")
    rack_id: str | None = field("string", nullable="0+")
    client_id: str = field("string")
    client_host: str = field("string")
    subscribed_topic_names: list[str] = field(array("string"))
    subscribed_topic_regex: str | None = field("string", nullable="0+")
    rebalance_timeout_ms: int = field("int32", default=-1)
    server_assignor: str | None = field("string", nullable="0+")
    # a classic member of a consumer group (KIP-848's online migration); null otherwise
    classic_member_metadata: ClassicMemberMetadata | None = field(
        ClassicMemberMetadata, nullable="0+", default=None, tag=0
    )


class ConsumerGroupTargetAssignmentMetadataKey(Struct):  # 6
    group: str = field("string")


class ConsumerGroupTargetAssignmentMetadataValue(Struct):
    assignment_epoch: int = field("int32")


class TopicPartitions(Struct):
    topic_id: uuid.UUID = field("uuid")
    partitions: list[int] = field(array("int32"))


class ConsumerGroupTargetAssignmentMemberKey(Struct):  # 7
    group: str = field("string")
    member_id: str = field("string")


class ConsumerGroupTargetAssignmentMemberValue(Struct):
    topic_partitions: list[TopicPartitions] = field(array(TopicPartitions))


class ConsumerGroupCurrentMemberAssignmentKey(Struct):  # 8
    group: str = field("string")
    member_id: str = field("string")


class ConsumerGroupCurrentMemberAssignmentValue(Struct):
    member_epoch: int = field("int32")
    previous_member_epoch: int = field("int32")
    state: int = field("int8")  # Kafka's MemberState: 0 stable, 1 unrevoked, 2 unreleased
    assigned_partitions: list[TopicPartitions] = field(array(TopicPartitions))
    partitions_pending_revocation: list[TopicPartitions] = field(array(TopicPartitions))


# key version (record type) -> (key class, value class)
CONSUMER_GROUP_RECORDS: dict[int, tuple[type[Struct], type[Struct]]] = {
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
}
_TYPE_OF_KEY = {k: t for t, (k, _) in CONSUMER_GROUP_RECORDS.items()}
_VALUE_OF_KEY = {k: v for k, v in CONSUMER_GROUP_RECORDS.values()}
CONSUMER_GROUP_VALUE_VERSION = 0

ConsumerGroupKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
)
ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)
Key = OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey
Value = OffsetCommitValue | GroupMetadataValue | ConsumerGroupValue


def encode_versioned(obj: Struct, version: int, flexible: bool) -> bytes:
    parts: list[Any] = [bytearray(_VERSION.pack(version))]
    codegen.encoder(type(obj), version, flexible)(obj, parts)
    return b"".join(bytes(p) for p in parts)


def encode_key(key: Key, version: int | None = None) -> bytes:
    """The key with its version prefix (offset commits: 1, group metadata: 2, a consumer
    group record: its record type, 3-8)."""
    if isinstance(key, GroupMetadataKey):
        return encode_versioned(key, GROUP_METADATA_KEY_VERSION, False)
    record_type = _TYPE_OF_KEY.get(type(key))
    if record_type is not None:
        return encode_versioned(key, record_type, False)
    return encode_versioned(key, 1 if version is None else version, False)


def encode_value(value: Value, version: int) -> bytes:
    if isinstance(value, tuple(_VALUE_OF_KEY.values())):
        if version != CONSUMER_GROUP_VALUE_VERSION:
            raise ValueError(f"no {type(value).__name__} version {version}")
        return encode_versioned(value, version, True)
    if version not in VALUE_VERSIONS:
        raise ValueError(f"no value version {version}")
    return encode_versioned(value, version, version >= FIRST_FLEXIBLE_VALUE_VERSION)


def version_of(data: bytes, what: str) -> int:
    if len(data) < 2:
        raise CorruptRequest(f"a {what} needs a 2-byte version, got {len(data)} bytes")
    (version,) = _VERSION.unpack_from(data, 0)
    return int(version)


def decode_versioned(cls: type[Struct], data: bytes, version: int, flexible: bool) -> Any:
    obj, end = codegen.decoder(cls, version, flexible)(data, memoryview(data), 2)
    if end != len(data):
        raise CorruptRequest(f"{cls.__name__} v{version} has {len(data) - end} bytes left over")
    return obj


def decode_key(data: bytes) -> Key:
    """The key of a ``__consumer_offsets`` record. Raises ``CorruptRequest`` if it is not
    one (an unknown version included)."""
    version = version_of(data, "key")
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        return decode_versioned(OffsetCommitKey, data, version, False)  # type: ignore[no-any-return]
    if version == GROUP_METADATA_KEY_VERSION:
        return decode_versioned(GroupMetadataKey, data, version, False)  # type: ignore[no-any-return]
    if version in CONSUMER_GROUP_RECORDS:
        cls = CONSUMER_GROUP_RECORDS[version][0]
        return decode_versioned(cls, data, version, False)  # type: ignore[no-any-return]
    raise CorruptRequest(f"unknown __consumer_offsets key version {version}")


def decode_value(key: Key, data: bytes) -> Value:
    """The value that goes with ``key`` (any version 0-4; a consumer group record's: 0)."""
    version = version_of(data, "value")
    consumer_value = _VALUE_OF_KEY.get(type(key))
    if consumer_value is not None:
        if version != CONSUMER_GROUP_VALUE_VERSION:
            raise CorruptRequest(f"unknown {consumer_value.__name__} version {version}")
        return decode_versioned(consumer_value, data, version, True)  # type: ignore[no-any-return]
    if version not in VALUE_VERSIONS:
        raise CorruptRequest(f"unknown __consumer_offsets value version {version}")
    cls = OffsetCommitValue if isinstance(key, OffsetCommitKey) else GroupMetadataValue
    return decode_versioned(cls, data, version, version >= FIRST_FLEXIBLE_VALUE_VERSION)  # type: ignore[no-any-return]
