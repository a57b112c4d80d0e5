"""The LRU of open segment files (``log.open.files.max``) on real logs and real descriptors.

Every count of descriptors here is read from /proc/self/fd (the segment files under the
test's own directory), not from the LRU's own bookkeeping alone.
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from trio_broker.log import LogConfig, LogManager, PartitionLog
from trio_broker.log.cleaner.compaction import clean
from trio_broker.log.descriptors import (
    DescriptorLimitError,
    FileBudget,
    bound_fits,
    check_start,
)
from trio_broker.log.open_files import OpenFiles
from trio_broker.records import iter_batches, iter_records

from ..support.files import segment_fds
from .helpers import records, region_bytes
from .test_cleaner import contents, put


def _values(log: PartitionLog) -> list[bytes]:
    """Every record value of the log, read through regions."""
    info = log.read(log.log_start_offset, 1 << 30)
    try:
        data = region_bytes(info)
    finally:
        info.release()
    return [r.value or b"" for _, b in iter_batches(data) for r in iter_records(b)]


def _append(log: PartitionLog, value: bytes) -> None:
    log.append(records(1, value=value), leader_epoch=0, now_ms=0)


def _expected(tag: str, p: int, n: int) -> list[bytes]:
    return [b"%s-%d-%d0" % (tag.encode(), p, i) for i in range(n)]


def test_fifty_partitions_append_and_read_within_thirty_files(tmp_path: Path) -> None:
    """50 partitions of 2-3 segments each under a bound of 30 files (10 segments): after
    every append and read the process holds at most 30 segment files, and every record
    reads back, before and after a clean restart."""
    config = LogConfig(segment_bytes=400)
    mgr = LogManager([tmp_path / "d"], config, now_ms=0, max_files=30)
    logs = [mgr.create("t", p, now_ms=0) for p in range(50)]
    peak = 0
    rounds = 6
    for i in range(rounds):
        for p, log in enumerate(logs):
            _append(log, b"a-%d-%d" % (p, i))
            peak = max(peak, segment_fds(tmp_path))
    assert all(len(log.segment_base_offsets) >= 2 for log in logs)  # rolled by size
    for p, log in enumerate(logs):
        assert _values(log) == _expected("a", p, rounds)
        peak = max(peak, segment_fds(tmp_path))
    assert peak <= 30 and mgr.open_files() <= 30
    assert mgr.open_files() == segment_fds(tmp_path)
    assert mgr.files.evictions > 100 and mgr.files.reopens > 100
    mgr.close()
    assert segment_fds(tmp_path) == 0

    again = LogManager([tmp_path / "d"], config, now_ms=0, max_files=30)
    assert segment_fds(tmp_path) <= 30  # loading 150 segments kept within the bound too
    for p in range(50):
        log = again.get("t", p)
        assert log is not None and _values(log) == _expected("a", p, rounds)
        assert segment_fds(tmp_path) <= 30
    again.close()


def test_a_region_in_flight_keeps_its_file_when_the_lru_closes_the_segment(
    tmp_path: Path,
) -> None:
    """The LRU drops only the segment's own reference: a region read before the segment
    was closed still reads its bytes (a descriptor closed under it would fail with EBADF
    or, reused by the next open, read another file)."""
    files = OpenFiles(3)  # one segment at a time
    a = PartitionLog.open(tmp_path / "a-0", LogConfig(), recover=False, now_ms=0, files=files)
    b = PartitionLog.open(tmp_path / "b-0", LogConfig(), recover=False, now_ms=0, files=files)
    for i in range(5):
        _append(a, b"x" * 500 + b"-%d" % i)
    info = a.read(0, 1 << 20)
    _append(b, b"y" * 500)  # b's segment opens: a's is closed
    assert a.open_files == 0 and files.held == 3
    data = region_bytes(info)
    assert [r.value for _, batch in iter_batches(data) for r in iter_records(batch)] == [
        b"x" * 500 + b"-%d0" % i for i in range(5)
    ]
    assert segment_fds(tmp_path) == 4  # b's three and a's log file, held by the region
    info.release()
    assert segment_fds(tmp_path) == 3
    a.close()
    b.close()


def test_unflushed_appends_of_a_closed_segment_are_fsynced_when_the_log_flushes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment the LRU closed with appends not yet fsynced is opened again by the flush
    and its file, not another, is fsynced."""
    files = OpenFiles(3)
    a = PartitionLog.open(tmp_path / "a-0", LogConfig(), recover=False, now_ms=0, files=files)
    b = PartitionLog.open(tmp_path / "b-0", LogConfig(), recover=False, now_ms=0, files=files)
    _append(a, b"unflushed")
    _append(b, b"other")  # a's segment is closed
    assert a.open_files == 0 and a.recovery_point == 0
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    a.flush()
    log_file = a.directory / f"{0:020d}.log"
    assert log_file.stat().st_ino in synced
    assert a.recovery_point == 1 and files.reopens >= 1
    a.close()
    b.close()


