"""build_batch and iter_records against kafka-python as an independent oracle."""

from __future__ import annotations

import pytest

from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import (
    BatchHeader,
    Record,
    RecordsError,
    TimestampType,
    build_batch,
    iter_batches,
    iter_records,
    validate_batches,
)

from .kafka_oracle import kp_batch, kp_records

CASES: list[list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]] = [
    [(1_700_000_000_000, b"k", b"v", [])],
    [(5, None, None, []), (4, b"", b"", [("a", None), ("", b"")])],
    [(0, b"x" * 300, b"y" * 20_000, [(f"h{i}", b"z" * i) for i in range(20)])],
    [(1_000 + i * 7919 % 50, b"%d" % i, b"value-%d" % i, [("n", b"%d" % i)]) for i in range(200)],
]


def _ours(case, **kw) -> bytes:
    return build_batch([Record(k, v, h, ts) for ts, k, v, h in case], **kw)


@pytest.mark.parametrize("case", CASES)
def test_uncompressed_bytes_equal_kafka_python(case) -> None:
    ours = _ours(case, partition_leader_epoch=0, producer_id=3, producer_epoch=1, base_sequence=9)
    assert ours == kp_batch(case, producer_id=3, producer_epoch=1, base_sequence=9)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_round_trip_and_kafka_python_reads_them(case, codec: str) -> None:
    data = _ours(case, base_offset=100, compression=codec)
    validate_batches(memoryview(data), max_batch_bytes=1 << 24)
    expected = [(100 + i, ts, k, v, list(h)) for i, (ts, k, v, h) in enumerate(case)]
    assert [(o, ts, k, v, h) for o, ts, _t, k, v, h in kp_records(data)] == expected
    decoded = [
        (r.offset, r.timestamp_ms, r.key, r.value, list(r.headers)) for r in iter_records(data)
    ]
    assert decoded == expected


@pytest.mark.parametrize("case", CASES)
def test_iter_records_reads_kafka_python_batches(case) -> None:
    data = kp_batch(case)
    decoded = [
        (r.offset, r.timestamp_ms, r.key, r.value, list(r.headers)) for r in iter_records(data)
    ]
    assert decoded == [(i, ts, k, v, list(h)) for i, (ts, k, v, h) in enumerate(case)]


def test_header_fields_and_flags() -> None:
    data = build_batch(
        [Record(b"k", b"v")],
        timestamp_ms=77,
        producer_id=5,
        producer_epoch=2,
        base_sequence=0,
        is_transactional=True,
        is_control=True,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    h = BatchHeader.parse(data)
    assert h.is_transactional and h.is_control
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert (h.base_timestamp, h.max_timestamp, h.partition_leader_epoch) == (77, 77, -1)
    assert [r.timestamp_ms for r in iter_records(data)] == [77]


def test_iter_batches_skips_a_torn_tail() -> None:
    a = build_batch([Record(b"a", b"1")], timestamp_ms=1)
    b = build_batch([Record(b"b", b"2")], base_offset=1, timestamp_ms=2)
    assert [h.base_offset for h, _ in iter_batches(a + b + b[:30])] == [0, 1]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_compressed_batches_are_read(codec: str) -> None:
    case = CASES[3]
    data = kp_batch(case, compression=codec)
    decoded = [(r.offset, r.timestamp_ms, r.key, r.value) for r in iter_records(data)]
    assert decoded == [(i, ts, k, v) for i, (ts, k, v, _h) in enumerate(case)]


def test_corrupt_compressed_data_is_a_corrupt_message() -> None:
    data = bytearray(kp_batch(CASES[2], compression="zstd"))
    data[-40:] = bytes(40)  # the end of the zstd frame
    with pytest.raises(RecordsError) as info:
        list(iter_records(bytes(data)))
    assert info.value.error_code is ErrorCode.CORRUPT_MESSAGE


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError):
        build_batch([])
