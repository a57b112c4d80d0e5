"""Rewriting a stored batch with only some of its records: the log cleaner's batches.

Owns: ``retained_batch`` (a batch that keeps its base offset, last offset delta, producer
id, epoch and base sequence, leader epoch, codec, timestamp type and transactional and
control bits, with only the records given, re-encoded at their own offset deltas and
recompressed with the batch's own codec) and ``empty_batch`` (the header alone, no
records: Kafka keeps it for a producer's last batch so its sequence survives). Offsets
are never renumbered. ``DELETE_HORIZON_MASK`` is KIP-534's attribute bit: when set, the
base timestamp holds the time after which the batch's tombstones may be removed, and
record timestamps are deltas from it as usual. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from .builder import Record, encode_record
from .codec import compress
from .header import (
    COMPRESSION_MASK,
    CRC_OFFSET,
    CURRENT_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    BatchHeader,
    TimestampType,
    batch_crc,
)
from .reader import DecodedRecord

DELETE_HORIZON_MASK = 0x40


def delete_horizon(header: BatchHeader) -> int | None:
    """The batch's KIP-534 delete horizon (ms), None if it has none."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None


def _pack(
    header: BatchHeader, attributes: int, body: bytes, count: int, ts: tuple[int, int]
) -> bytes:
    out = bytearray(HEADER_SIZE)
    HEADER_STRUCT.pack_into(
        out,
        0,
        header.base_offset,
        HEADER_SIZE + len(body) - LOG_OVERHEAD,
        header.partition_leader_epoch,
        CURRENT_MAGIC,
        0,
        attributes,
        header.last_offset_delta,
        ts[0],
        ts[1],
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    out += body
    out[CRC_OFFSET : CRC_OFFSET + 4] = batch_crc(out).to_bytes(4, "big")
    return bytes(out)


def retained_batch(
    header: BatchHeader,
    records: Sequence[DecodedRecord],
    *,
    horizon_ms: int | None = None,
    level: int | None = None,
) -> bytes:
    """``header``'s batch holding only ``records`` (at least one, in offset order).

    ``horizon_ms`` sets the KIP-534 delete horizon; None keeps the batch's own, if any.
    """
    if not records:
        raise ValueError("a retained batch holds at least one record")
    attributes = header.attributes
    horizon = horizon_ms if horizon_ms is not None else delete_horizon(header)
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    if horizon is not None:
        attributes |= DELETE_HORIZON_MASK
        base_ts = horizon
    else:
        base_ts = header.base_timestamp if log_append else records[0].timestamp_ms
    max_ts = header.max_timestamp if log_append else max(r.timestamp_ms for r in records)
    body = b"".join(
        encode_record(
            Record(r.key, r.value, r.headers),
            r.offset - header.base_offset,
            (header.max_timestamp if log_append else r.timestamp_ms) - base_ts,
        )
        for r in records
    )
    packed = compress(header.compression, body, level)
    return _pack(header, attributes, packed, len(records), (base_ts, max_ts))


def empty_batch(header: BatchHeader) -> bytes:
    """``header``'s batch with no records left (uncompressed, Kafka's empty header)."""
    attributes = header.attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_MASK
    return _pack(header, attributes, b"", 0, (header.max_timestamp, header.max_timestamp))