def test_a_crash_with_closed_segments_recovers_every_record(tmp_path: Path) -> None:
    """Logs abandoned without a close (a crash: the page cache keeps what was written)
    while most of their segments were closed by the LRU load back whole by recovery."""
    config = LogConfig(segment_bytes=300)
    files = OpenFiles(6)
    logs = [
        PartitionLog.open(tmp_path / f"t-{p}", config, recover=False, now_ms=0, files=files)
        for p in range(10)
    ]
    for i in range(8):
        for p, log in enumerate(logs):
            _append(log, b"c-%d-%d" % (p, i))
    assert files.evictions > 0
    for log in logs:  # what a kill -9 leaves: no flush, no checkpoint; descriptors freed
        for segment in log.view.segments:
            segment.evict()
    loaded = OpenFiles(6)
    for p in range(10):
        log = PartitionLog.open(tmp_path / f"t-{p}", config, recover=True, now_ms=0, files=loaded)
        assert log.load_stats.segments_scanned >= 1
        assert _values(log) == _expected("c", p, 8)
        log.close()


def test_the_cleaner_swap_truncation_and_retention_with_closed_segments(tmp_path: Path) -> None:
    """The cleaner's copy replaces segments the LRU had closed (they are never reopened
    under a name the copy now has), and truncation and retention delete closed ones."""
    files = OpenFiles(3)
    log = PartitionLog.open(
        tmp_path / "c-0",
        LogConfig(cleanup_policy=("compact",)),
        recover=False,
        now_ms=0,
        files=files,
    )
    other = PartitionLog.open(tmp_path / "o-0", LogConfig(), recover=False, now_ms=0, files=files)
    for round_ in range(4):
        put(log, [(b"a", b"a%d" % round_), (b"b", b"b%d" % round_)])
        log.roll(1_000)
        _append(other, b"o")  # closes the compacted log's segments
    put(log, [(b"a", b"active")])
    _append(other, b"o")
    result = clean(log, 5_000, 1_000)
    assert result is not None and result.segments == 4
    assert contents(log) == [(6, b"a", b"a3"), (7, b"b", b"b3"), (8, b"a", b"active")]
    _append(other, b"o")
    assert log.truncate_to(8)
    assert contents(log) == [(6, b"a", b"a3"), (7, b"b", b"b3")]
    log.close()
    other.close()
    assert segment_fds(tmp_path) == 0

    files = OpenFiles(3)
    config = LogConfig(segment_bytes=200, retention_bytes=250)
    kept = PartitionLog.open(tmp_path / "r-0", config, recover=False, now_ms=0, files=files)
    for i in range(20):
        _append(kept, b"r" * 40 + b"%d" % i)
    assert len(kept.segment_base_offsets) > 4
    assert kept.apply_retention(0) > 0  # closed segments deleted: files and all
    assert len(list((tmp_path / "r-0").glob("*.log"))) == len(kept.segment_base_offsets)
    assert _values(kept)[-1] == b"r" * 40 + b"190"
    kept.close()
    assert segment_fds(tmp_path) == 0


def test_io_threads_share_the_lru(tmp_path: Path) -> None:
    """Four threads appending to and reading 20 logs under a bound of 9 files: nothing
    fails, nothing is lost, and the open segment files never pass the bound plus three a
    thread (a segment in use is never closed under it)."""
    mgr = LogManager([tmp_path / "d"], LogConfig(segment_bytes=600), now_ms=0, max_files=9)
    logs = [mgr.create("t", p, now_ms=0) for p in range(20)]
    errors: list[BaseException] = []
    written: dict[int, list[bytes]] = {p: [] for p in range(20)}
    locks = [threading.Lock() for _ in range(20)]
    peak = [0]

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(150):
                p = rng.randrange(20)
                if rng.random() < 0.5:
                    with locks[p]:  # the order of a log's values is its appends' order
                        value = b"w-%d-%d" % (seed, i)
                        _append(logs[p], value)
                        written[p].append(value + b"0")
                else:
                    values = _values(logs[p])
                    assert len(values) >= 0
                peak[0] = max(peak[0], mgr.open_files())
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[0]
    assert peak[0] <= 9 + 3 * 4
    assert mgr.open_files() <= 9 and segment_fds(tmp_path) <= 9
    for p, log in enumerate(logs):
        assert _values(log) == written[p]
    mgr.close()


