"""validate_batches: good batches of every codec, and each error with Kafka's code."""

from __future__ import annotations

import struct

import pytest

from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import (
    BatchHeader,
    Compression,
    RecordsError,
    TimestampType,
    batch_crc,
    validate_batches,
)

from .kafka_oracle import compressible, kp_batch

LIMIT = 1 << 20


def _validate(data: bytes, limit: int = LIMIT):
    return validate_batches(memoryview(data), max_batch_bytes=limit)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_good_batches_of_every_codec(codec: str) -> None:
    data = kp_batch(
        compressible(20), compression=codec, producer_id=7, producer_epoch=3, base_sequence=11
    )
    v = _validate(data)
    assert len(v.batches) == 1
    h = v.first
    assert h.compression is Compression[codec.upper()]
    assert h.size == len(data) and v.size == len(data)
    assert (h.records_count, h.last_offset_delta, h.magic) == (20, 19, 2)
    assert (v.producer_id, v.producer_epoch, v.base_sequence) == (7, 3, 11)
    assert v.record_count == 20 and v.max_timestamp == 1_019
    assert (h.base_timestamp, h.max_timestamp) == (1_000, 1_019)
    assert h.timestamp_type is TimestampType.CREATE_TIME
    assert not h.is_transactional and not h.is_control
    assert (h.last_offset, h.next_offset) == (19, 20)
    assert h.crc == batch_crc(data)
    assert v.data.obj is not None  # the producer's buffer, not a copy
    if codec != "none":
        assert len(data) < 20 * 200  # really compressed


def test_several_batches_keep_positions_and_sum_counts() -> None:
    a = kp_batch([(5, b"a", b"1", [])], producer_id=1, producer_epoch=0, base_sequence=0)
    b = kp_batch([(9, None, b"2", []), (3, None, b"3", [])])
    v = _validate(a + b)
    assert [s.position for s in v.batches] == [0, len(a)]
    assert v.record_count == 3 and v.max_timestamp == 9
    assert (v.producer_id, v.base_sequence) == (1, 0)  # the first batch's


def test_transactional_flag() -> None:
    data = kp_batch(
        [(1, b"k", b"v", [])], producer_id=4, producer_epoch=1, base_sequence=0, transactional=True
    )
    assert _validate(data).is_transactional


def _patch(data: bytes, offset: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, batch_crc(out))
    return bytes(out)


GOOD = kp_batch([(1, b"k", b"v", []), (2, b"k2", b"v2", [])])


def _legacy_v1() -> bytes:
    # offset, size, crc, magic=1, attributes, timestamp, key -1, value b"v"
    body = struct.pack(">bbqii", 1, 0, 0, -1, 1) + b"v"
    return struct.pack(">qi", 0, len(body) + 4) + struct.pack(">I", 0) + body


ERROR_CASES = [
    ("empty", b"", ErrorCode.INVALID_RECORD),
    ("torn prefix", GOOD[:10], ErrorCode.CORRUPT_MESSAGE),
    ("torn batch", GOOD[:-1], ErrorCode.CORRUPT_MESSAGE),
    ("trailing bytes", GOOD + b"\x00" * 5, ErrorCode.CORRUPT_MESSAGE),
    ("negative length", _patch(GOOD, 8, ">i", -1, fix_crc=False), ErrorCode.CORRUPT_MESSAGE),
    ("length too long", _patch(GOOD, 8, ">i", len(GOOD), fix_crc=False), ErrorCode.CORRUPT_MESSAGE),
    ("shorter than header", GOOD[:40] + b"", ErrorCode.CORRUPT_MESSAGE),
    ("bad crc", _patch(GOOD, 17, ">I", 12345, fix_crc=False), ErrorCode.CORRUPT_MESSAGE),
    ("flipped body byte", GOOD[:-1] + bytes([GOOD[-1] ^ 1]), ErrorCode.CORRUPT_MESSAGE),
    ("magic 1", _legacy_v1(), ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
    ("magic 0", _patch(GOOD, 16, ">b", 0, fix_crc=False), ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
    ("magic 3", _patch(GOOD, 16, ">b", 3, fix_crc=False), ErrorCode.CORRUPT_MESSAGE),
    ("count mismatch", _patch(GOOD, 57, ">i", 3), ErrorCode.INVALID_RECORD),
    ("delta mismatch", _patch(GOOD, 23, ">i", 0), ErrorCode.INVALID_RECORD),
    ("unknown codec", _patch(GOOD, 21, ">h", 6), ErrorCode.CORRUPT_MESSAGE),
]


@pytest.mark.parametrize(("name", "data", "code"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_carry_kafka_codes(name: str, data: bytes, code: ErrorCode) -> None:
    with pytest.raises(RecordsError) as info:
        _validate(data)
    assert info.value.error_code is code, info.value


def test_second_batch_is_checked_too() -> None:
    with pytest.raises(RecordsError) as info:
        _validate(GOOD + GOOD[:-1] + bytes([GOOD[-1] ^ 0xFF]))
    assert info.value.error_code is ErrorCode.CORRUPT_MESSAGE


def test_message_too_large() -> None:
    _validate(GOOD, limit=len(GOOD))
    with pytest.raises(RecordsError) as info:
        _validate(GOOD, limit=len(GOOD) - 1)
    assert info.value.error_code is ErrorCode.MESSAGE_TOO_LARGE


def test_header_parse_matches_kafka_python() -> None:
    from .kafka_oracle import kp_header

    data = kp_batch(
        compressible(3), compression="gzip", producer_id=9, producer_epoch=2, base_sequence=5
    )
    ours, theirs = BatchHeader.parse(data), kp_header(data)
    assert ours.base_offset == theirs.base_offset
    assert ours.partition_leader_epoch == theirs.leader_epoch
    assert ours.crc == theirs.crc
    assert ours.compression == theirs.compression_type
    assert ours.last_offset_delta == theirs.last_offset_delta
    assert (ours.base_timestamp, ours.max_timestamp) == (
        theirs.first_timestamp,
        theirs.max_timestamp,
    )
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence) == (9, 2, 5)
    assert ours.pack() == data[:61]
