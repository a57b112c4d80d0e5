"""Offset assignment: zero-copy for CreateTime, CRC recomputed for LogAppendTime."""

from __future__ import annotations

import pytest

from trio_broker.records import (
    BatchHeader,
    TimestampType,
    assign_offsets,
    batch_crc,
    validate_batches,
)

from .kafka_oracle import compressible, kp_batch, kp_header, kp_records


def _joined(parts) -> bytes:
    return b"".join(bytes(p) for p in parts)


@pytest.mark.parametrize("codec", ["none", "gzip", "lz4", "zstd", "snappy"])
def test_new_base_offset_and_epoch_keep_the_crc_valid(codec: str) -> None:
    a = kp_batch(compressible(4), compression=codec)
    b = kp_batch(compressible(3), compression=codec)
    v = validate_batches(memoryview(a + b), max_batch_bytes=1 << 20)
    stamped = assign_offsets(v, base_offset=1_000_000_000_123, leader_epoch=17)
    out = _joined(stamped.parts)
    assert len(out) == len(a) + len(b) == stamped.size
    first, second = out[: len(a)], out[len(a) :]
    for batch, base in ((first, 1_000_000_000_123), (second, 1_000_000_000_127)):
        h = kp_header(batch)
        assert (h.base_offset, h.leader_epoch) == (base, 17)
        assert h.timestamp_type == 0
        recs = kp_records(batch)  # checks the CRC
        assert [r[0] for r in recs] == list(range(base, base + len(recs)))
    assert (stamped.first_offset, stamped.last_offset) == (1_000_000_000_123, 1_000_000_000_129)
    assert [h.base_offset for h in stamped.headers] == [1_000_000_000_123, 1_000_000_000_127]
    assert all(h.partition_leader_epoch == 17 for h in stamped.headers)


def test_create_time_is_zero_copy() -> None:
    data = bytearray(kp_batch(compressible(5)))
    v = validate_batches(memoryview(data), max_batch_bytes=1 << 20)
    stamped = assign_offsets(v, base_offset=42, leader_epoch=1)
    assert len(stamped.parts) == 2
    prefix, body = stamped.parts
    assert isinstance(prefix, bytes) and len(prefix) == 16
    assert isinstance(body, memoryview) and body.obj is data  # the producer's own buffer
    assert stamped.max_timestamp == 1_004 and stamped.offset_of_max_timestamp == 42


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_log_append_time_rewrites_attributes_max_timestamp_and_crc(codec: str) -> None:
    data = bytearray(kp_batch(compressible(3), compression=codec))
    original = bytes(data)
    v = validate_batches(memoryview(data), max_batch_bytes=1 << 20)
    stamped = assign_offsets(v, base_offset=10, leader_epoch=2, log_append_time_ms=987_654)
    out = _joined(stamped.parts)
    h = BatchHeader.parse(out)
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert h.max_timestamp == 987_654 and h.base_timestamp == 1_000
    assert h.crc == batch_crc(out)
    recs = kp_records(out)
    assert [(r[0], r[1], r[2]) for r in recs] == [(o, 987_654, 1) for o in (10, 11, 12)]
    assert stamped.headers[0].timestamp_type is TimestampType.LOG_APPEND_TIME
    assert data == original  # the producer's buffer is not modified


def test_create_time_log_clears_a_claimed_log_append_time() -> None:
    data = kp_batch(compressible(2))
    lat = assign_offsets(
        validate_batches(memoryview(data), max_batch_bytes=1 << 20),
        base_offset=0,
        leader_epoch=0,
        log_append_time_ms=5,
    )
    claimed = _joined(lat.parts)
    v = validate_batches(memoryview(claimed), max_batch_bytes=1 << 20)
    out = _joined(assign_offsets(v, base_offset=3, leader_epoch=0).parts)
    h = BatchHeader.parse(out)
    assert h.timestamp_type is TimestampType.CREATE_TIME and h.crc == batch_crc(out)
    kp_records(out)
