"""Rolling by size, time and index capacity; retention; DeleteRecords; in-flight regions."""

from __future__ import annotations

import os

import pytest

from trio_broker.log import OffsetOutOfRange

from .helpers import fill, open_log, read_headers, records, region_bytes

DAY = 24 * 3600 * 1000


def test_roll_by_size(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=1_000)
    size = records(1, value=b"x" * 100).size
    fill(log, 30, value=b"x" * 100)
    bases = log.segment_base_offsets
    per_segment = 1_000 // size
    assert bases == tuple(range(0, 30, per_segment))
    for base in bases[:-1]:
        assert os.path.getsize(tmp_path / "t-0" / f"{base:020d}.log") <= 1_000
    log.close()


def test_roll_by_time_uses_the_first_batch_timestamp(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_ms=1_000)
    log.append(records(1, ts=10_000), leader_epoch=0, now_ms=10_000)
    info = log.append(records(1, ts=10_500), leader_epoch=0, now_ms=11_000)
    assert not info.rolled and log.segment_base_offsets == (0,)
    info = log.append(records(1, ts=11_001), leader_epoch=0, now_ms=11_001)
    assert info.rolled and log.segment_base_offsets == (0, 2)
    assert not log.maybe_roll(12_001)
    assert log.maybe_roll(12_002) and log.segment_base_offsets == (0, 2, 3)
    assert not log.maybe_roll(99_999)  # the new active segment is empty
    assert [h.base_offset for h in read_headers(log)] == [0, 1, 2]
    log.close()


def test_roll_when_the_offset_index_is_full(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", index_interval_bytes=0, segment_index_bytes=8 * 3)
    fill(log, 10)
    # entries for the 2nd, 3rd and 4th batch fill the index: the 5th starts a segment
    assert log.segment_base_offsets == (0, 4, 8)
    log.close()


def test_retention_by_bytes_keeps_the_active_segment(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=1_000, retention_bytes=2_500, retention_ms=-1)
    fill(log, 40, value=b"x" * 100)
    sizes = [s.size for s in log._view.segments]
    # Kafka's rule: drop the oldest segments while the excess still covers them
    excess, expected = sum(sizes) - 2_500, 0
    while expected < len(sizes) - 1 and excess - sizes[expected] >= 0:
        excess -= sizes[expected]
        expected += 1
    assert expected > 0
    bases = log.segment_base_offsets
    assert log.apply_retention(now_ms=0) == expected
    assert log.segment_base_offsets == bases[expected:]
    assert log.size_bytes - sizes[expected] < 2_500 <= log.size_bytes
    assert log.log_start_offset == log.segment_base_offsets[0]
    assert read_headers(log)[0].base_offset == log.log_start_offset
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    files = sorted(f for f in os.listdir(tmp_path / "t-0") if f.endswith(".log"))
    assert files == [f"{b:020d}.log" for b in log.segment_base_offsets]
    assert log.apply_retention(now_ms=0) == 0
    log.close()


def test_retention_by_time_and_never_the_active_segment(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=400, retention_ms=DAY)
    for i in range(20):
        log.append(records(1, ts=i * 1_000, value=b"x" * 100), leader_epoch=0, now_ms=0)
    bases = log.segment_base_offsets
    assert bases == tuple(range(0, 20, 2))  # newest timestamps 1_000, 3_000, 5_000 ...
    assert log.apply_retention(now_ms=DAY + 1_000) == 0  # nothing older than a day yet
    assert log.apply_retention(now_ms=DAY + 7_500) == 4
    assert log.segment_base_offsets == bases[4:]
    assert log.log_start_offset == bases[4]
    assert log.apply_retention(now_ms=10 * DAY) == len(bases) - 5
    assert log.segment_base_offsets == bases[-1:]  # the active one stays
    log.close()


def test_delete_records_before(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=400)
    fill(log, 20, value=b"x" * 100)
    bases = log.segment_base_offsets
    assert bases == tuple(range(0, 20, 2))
    assert log.delete_records_before(bases[2] + 1) == bases[2] + 1
    assert log.segment_base_offsets == bases[2:]
    assert log.log_start_offset == bases[2] + 1
    with pytest.raises(OffsetOutOfRange):
        log.read(bases[2], 10)
    assert read_headers(log)[0].base_offset == bases[2] + 1
    assert log.delete_records_before(0) == bases[2] + 1  # never moves back
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(21)
    assert log.delete_records_before(20) == 20  # everything: the log is empty but keeps its end
    assert log.read(20, 100).regions == [] and log.log_end_offset == 20
    log.close()
    again = open_log(tmp_path / "t-0")
    assert (again.log_start_offset, again.log_end_offset) == (20, 20)
    again.close()


def test_region_survives_deletion_of_its_segment_until_released(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=300, retention_bytes=0, retention_ms=-1)
    fill(log, 10, value=b"x" * 100)
    info = log.read(0, 250)
    expected = region_bytes(info)
    shared = log._view.segments[0].shared_file
    path = tmp_path / "t-0" / f"{0:020d}.log"
    assert log.apply_retention(now_ms=0) > 0
    assert not path.exists()
    assert not shared.closed
    assert region_bytes(info) == expected  # still readable through the open descriptor
    fd = info.regions[0].file.fileno()
    os.fstat(fd)
    info.release()
    assert shared.closed
    with pytest.raises(ValueError):
        info.regions[0].file.fileno()  # a released handle refuses to hand out its fd
    log.close()
