"""A small builder of v2 record batches, for the broker's own logs and for tests.

Owns: encoding ``Record`` values (key, value, headers, timestamp) as varint-framed v2
records and wrapping them in a batch with a correct header and CRC-32C. It must not be used
to rewrite producers' batches (the log stores those as they came) and does no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from trio_broker.protocol.primitives import varint, varlong

from .codec import compress
from .header import (
    CONTROL_MASK,
    CRC_OFFSET,
    CURRENT_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    NO_PARTITION_LEADER_EPOCH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Compression,
    TimestampType,
    batch_crc,
)

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One record to put in a batch; ``timestamp_ms`` None takes the batch's timestamp."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    timestamp_ms: int | None = None


def _bytes_field(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += varint(-1)
    else:
        out += varint(len(value))
        out += value


def encode_record(record: Record, offset_delta: int, timestamp_delta: int) -> bytes:
    """One record in v2 framing: length varint, then attributes .. headers."""
    body = bytearray(b"\x00")  # record attributes, unused
    body += varlong(timestamp_delta)
    body += varint(offset_delta)
    _bytes_field(body, record.key)
    _bytes_field(body, record.value)
    body += varint(len(record.headers))
    for key, value in record.headers:
        _bytes_field(body, key.encode())
        _bytes_field(body, value)
    return varint(len(body)) + bytes(body)


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression: str | Compression = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytes:
    """The bytes of one v2 batch holding ``records`` with offsets from ``base_offset``."""
    if not records:
        raise ValueError("a batch holds at least one record")
    codec = (
        compression if isinstance(compression, Compression) else Compression.from_name(compression)
    )
    default_ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    stamps = [r.timestamp_ms if r.timestamp_ms is not None else default_ts for r in records]
    base_ts = stamps[0]
    body = b"".join(
        encode_record(r, i, ts - base_ts)
        for i, (r, ts) in enumerate(zip(records, stamps, strict=True))
    )
    body = compress(codec, body)
    attributes = int(codec)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    out = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        HEADER_SIZE + len(body) - LOG_OVERHEAD,
        partition_leader_epoch,
        CURRENT_MAGIC,
        0,
        attributes,
        len(records) - 1,
        base_ts,
        max(stamps),
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out += body
    out[CRC_OFFSET : CRC_OFFSET + 4] = batch_crc(out).to_bytes(4, "big")
    return bytes(out)
