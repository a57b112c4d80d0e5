"""Shallow validation of the records a producer sent: whole v2 batches, nothing decoded.

Owns: ``validate_batches`` and its result ``ValidatedRecords``. Each batch is checked for a
sane length, magic 2, a known codec, its CRC-32C, ``records_count == last_offset_delta + 1``
and a size within ``max_batch_bytes``; records are never decoded and compressed batches stay
compressed. Also ``stored_batches``: the same checks for batches a replica fetched from a
leader's log (kept offsets, records the cleaner removed, a partial last batch left out). It
must not assign offsets (see ``stamping``) or know about logs and requests.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from trio_broker.protocol.errors import ErrorCode

from .errors import RecordsError
from .header import (
    COMPRESSION_MASK,
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    Compression,
    batch_crc,
)

_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class BatchSlice:
    """One batch inside a buffer: where it starts and its parsed header."""

    position: int
    header: BatchHeader


@dataclass(frozen=True, slots=True)
class ValidatedRecords:
    """Records that passed ``validate_batches``, still as the producer's bytes."""

    data: memoryview
    batches: tuple[BatchSlice, ...]
    record_count: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int

    @property
    def size(self) -> int:
        return self.data.nbytes

    @property
    def first(self) -> BatchHeader:
        return self.batches[0].header

    @property
    def is_transactional(self) -> bool:
        return self.first.is_transactional

    @property
    def has_control_batch(self) -> bool:
        return any(b.header.is_control for b in self.batches)


_LAST_CODEC = max(Compression)  # once: iterating the enum on every batch cost ~1 us


def _fail(code: ErrorCode, message: str) -> RecordsError:
    return RecordsError(code, message)


def check_batch_at(
    data: memoryview, position: int, *, max_batch_bytes: int, stored: bool = False
) -> BatchHeader:
    """Validate the batch starting at ``position`` of ``data``; returns its header.

    ``stored`` accepts a batch as a log keeps it: the cleaner may have removed records
    from it (fewer records than offsets, even none).
    """
    remaining = data.nbytes - position
    if remaining < LOG_OVERHEAD:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"{remaining} trailing bytes are no batch")
    (length,) = _LENGTH.unpack_from(data, position + 8)
    size = length + LOG_OVERHEAD
    if length < 0 or size > remaining:
        raise _fail(
            ErrorCode.CORRUPT_MESSAGE,
            f"batch at byte {position} claims {size} bytes, {remaining} are left",
        )
    if length < MAGIC_OFFSET + 1 - LOG_OVERHEAD:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {position} is too short")
    magic = data[position + MAGIC_OFFSET]
    if magic > 127:
        magic -= 256
    if magic < CURRENT_MAGIC:
        raise _fail(
            ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
            f"message format v{magic} is not supported, only v2 record batches",
        )
    if magic != CURRENT_MAGIC:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"unknown magic {magic}")
    if size < HEADER_SIZE:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"batch of {size} bytes is shorter than a header")
    if size > max_batch_bytes:
        raise _fail(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"batch of {size} bytes is larger than the limit of {max_batch_bytes}",
        )
    header = BatchHeader.parse(data, position)
    if batch_crc(data[position : position + size]) != header.crc:
        raise _fail(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {position} fails its CRC")
    if header.attributes & COMPRESSION_MASK > _LAST_CODEC:
        raise _fail(
            ErrorCode.CORRUPT_MESSAGE,
            f"unknown compression id {header.attributes & COMPRESSION_MASK}",
        )
    if stored:
        if header.last_offset_delta < 0 or not 0 <= header.records_count <= (
            header.last_offset_delta + 1
        ):
            raise _fail(
                ErrorCode.CORRUPT_MESSAGE,
                f"batch at byte {position} holds {header.records_count} records for "
                f"{header.last_offset_delta + 1} offsets",
            )
    elif header.records_count != header.last_offset_delta + 1 or header.records_count <= 0:
        raise _fail(
            ErrorCode.INVALID_RECORD,
            f"batch holds {header.records_count} records but its last offset delta is "
            f"{header.last_offset_delta}",
        )
    return header


def stored_batches(data: memoryview) -> tuple[BatchSlice, ...]:
    """The whole batches of ``data`` as a log stored them (a replica's fetch): each checked
    by header and CRC (``check_batch_at``, ``stored``), offsets increasing from batch to
    batch (gaps allowed: compaction removes batches). A partial batch at the end, which a
    fetch response may hold, is left out. Raises ``RecordsError``; no size limit."""
    if not isinstance(data, memoryview):
        data = memoryview(data)
    batches: list[BatchSlice] = []
    position = 0
    next_offset = -1
    while data.nbytes - position >= LOG_OVERHEAD:
        (length,) = _LENGTH.unpack_from(data, position + 8)
        if length >= 0 and length + LOG_OVERHEAD > data.nbytes - position:
            break  # the partial batch a fetch ends with
        header = check_batch_at(data, position, max_batch_bytes=data.nbytes, stored=True)
        if header.base_offset < next_offset:
            raise _fail(
                ErrorCode.CORRUPT_MESSAGE,
                f"batch at byte {position} starts at offset {header.base_offset}, below "
                f"{next_offset}",
            )
        batches.append(BatchSlice(position, header))
        next_offset = header.next_offset
        position += header.size
    return tuple(batches)


def validate_batches(data: memoryview, *, max_batch_bytes: int) -> ValidatedRecords:
    """Check that ``data`` is one or more whole, intact v2 batches. Raises ``RecordsError``."""
    if not isinstance(data, memoryview):
        data = memoryview(data)
    if data.nbytes == 0:
        raise _fail(ErrorCode.INVALID_RECORD, "no record batch")
    batches: list[BatchSlice] = []
    position = 0
    count = 0
    max_timestamp = -1
    while position < data.nbytes:
        header = check_batch_at(data, position, max_batch_bytes=max_batch_bytes)
        batches.append(BatchSlice(position, header))
        count += header.records_count
        max_timestamp = max(max_timestamp, header.max_timestamp)
        position += header.size
    first = batches[0].header
    return ValidatedRecords(
        data=data,
        batches=tuple(batches),
        record_count=count,
        max_timestamp=max_timestamp,
        producer_id=first.producer_id,
        producer_epoch=first.producer_epoch,
        base_sequence=first.base_sequence,
    )
