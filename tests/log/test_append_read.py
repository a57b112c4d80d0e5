"""Appends and reads: offsets, whole batches, limits, segment rolls, index lookups."""

from __future__ import annotations

import os
import random

import pytest

from trio_broker.log import OffsetOutOfRange
from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import BatchHeader, TimestampType, batch_crc, iter_batches, iter_records

from .helpers import fill, open_log, read_headers, records, region_bytes


def test_append_assigns_offsets_and_read_returns_the_bytes(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    a = log.append(records(3, ts=5), leader_epoch=4, now_ms=99)
    b = log.append(records(2, ts=6), leader_epoch=4, now_ms=99)
    assert (a.first_offset, a.last_offset, a.log_append_time_ms, a.record_count) == (0, 2, -1, 3)
    assert (b.first_offset, b.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == 5
    info = log.read(0, 1 << 20)
    assert info.next_fetch_offset == 5 and info.high_watermark == 5
    data = region_bytes(info)
    info.release()
    batches = list(iter_batches(data))
    assert [(h.base_offset, h.records_count, h.partition_leader_epoch) for h, _ in batches] == [
        (0, 3, 4),
        (3, 2, 4),
    ]
    for h, raw in batches:
        assert batch_crc(raw) == h.crc
    assert [r.offset for _, raw in batches for r in iter_records(raw)] == [0, 1, 2, 3, 4]
    files = sorted(os.listdir(tmp_path / "t-0"))
    assert "00000000000000000000.log" in files and "00000000000000000000.index" in files
    assert "00000000000000000000.timeindex" in files
    log.close()


def test_log_append_time(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", message_timestamp_type="LogAppendTime")
    info = log.append(records(2, ts=5), leader_epoch=0, now_ms=123_456)
    assert info.log_append_time_ms == 123_456
    (h,) = read_headers(log)
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME and h.max_timestamp == 123_456
    assert log.offset_for_timestamp(123_456) == (0, 123_456)
    log.close()


def test_fetch_at_log_end_is_empty_and_out_of_range_raises(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 3)
    info = log.read(3, 1 << 20)
    assert info.regions == [] and info.next_fetch_offset == 3
    for bad in (4, -1):
        with pytest.raises(OffsetOutOfRange) as exc:
            log.read(bad, 100)
        assert exc.value.error_code is ErrorCode.OFFSET_OUT_OF_RANGE
    log.close()


def test_max_bytes_returns_whole_batches_and_min_one_batch(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 10, value=b"x" * 100)
    size = read_headers(log)[0].size
    info = log.read(0, size * 3 + size // 2)
    assert info.size_bytes == size * 3 and info.next_fetch_offset == 3
    info.release()
    info = log.read(2, size - 1)  # first batch larger than max_bytes: still returned
    assert info.size_bytes == size and info.next_fetch_offset == 3
    info.release()
    info = log.read(2, size - 1, min_one_batch=False)
    assert info.regions == [] and info.next_fetch_offset == 2
    log.close()


def test_fetch_inside_a_batch_returns_the_whole_batch(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 3, per_batch=5)
    assert [h.base_offset for h in read_headers(log, 7)] == [5, 10]
    log.close()


def test_max_offset_bounds_the_read(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 4, per_batch=2)  # batches at 0, 2, 4, 6
    info = log.read(0, 1 << 20, max_offset=4)
    assert [h.base_offset for h, _ in iter_batches(region_bytes(info))] == [0, 2]
    info.release()
    info = log.read(0, 1 << 20, max_offset=5)  # the batch holding 4-5 ends after 5
    assert info.next_fetch_offset == 4
    info.release()
    assert log.read(4, 1 << 20, max_offset=4).regions == []
    log.close()


def test_reads_span_segment_rolls(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=500, index_interval_bytes=100)
    fill(log, 60, per_batch=2, value=b"y" * 20)
    assert len(log.segment_base_offsets) > 5
    headers = read_headers(log)
    assert [h.base_offset for h in headers] == list(range(0, 120, 2))
    # a bounded read crossing a segment boundary
    boundary = log.segment_base_offsets[2]
    info = log.read(boundary - 2, headers[0].size * 3)
    assert [h.base_offset for h, _ in iter_batches(region_bytes(info))] == [
        boundary - 2,
        boundary,
        boundary + 2,
    ]
    assert len(info.regions) == 2
    info.release()
    log.close()


def test_index_lookup_agrees_with_a_linear_scan(tmp_path) -> None:
    rng = random.Random(7)
    log = open_log(tmp_path / "t-0", segment_bytes=20_000, index_interval_bytes=300)
    for _ in range(400):
        log.append(
            records(rng.randint(1, 5), value=b"z" * rng.randint(0, 200)), leader_epoch=0, now_ms=0
        )
    scan = read_headers(log)
    assert len(log.segment_base_offsets) > 3
    assert (
        sum(len(log._view.segments[i].offset_index) for i in range(len(log.segment_base_offsets)))
        > 100
    )
    for offset in range(log.log_end_offset):
        info = log.read(offset, 1)
        ((h, _),) = iter_batches(region_bytes(info))
        info.release()
        expected = next(b for b in scan if b.base_offset <= offset <= b.last_offset)
        assert h == expected
    log.close()


def test_region_files_are_released(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, 2)
    shared = log._view.segments[0].shared_file
    info = log.read(0, 1 << 20)
    assert shared.references == 2
    info.release()
    info.release()  # idempotent
    assert shared.references == 1
    log.close()
    assert shared.closed


def test_appended_header_is_what_we_read(tmp_path) -> None:
    log = open_log(tmp_path / "t-0")
    rec = records(4, ts=[9, 3, 12, 1])
    log.append(rec, leader_epoch=8, now_ms=0)
    (h,) = read_headers(log)
    assert isinstance(h, BatchHeader)
    assert (h.max_timestamp, h.records_count, h.partition_leader_epoch) == (12, 4, 8)
    log.close()


def scan_next(scan, base: int) -> int:
    return next(h.next_offset for h in scan if h.base_offset == base)


def test_bounded_reads_agree_with_a_linear_scan(tmp_path) -> None:
    rng = random.Random(11)
    log = open_log(tmp_path / "t-0", segment_bytes=6_000, index_interval_bytes=250)
    for _ in range(300):
        log.append(
            records(rng.randint(1, 4), value=b"w" * rng.randint(0, 150)), leader_epoch=0, now_ms=0
        )
    scan = read_headers(log)
    assert len(log.segment_base_offsets) > 3
    for _ in range(300):
        offset = rng.randrange(log.log_end_offset)
        max_bytes = rng.randint(1, 3_000)
        max_offset = rng.choice([None, rng.randrange(offset, log.log_end_offset + 1)])
        info = log.read(offset, max_bytes, max_offset=max_offset)
        got = [h.base_offset for h, _ in iter_batches(region_bytes(info))]
        info.release()
        limit = log.log_end_offset if max_offset is None else max_offset
        expected, used = [], 0
        for h in scan:
            if h.next_offset <= offset:
                continue
            if h.next_offset > limit or (expected and used + h.size > max_bytes):
                break
            expected.append(h.base_offset)
            used += h.size
        assert got == expected, (offset, max_bytes, max_offset)
        assert info.size_bytes <= max_bytes or len(got) == 1
        assert info.next_fetch_offset == (scan_next(scan, got[-1]) if got else offset)