def test_a_lower_bound_applies_at_once(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path / "d"], LogConfig(), now_ms=0)
    logs = [mgr.create("t", p, now_ms=0) for p in range(10)]
    for log in logs:
        _append(log, b"v")
    assert mgr.open_files() == 30 == segment_fds(tmp_path)
    mgr.set_open_files_max(9)
    assert mgr.open_files() == 9 == segment_fds(tmp_path)
    assert mgr.file_budget().bound == 9
    mgr.set_open_files_max(-1)
    assert mgr.files.max_files is None
    assert [_values(log) for log in logs] == [[b"v0"]] * 10
    # the seven closed segments were reopened by reads: their log files only
    assert mgr.open_files() == 9 + 7 == segment_fds(tmp_path)
    for log in logs:
        _append(log, b"w")
    assert mgr.open_files() == 30 == segment_fds(tmp_path)
    mgr.close()


def test_a_read_of_a_closed_segment_reopens_its_log_file_only(tmp_path: Path) -> None:
    """A fetch of a segment the bound closed needs its log file alone (the offset index's
    entries are in memory): its two index files stay closed until a write needs them; a
    read that can return nothing (no bytes left) opens nothing."""
    files = OpenFiles(4)
    a = PartitionLog.open(tmp_path / "a-0", LogConfig(), recover=False, now_ms=0, files=files)
    b = PartitionLog.open(tmp_path / "b-0", LogConfig(), recover=False, now_ms=0, files=files)
    for i in range(3):
        _append(a, b"a-%d" % i)
    _append(b, b"b")  # b's three files open: a's are closed
    assert segment_fds(tmp_path / "a-0") == 0 and segment_fds(tmp_path / "b-0") == 3
    reopens = files.reopens
    empty = a.read(0, 0, min_one_batch=False)  # a fetch response already full: no read
    assert empty.regions == [] and empty.next_fetch_offset == 0
    assert segment_fds(tmp_path / "a-0") == 0 and files.reopens == reopens  # not opened
    assert _values(a) == [b"a-00", b"a-10", b"a-20"]
    info = a.read(1, 1 << 20)  # a position looked up in the offset index
    assert info.size_bytes > 0 and info.next_fetch_offset == 3
    info.release()
    assert segment_fds(tmp_path / "a-0") == 1 == a.open_files  # its .log, no index
    assert segment_fds(tmp_path / "b-0") == 3 and files.held == 4
    assert files.reopens == reopens + 1
    _append(a, b"a-3")  # a write: a's indexes too; b is closed to stay within 4
    assert segment_fds(tmp_path / "a-0") == 3 and segment_fds(tmp_path / "b-0") == 0
    assert files.held == 3 and _values(a)[-1] == b"a-30"
    a.close()
    b.close()


def test_the_fd_checks_count_the_bound_not_three_a_segment(tmp_path: Path) -> None:
    """Creation and start-up compare what the logs will hold under the bound with the
    limit: a bound within the limit never refuses; without one, three a segment count."""
    assert FileBudget(limit=400, held=30).refusal(81) is not None
    assert FileBudget(limit=400, held=30, bound=60).refusal(10_000) is None
    message = FileBudget(limit=400, held=30, bound=1_000).refusal(81)
    assert message is not None and "log.open.files.max is 1000" in message
    with pytest.raises(DescriptorLimitError):
        check_start(1_000, 1_000, limit=2_000)
    check_start(1_000, 1_000, limit=2_000, bound=1_800)
    assert bound_fits(1_800, limit=2_000) and not bound_fits(1_900, limit=2_000)
    assert not bound_fits(None, limit=2_000)
    with pytest.raises(DescriptorLimitError, match=r"log.open.files.max=1900 keeps 1900"):
        check_start(1_000, 1_000, limit=2_000, bound=1_900)


def test_a_segment_the_cleaner_replaces_is_never_reopened_under_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap renames the cleaned copy over the first replaced segment's name. A reader
    holding the old view that asks for that segment then must get nothing (and retry on
    the new view), never the copy's file read with the old segment's sizes and index:
    the replaced segments are closed for good before the first rename."""
    from trio_broker.log import swap

    files = OpenFiles(3)
    config = LogConfig(cleanup_policy=("compact",))
    log = PartitionLog.open(tmp_path / "c-0", config, recover=False, now_ms=0, files=files)
    other = PartitionLog.open(tmp_path / "o-0", LogConfig(), recover=False, now_ms=0, files=files)
    for round_ in range(3):
        put(log, [(b"a", b"a%d" % round_), (b"b", b"b%d" % round_)])
        log.roll(1_000)
    old = log.view.segments[0]
    handed_out = []
    real_rename = swap._rename

    def rename_then_read_the_old_view(source: Path, target: Path) -> None:
        real_rename(source, target)
        if target.name == f"{0:020d}.log":  # the copy now has the old segment's name
            _append(other, b"o")  # the LRU closes whatever the log had open
            handed_out.append(old.acquire())

    monkeypatch.setattr(swap, "_rename", rename_then_read_the_old_view)
    assert clean(log, 5_000, 1_000) is not None
    assert handed_out == [None]
    assert contents(log) == [(4, b"a", b"a2"), (5, b"b", b"b2")]
    log.close()
    other.close()
