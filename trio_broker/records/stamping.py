"""Offset assignment: the on-disk bytes of validated batches, as buffers for ``os.writev``.

Owns: turning ``ValidatedRecords`` into ``StampedRecords`` for a given base offset and
partition leader epoch. The CRC does not cover base offset and leader epoch, so a batch
becomes a fresh 16-byte prefix plus the producer's own memoryview: no copy. Only with
``message.timestamp.type=LogAppendTime`` (or a CreateTime log receiving a batch that claims
LogAppendTime) is a batch copied, its attributes and max timestamp rewritten and its CRC
recomputed. ``as_stored`` wraps batches a follower appends unchanged. It must not validate,
decode records or do I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LEADER_EPOCH_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    TimestampType,
    batch_crc,
)
from .validation import BatchSlice, ValidatedRecords

_PREFIX = struct.Struct(">qii")  # base_offset, batch_length, partition_leader_epoch
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class StampedRecords:
    """Batches ready to be written: ``parts`` in order, and each batch's final header."""

    parts: list[Buffer]
    headers: list[BatchHeader]
    size: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    # Base offset of the first batch holding ``max_timestamp``.
    offset_of_max_timestamp: int


def rewrite_timestamps(batch: Buffer, timestamp_type: TimestampType, max_timestamp: int) -> bytes:
    """A copy of ``batch`` with the timestamp-type bit and max timestamp set, CRC fixed."""
    out = bytearray(batch)
    (attributes,) = _ATTRIBUTES.unpack_from(out, ATTRIBUTES_OFFSET)
    attributes &= ~TIMESTAMP_TYPE_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    _ATTRIBUTES.pack_into(out, ATTRIBUTES_OFFSET, attributes)
    _TIMESTAMP.pack_into(out, MAX_TIMESTAMP_OFFSET, max_timestamp)
    _CRC.pack_into(out, CRC_OFFSET, batch_crc(out))
    return bytes(out)


def stamp_prefix(base_offset: int, batch_length: int, leader_epoch: int) -> bytes:
    """The 16 bytes that precede the CRC-covered part of a batch."""
    return _PREFIX.pack(base_offset, batch_length, leader_epoch)


def assign_offsets(
    records: ValidatedRecords,
    *,
    base_offset: int,
    leader_epoch: int,
    log_append_time_ms: int | None = None,
) -> StampedRecords:
    """Give the batches consecutive offsets from ``base_offset`` and the leader epoch.

    ``log_append_time_ms`` is None for a CreateTime log; otherwise every batch is marked
    LogAppendTime with that max timestamp.
    """
    parts: list[Buffer] = []
    headers: list[BatchHeader] = []
    offset = base_offset
    max_ts = -1
    offset_of_max = base_offset
    data = records.data
    for sliced in records.batches:
        h = sliced.header
        start, end = sliced.position, sliced.position + h.size
        parts.append(stamp_prefix(offset, h.batch_length, leader_epoch))
        if log_append_time_ms is not None:
            body = rewrite_timestamps(
                data[start:end], TimestampType.LOG_APPEND_TIME, log_append_time_ms
            )
            parts.append(memoryview(body)[LEADER_EPOCH_OFFSET + 4 :])
            h = BatchHeader.parse(body)
        elif h.attributes & TIMESTAMP_TYPE_MASK:  # LogAppendTime
            body = rewrite_timestamps(data[start:end], TimestampType.CREATE_TIME, h.max_timestamp)
            parts.append(memoryview(body)[LEADER_EPOCH_OFFSET + 4 :])
            h = BatchHeader.parse(body)
        else:
            parts.append(data[start + LEADER_EPOCH_OFFSET + 4 : end])
        h = h.restamped(offset, leader_epoch)
        headers.append(h)
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
            offset_of_max = offset
        offset = h.next_offset
    return StampedRecords(
        parts=parts,
        headers=headers,
        size=records.size,
        first_offset=base_offset,
        last_offset=offset - 1,
        max_timestamp=max_ts,
        offset_of_max_timestamp=offset_of_max,
    )


def as_stored(data: memoryview, batches: tuple[BatchSlice, ...]) -> StampedRecords:
    """``batches`` of ``data`` (``stored_batches``) exactly as they are: their own offsets,
    leader epochs and timestamps, nothing copied (a follower's append)."""
    if not batches:
        raise ValueError("no batches")
    first, last = batches[0], batches[-1]
    start, end = first.position, last.position + last.header.size
    max_ts = -1
    offset_of_max = first.header.base_offset
    for sliced in batches:
        if sliced.header.max_timestamp > max_ts:
            max_ts, offset_of_max = sliced.header.max_timestamp, sliced.header.base_offset
    return StampedRecords(
        parts=[data[start:end]],
        headers=[b.header for b in batches],
        size=end - start,
        first_offset=first.header.base_offset,
        last_offset=last.header.last_offset,
        max_timestamp=max_ts,
        offset_of_max_timestamp=offset_of_max,
    )
