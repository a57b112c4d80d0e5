"""ListOffsets by timestamp through the time index, checked against a linear scan."""

from __future__ import annotations

import random

import pytest

from trio_broker.records import Record, build_batch, validate_batches

from ..records.kafka_oracle import kp_batch
from .helpers import open_log, records


def _linear(all_records: list[tuple[int, int]], ts: int) -> tuple[int, int] | None:
    hits = [(o, t) for o, t in all_records if t >= ts]
    return min(hits) if hits else None


def test_offset_for_timestamp_matches_a_linear_scan(tmp_path) -> None:
    rng = random.Random(3)
    log = open_log(tmp_path / "t-0", segment_bytes=3_000, index_interval_bytes=200)
    seen: list[tuple[int, int]] = []
    base = 1_000_000
    for _ in range(300):
        base += rng.randint(-50, 120)  # mostly growing, sometimes going back
        stamps = [base + rng.randint(-30, 30) for _ in range(rng.randint(1, 6))]
        info = log.append(
            records(len(stamps), ts=stamps, value=b"p" * 30), leader_epoch=0, now_ms=0
        )
        seen.extend(zip(range(info.first_offset, info.last_offset + 1), stamps, strict=True))
    assert len(log.segment_base_offsets) > 5
    assert sum(len(s.time_index) for s in log._view.segments) > 20
    lo, hi = min(t for _, t in seen), max(t for _, t in seen)
    for ts in [lo - 1, lo, hi, hi + 1, *rng.sample(range(lo, hi), 300)]:
        assert log.offset_for_timestamp(ts) == _linear(seen, ts), ts
    best = max(t for _, t in seen)
    assert log.max_timestamp_offset() == min((o, t) for o, t in seen if t == best)
    # respects the log start offset
    start = log.delete_records_before(seen[len(seen) // 2][0])
    rest = [(o, t) for o, t in seen if o >= start]
    for ts in rng.sample(range(lo, hi), 100):
        assert log.offset_for_timestamp(ts) == _linear(rest, ts), ts
    log.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=3_000, index_interval_bytes=200)
    for ts in rng.sample(range(lo, hi), 50):
        assert reopened.offset_for_timestamp(ts) == _linear(rest, ts), ts
    assert reopened.max_timestamp_offset() == min((o, t) for o, t in rest if t == best)
    reopened.close()


def test_empty_log_has_no_timestamp_answer(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp_offset() is None
    log.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_answer_with_the_exact_record(tmp_path, codec: str) -> None:
    log = open_log(tmp_path / "t-0")
    data = kp_batch([(100 + i, b"k", b"v" * 300, []) for i in range(5)], compression=codec)
    log.append(
        validate_batches(memoryview(data), max_batch_bytes=1 << 20), leader_epoch=0, now_ms=0
    )
    assert log.offset_for_timestamp(102) == (2, 102)  # decoded: the record, not the batch
    ours = build_batch([Record(b"k", b"v", (), 200 + i) for i in range(5)], compression=codec)
    log.append(
        validate_batches(memoryview(ours), max_batch_bytes=1 << 20), leader_epoch=0, now_ms=0
    )
    assert log.offset_for_timestamp(202) == (7, 202)
    assert log.max_timestamp_offset() == (9, 204)
    log.close()
