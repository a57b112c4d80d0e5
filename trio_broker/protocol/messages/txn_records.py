"""The records of ``__transaction_state``: Kafka's ``TransactionLogKey`` (version 0) and
``TransactionLogValue`` (versions 0-1, flexible from 1), as the transaction coordinator's
JSON schemas describe them.

Owns: their declarations and ``encode_key`` / ``encode_value`` / ``decode_key`` /
``decode_value``, which add or read the int16 version that prefixes each key and value in
the log. Data records, not API messages: nothing here is registered. No I/O.
"""

from __future__ import annotations

from ..errors import CorruptRequest
from ..schema import Struct, array, field
from .coordinator_records import decode_versioned, encode_versioned, version_of

KEY_VERSION = 0
VALUE_VERSIONS = (0, 1)


class TransactionLogKey(Struct):
    transactional_id: str = field("string")


class TransactionLogValue(Struct):
    class PartitionsSchema(Struct):
        topic: str = field("string")
        partition_ids: list[int] = field("[]int32")

    producer_id: int = field("int64")
    previous_producer_id: int = field("int64", "1+", default=-1, tag=0)
    next_producer_id: int = field("int64", "1+", default=-1, tag=1)
    producer_epoch: int = field("int16")
    transaction_timeout_ms: int = field("int32")
    transaction_status: int = field("int8")
    transaction_partitions: list[PartitionsSchema] | None = field(
        array(PartitionsSchema), nullable="0+"
    )
    transaction_last_update_timestamp_ms: int = field("int64")
    transaction_start_timestamp_ms: int = field("int64")
    client_transaction_version: int = field("int16", "1+", default=0, tag=2)


def encode_key(key: TransactionLogKey) -> bytes:
    return encode_versioned(key, KEY_VERSION, False)


def encode_value(value: TransactionLogValue, version: int = 1) -> bytes:
    if version not in VALUE_VERSIONS:
        raise ValueError(f"no value version {version}")
    return encode_versioned(value, version, version >= 1)


def decode_key(data: bytes) -> TransactionLogKey:
    version = version_of(data, "key")
    if version != KEY_VERSION:
        raise CorruptRequest(f"unknown __transaction_state key version {version}")
    return decode_versioned(TransactionLogKey, data, version, False)  # type: ignore[no-any-return]


def decode_value(data: bytes) -> TransactionLogValue:
    version = version_of(data, "value")
    if version not in VALUE_VERSIONS:
        raise CorruptRequest(f"unknown __transaction_state value version {version}")
    return decode_versioned(TransactionLogValue, data, version, version >= 1)  # type: ignore[no-any-return]
