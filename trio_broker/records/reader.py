"""Decoding of stored batches: walking batches in a buffer and the records of one batch.

Owns: ``iter_batches`` (whole batches in a buffer, headers parsed, no CRC check) and
``iter_records`` (the records of one uncompressed or gzip batch, for the broker's internal
logs and tests). It must not be used on the produce path: producers' records are never
decoded by the broker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from trio_broker.protocol.errors import CorruptRequest, ErrorCode
from trio_broker.protocol.primitives import read_varint

from .codec import decompress
from .errors import RecordsError
from .header import HEADER_SIZE, LOG_OVERHEAD, PREFIX_STRUCT, BatchHeader, TimestampType

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def iter_batches(data: Buffer) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Each whole batch in ``data`` with its header; a torn tail is ignored."""
    view = memoryview(data)
    position = 0
    while view.nbytes - position >= HEADER_SIZE:
        _, length = PREFIX_STRUCT.unpack_from(view, position)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE or position + size > view.nbytes:
            return
        yield BatchHeader.parse(view, position), view[position : position + size]
        position += size


def _bytes(data: Buffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(data, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(data):
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record field runs past the batch")
    return bytes(data[pos:end]), end


def iter_records(batch: Buffer) -> Iterator[DecodedRecord]:
    """The records of one batch (uncompressed or gzip), with absolute offsets."""
    view = memoryview(batch)
    header = BatchHeader.parse(view)
    body = decompress(header.compression, view[HEADER_SIZE : header.size])
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    pos = 0
    try:
        for _ in range(header.records_count):
            length, pos = read_varint(body, pos)
            end = pos + length
            if length < 1 or end > len(body):
                raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record runs past the batch")
            pos += 1  # attributes
            ts_delta, pos = read_varint(body, pos)
            offset_delta, pos = read_varint(body, pos)
            key, pos = _bytes(body, pos)
            value, pos = _bytes(body, pos)
            count, pos = read_varint(body, pos)
            headers = []
            for _h in range(count):
                hkey, pos = _bytes(body, pos)
                hvalue, pos = _bytes(body, pos)
                headers.append(((hkey or b"").decode(), hvalue))
            if pos != end:
                raise RecordsError(ErrorCode.CORRUPT_MESSAGE, "record length does not match")
            yield DecodedRecord(
                offset=header.base_offset + offset_delta,
                timestamp_ms=header.max_timestamp
                if log_append
                else header.base_timestamp + ts_delta,
                key=key,
                value=value,
                headers=tuple(headers),
            )
    except CorruptRequest as exc:
        raise RecordsError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
