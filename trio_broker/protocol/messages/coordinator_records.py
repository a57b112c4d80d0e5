"""The records of ``__consumer_offsets``: Kafka's own key and value layouts, all versions.

Owns: the declarations of ``OffsetCommitKey`` (key versions 0-1), ``GroupMetadataKey``
(key version 2), ``OffsetCommitValue`` (0-4, flexible from 4) and ``GroupMetadataValue``
(0-4, flexible from 4), as Kafka's group coordinator JSON schemas describe them, and
``encode_key`` / ``encode_value`` / ``decode_key`` / ``decode_value``, which add or read the
int16 version that prefixes each key and value in the log. These are data records, not API
messages: nothing here is registered with ``protocol.api``. No I/O.
"""

from __future__ import annotations

import struct
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


Key = OffsetCommitKey | GroupMetadataKey
Value = OffsetCommitValue | GroupMetadataValue


def encode_versioned(obj: Struct, version: int, flexible: bool) -> bytes:
    parts: list[Any] = [bytearray(_VERSION.pack(version))]
    codegen.encoder(type(obj), version, flexible)(obj, parts)
    return b"".join(bytes(p) for p in parts)


def encode_key(key: Key, version: int | None = None) -> bytes:
    """The key with its version prefix (offset commits: 1, group metadata: 2)."""
    if isinstance(key, GroupMetadataKey):
        return encode_versioned(key, GROUP_METADATA_KEY_VERSION, False)
    return encode_versioned(key, 1 if version is None else version, False)


def encode_value(value: Value, version: int) -> bytes:
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
    raise CorruptRequest(f"unknown __consumer_offsets key version {version}")


def decode_value(key: Key, data: bytes) -> Value:
    """The value that goes with ``key`` (any version 0-4)."""
    version = version_of(data, "value")
    if version not in VALUE_VERSIONS:
        raise CorruptRequest(f"unknown __consumer_offsets value version {version}")
    cls = OffsetCommitValue if isinstance(key, OffsetCommitKey) else GroupMetadataValue
    return decode_versioned(cls, data, version, version >= FIRST_FLEXIBLE_VALUE_VERSION)  # type: ignore[no-any-return]
