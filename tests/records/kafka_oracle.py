"""Test-only oracle: kafka-python's RecordBatch v2 builder and reader.

An independent implementation to check our batches (bytes, CRCs, records) against.
Nothing here is used by the broker at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

KRecord = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def kp_batch(
    records: Sequence[KRecord],
    *,
    compression: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A v2 batch built by kafka-python; records are (timestamp, key, value, headers)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[compression],
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (ts, key, value, headers) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def kp_records(batch: bytes | bytearray | memoryview) -> list[tuple[Any, ...]]:
    """(offset, timestamp, timestamp_type, key, value, headers) of every record, read by
    kafka-python, after checking the batch's CRC."""
    parsed = DefaultRecordBatch(bytearray(batch))
    assert parsed.validate_crc(), "kafka-python rejects the CRC"
    return [
        (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, list(r.headers)) for r in parsed
    ]


def kp_header(batch: bytes | bytearray | memoryview) -> DefaultRecordBatch:
    return DefaultRecordBatch(bytearray(batch))


def compressible(n: int, size: int = 200) -> list[KRecord]:
    """Records that compress well (kafka-python sends a batch uncompressed otherwise)."""
    return [(1_000 + i, b"key-%d" % i, b"x" * size, [("h", b"v")]) for i in range(n)]
