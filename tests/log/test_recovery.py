"""Loading after clean and unclean shutdowns: what is scanned, what is cut, what is rebuilt.

A crash is simulated by copying the partition folder while the log is still open (what
the page cache holds is what a crashed broker leaves when the OS survives), then damaging
the copy.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from trio_broker.records import batch_crc, iter_batches

from .helpers import fill, open_log, read_headers, records

CFG = {"segment_bytes": 2_000, "index_interval_bytes": 150}


def _segment_files(directory: Path, suffix: str = ".log") -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(suffix))


def _crash_copy(log, dest: Path) -> Path:
    shutil.copytree(log.directory, dest)
    return dest


def _build(tmp_path: Path, batches: int = 60, **extra):
    log = open_log(tmp_path / "t-0", **CFG, **extra)
    fill(log, batches, per_batch=3, value=b"q" * 40)
    return log


def _contiguous(log) -> None:
    headers = read_headers(log)
    offsets = [h.base_offset for h in headers]
    assert offsets == list(range(log.log_start_offset, log.log_end_offset, 3))
    for h, raw in iter_batches(_all_bytes(log)):
        assert batch_crc(raw) == h.crc


def _all_bytes(log) -> bytes:
    from .helpers import region_bytes

    info = log.read(log.log_start_offset, 1 << 30)
    try:
        return region_bytes(info)
    finally:
        info.release()


def test_clean_reopen_skips_the_scan_and_keeps_everything(tmp_path) -> None:
    log = _build(tmp_path)
    before = read_headers(log)
    index_bytes = {p.name: p.read_bytes() for p in _segment_files(log.directory, ".index")}
    log.close()
    again = open_log(tmp_path / "t-0", recover=False, **CFG)
    stats = again.load_stats
    assert stats.segments == len(index_bytes) > 3
    assert (stats.segments_scanned, stats.batches_scanned, stats.indexes_rebuilt) == (0, 0, 0)
    assert read_headers(again) == before
    assert again.log_end_offset == 180 and again.recovery_point == 180
    assert again.append(records(1), leader_epoch=0, now_ms=0).first_offset == 180
    again.close()
    # recovering after a clean close only scans from the recovery point: the active segment
    third = open_log(tmp_path / "t-0", recover=True, **CFG)
    assert third.load_stats.segments_scanned == 1
    assert third.log_end_offset == 181
    third.close()


def test_unflushed_log_is_scanned_from_its_recovery_point(tmp_path) -> None:
    log = _build(tmp_path, 30)
    log.flush()
    log.checkpoint()
    flushed_segments = len(log.segment_base_offsets)
    fill(log, 30, per_batch=3, value=b"q" * 40)
    crashed = _crash_copy(log, tmp_path / "crash-0")
    log.close()
    again = open_log(crashed, recover=True, **CFG)
    # only the segment holding the recovery point and those after it were scanned
    assert (
        again.load_stats.segments_scanned == len(again.segment_base_offsets) - flushed_segments + 1
    )
    assert again.log_end_offset == 180 and again.load_stats.bytes_truncated == 0
    _contiguous(again)
    again.close()


@pytest.mark.parametrize("damage", ["torn", "garbage", "crc", "bad_length"])
def test_recovery_cuts_exactly_the_bad_tail(tmp_path, damage: str) -> None:
    log = _build(tmp_path)
    last = read_headers(log)[-1]
    crashed = _crash_copy(log, tmp_path / "crash-0")
    log.close()
    active = _segment_files(crashed)[-1]
    size = active.stat().st_size
    expected_end = 180
    if damage == "torn":
        os.truncate(active, size - last.size // 2)
        expected_end, cut = last.base_offset, last.size - last.size // 2
    elif damage == "garbage":
        with open(active, "ab") as f:
            f.write(os.urandom(100))
        cut = 100
    elif damage == "crc":
        with open(active, "r+b") as f:
            f.seek(size - 5)
            byte = f.read(1)
            f.seek(size - 5)
            f.write(bytes([byte[0] ^ 0x40]))
        expected_end, cut = last.base_offset, last.size
    else:  # a length field pointing far past the end of the file
        with open(active, "r+b") as f:
            f.seek(size - last.size + 8)
            f.write((10_000).to_bytes(4, "big"))
        expected_end, cut = last.base_offset, last.size
    again = open_log(crashed, recover=True, **CFG)
    assert again.load_stats.bytes_truncated == cut
    assert again.log_end_offset == expected_end
    assert active.stat().st_size == (size if damage == "garbage" else size - last.size)
    _contiguous(again)
    info = again.append(records(2), leader_epoch=1, now_ms=0)
    assert info.first_offset == expected_end
    again.close()
    # the cut is durable and the indexes agree with the shorter file
    final = open_log(crashed, recover=True, **CFG)
    assert final.load_stats.bytes_truncated == 0
    assert final.log_end_offset == expected_end + 2
    final.close()


def test_corruption_in_an_older_segment_drops_everything_after_it(tmp_path) -> None:
    log = _build(tmp_path)
    crashed = _crash_copy(log, tmp_path / "crash-0")
    log.close()
    files = _segment_files(crashed)
    victim = files[2]
    with open(victim, "r+b") as f:
        f.seek(70)  # inside the first batch's records
        b = f.read(1)
        f.seek(70)
        f.write(bytes([b[0] ^ 1]))
    again = open_log(crashed, recover=True, **CFG)
    base = int(victim.name[:20])
    assert again.log_end_offset == base
    assert again.segment_base_offsets[-1] == base
    assert [p.name for p in _segment_files(crashed)] == [p.name for p in files[:3]]
    assert again.load_stats.segments_deleted == len(files) - 3
    _contiguous(again)
    again.close()


def test_torn_tail_after_a_clean_marker_is_still_caught(tmp_path) -> None:
    log = _build(tmp_path)
    last = read_headers(log)[-1]
    log.close()
    active = _segment_files(tmp_path / "t-0")[-1]
    os.truncate(active, active.stat().st_size - 10)
    again = open_log(tmp_path / "t-0", recover=False, **CFG)
    assert again.log_end_offset == last.base_offset
    assert again.load_stats.segments_scanned == 1
    _contiguous(again)
    again.close()


def test_missing_and_corrupt_indexes_are_rebuilt_identically(tmp_path) -> None:
    log = _build(tmp_path)
    d = log.directory
    log.roll(now_ms=0)
    originals = {
        p.name: p.read_bytes()
        for p in [*_segment_files(d, ".index"), *_segment_files(d, ".timeindex")]
    }
    before = read_headers(log)
    log.close()
    indexes = _segment_files(d, ".index")
    times = _segment_files(d, ".timeindex")
    assert len(originals[indexes[1].name]) >= 16
    indexes[0].unlink()  # missing
    indexes[1].write_bytes(originals[indexes[1].name][:-3])  # torn
    with open(indexes[2], "r+b") as f:  # entries out of order
        f.write(b"\x7f\x00\x00\x00")
    times[1].write_bytes(b"\x00" * 11)  # not a whole entry
    again = open_log(d, recover=False, **CFG)
    assert again.load_stats.indexes_rebuilt == 3
    rebuilt = {
        p.name: p.read_bytes()
        for p in [*_segment_files(d, ".index"), *_segment_files(d, ".timeindex")]
    }
    assert rebuilt == originals
    assert read_headers(again) == before
    for offset in range(0, 180, 7):
        assert read_headers(again, offset, 1)[0].base_offset == offset - offset % 3
    again.close()


def test_leftover_files_are_removed(tmp_path) -> None:
    log = _build(tmp_path, 5)
    log.close()
    d = tmp_path / "t-0"
    (d / "00000000000000000999.index").write_bytes(b"")  # index without a log
    (d / "partition.checkpoint.tmp").write_bytes(b"junk")
    (d / "00000000000000000000.log.deleted").write_bytes(b"junk")
    again = open_log(d, **CFG)
    names = set(os.listdir(d))
    assert (
        not {
            "00000000000000000999.index",
            "partition.checkpoint.tmp",
            "00000000000000000000.log.deleted",
        }
        & names
    )
    assert again.log_end_offset == 15
    again.close()


def test_checkpoint_file_holds_recovery_point_and_log_start(tmp_path) -> None:
    from trio_broker.log.checkpoint import read_checkpoint

    log = _build(tmp_path, 10)
    log.delete_records_before(4)
    log.close()
    cp = read_checkpoint(tmp_path / "t-0")
    assert cp is not None and (cp.recovery_point, cp.log_start_offset) == (30, 4)
