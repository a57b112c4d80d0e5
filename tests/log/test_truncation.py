"""A replica's truncation: ``truncate_to`` (what diverged from the leader goes, whole
batches) and ``truncate_fully_and_start_at``; what follows them (leader epochs, producer
state, appends) and what a restart, or a crash in the middle, loads."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from trio_broker.log import OffsetOutOfRange, PartitionLog
from trio_broker.log.cleaner.compaction import read_first_dirty, write_first_dirty
from trio_broker.log.index.leader_epochs import EPOCH_FILE, UNDEFINED, LeaderEpochCache
from trio_broker.log.log_view import read_batches
from trio_broker.log.producer_state import ProducerStateError, ProducerStateManager
from trio_broker.log.segment import LogSegment
from trio_broker.records import Record, build_batch, iter_batches, validate_batches

from .helpers import open_log, read_headers, records, region_bytes

SMALL = {"segment_bytes": 250}  # two or three batches of three records per segment


def three_epochs(directory: Path, batches: int = 12, **config: object) -> PartitionLog:
    """``batches`` batches of 3 records; epoch 0, then 2 from offset 9, 4 from 18."""
    log = open_log(directory, **config)
    for i in range(batches):
        log.append(records(3), leader_epoch=0 if i < 3 else 2 if i < 6 else 4, now_ms=0)
    return log


def contents(log: PartitionLog) -> list[tuple[int, int, int]]:
    """(base offset, last offset, leader epoch) of every batch."""
    return [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in read_headers(log)]


def state(log: PartitionLog) -> tuple[object, ...]:
    epochs = tuple(log.end_offset_for_epoch(e) for e in range(-1, 7))
    return (log.log_start_offset, log.log_end_offset, contents(log), epochs, log.producer_count)


@pytest.mark.parametrize(
    ("offset", "end"),
    [(10, 9), (9, 9), (11, 9), (12, 12), (1, 0), (0, 0)],
    ids=["mid-batch", "at-a-boundary", "last-of-a-batch", "next-boundary", "first", "zero"],
)
def test_truncate_to_removes_every_batch_reaching_the_offset(tmp_path, offset, end) -> None:
    log = three_epochs(tmp_path / "t-0")
    before = contents(log)
    assert log.truncate_to(offset)
    assert log.log_end_offset == end <= offset
    assert contents(log) == [b for b in before if b[1] < offset]
    assert log.append(records(2), leader_epoch=6, now_ms=0).first_offset == end
    assert log.log_end_offset == end + 2
    log.close()


def test_truncating_at_or_past_the_log_end_does_nothing(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", batches=2)
    assert not log.truncate_to(6) and not log.truncate_to(100)
    assert log.log_end_offset == 6 and len(contents(log)) == 2
    log.close()


def test_truncating_at_the_log_end_drops_an_epoch_begun_there_with_nothing_appended(
    tmp_path,
) -> None:
    """A replica led epoch 5 for a moment (its epoch begins at its log end) and appended
    nothing before another leader was elected; the new leader, whose history has no epoch
    5, says the logs diverge at epoch 4's end, which is this log's end. No record goes, but
    epoch 5 must (as Kafka's truncateTo does), in memory and on disk: kept, it is the
    follower's last fetched epoch in every fetch, and the leader answers the same divergence
    for ever (seen in the nemesis pause-leader long run: 17,000 truncations a minute)."""
    log = three_epochs(tmp_path / "t-0", batches=7)
    log.assign_epoch(5)
    assert log.latest_epoch == 5
    assert not log.truncate_to(log.log_end_offset)
    assert log.latest_epoch == 4 and log.log_end_offset == 21
    log.close()
    assert LeaderEpochCache.load(tmp_path / "t-0", [], 0, 21).entries[-1] == (4, 18)


def test_truncating_across_segments_deletes_those_above(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    bases = log.segment_base_offsets
    assert len(bases) >= 4
    cut = bases[1] + 4  # inside the second segment
    assert log.truncate_to(cut)
    assert log.segment_base_offsets == bases[:2]
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert names == [f"{b:020d}.log" for b in bases[:2]]
    assert log.log_end_offset == cut - cut % 3
    # The truncated segment is the active one again: appends go on in it, then roll.
    for _ in range(4):
        log.append(records(3), leader_epoch=5, now_ms=0)
    assert log.segment_base_offsets[:2] == bases[:2] and len(log.segment_base_offsets) > 2
    expected = state(log)
    log.close()
    for recover in (False, True):
        reopened = open_log(tmp_path / "t-0", recover=recover, **SMALL)
        assert state(reopened) == expected
        reopened.close()


def test_truncating_a_whole_segment_leaves_it_empty_and_active(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    bases = log.segment_base_offsets
    assert log.truncate_to(bases[2])
    assert log.segment_base_offsets == bases[:3] and log.log_end_offset == bases[2]
    log.close()
    reopened = open_log(tmp_path / "t-0", recover=True, **SMALL)
    assert reopened.segment_base_offsets == bases[:3] and reopened.log_end_offset == bases[2]
    reopened.close()


def test_the_epoch_cache_is_cut_with_the_log(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    log.truncate_to(10)  # epoch 2 began at 9: it keeps offsets 9-... none: the end is 9
    assert log.log_end_offset == 9 and log.latest_epoch == 0
    assert log.end_offset_for_epoch(0) == (0, 9)
    assert log.end_offset_for_epoch(2) == UNDEFINED
    assert (tmp_path / "t-0" / EPOCH_FILE).read_text() == "0\n1\n0 0\n"
    log.append(records(3), leader_epoch=7, now_ms=0)
    assert log.end_offset_for_epoch(0) == (0, 9) and log.end_offset_for_epoch(7) == (7, 12)
    expected = state(log)
    log.close()
    reopened = open_log(tmp_path / "t-0", recover=True, **SMALL)
    assert state(reopened) == expected
    reopened.close()


PID = 7


def producer_batch(seq: int) -> bytes:
    return build_batch(
        [Record(None, b"s%d" % seq)],
        producer_id=PID,
        producer_epoch=0,
        base_sequence=seq,
        timestamp_ms=1_000,
    )


def produce(log: PartitionLog, seq: int):  # type: ignore[no-untyped-def]
    data = validate_batches(memoryview(producer_batch(seq)), max_batch_bytes=1 << 20)
    return log.append(data, leader_epoch=0, now_ms=1_000)


def test_producer_state_is_what_the_truncated_log_implies(tmp_path) -> None:
    log = open_log(tmp_path / "t-0", segment_bytes=200)  # rolls: snapshots on the way
    for seq in range(12):
        produce(log, seq)
    snapshots = ProducerStateManager(tmp_path / "t-0").snapshot_offsets()
    assert snapshots and max(snapshots) > 6
    assert log.truncate_to(6)  # sequences 0-5 stay
    assert all(s <= 6 for s in ProducerStateManager(tmp_path / "t-0").snapshot_offsets())
    retry = produce(log, 5)  # the last batch kept: a duplicate
    assert retry.duplicate and retry.first_offset == 5
    with pytest.raises(ProducerStateError):
        produce(log, 8)  # as if 6 and 7 were never written: out of order now
    again = produce(log, 6)  # the producer's retry of what was cut is accepted
    assert not again.duplicate and again.first_offset == 6
    log.close()
    reopened = open_log(tmp_path / "t-0", recover=True, segment_bytes=200)
    assert produce(reopened, 6).duplicate
    reopened.close()


def test_truncate_fully_and_start_at_then_append(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    for seq in range(3):
        produce(log, seq)
    write_first_dirty(tmp_path / "t-0", 20)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    assert (log.recovery_point, log.high_watermark) == (100, 100)
    assert log.segment_base_offsets == (100,) and contents(log) == []
    assert log.latest_epoch == -1 and log.producer_count == 0
    assert not (tmp_path / "t-0" / EPOCH_FILE).exists()
    assert ProducerStateManager(tmp_path / "t-0").snapshot_offsets() == []
    assert read_first_dirty(tmp_path / "t-0") == 20  # below the new start: harmless
    assert log.append(records(3), leader_epoch=9, now_ms=0).first_offset == 100
    assert not produce(log, 3).duplicate  # a producer forgotten: any sequence goes
    expected = state(log)
    log.close()
    for recover in (False, True):
        reopened = open_log(tmp_path / "t-0", recover=recover, **SMALL)
        assert state(reopened) == expected
        assert reopened.end_offset_for_epoch(9) == (9, 104)
        reopened.close()


def test_truncating_below_the_log_start_starts_afresh_there(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    log.delete_records_before(13)  # the log start inside batch 12-14
    assert log.truncate_to(14)  # that batch also holds the log start: nothing stays
    assert (log.log_start_offset, log.log_end_offset) == (13, 13)
    log.delete_records_before(13)
    assert log.truncate_to(5)
    assert (log.log_start_offset, log.log_end_offset, log.segment_base_offsets) == (5, 5, (5,))
    log.close()
    reopened = open_log(tmp_path / "t-0", recover=True, **SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (5, 5)
    reopened.close()


def test_the_cleaners_checkpoint_is_clamped(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0", **SMALL)
    write_first_dirty(tmp_path / "t-0", 30)
    log.truncate_to(20)
    assert read_first_dirty(tmp_path / "t-0") == 18
    log.close()


def test_a_read_on_a_view_from_before_the_cut_ends_cleanly(tmp_path) -> None:
    log = three_epochs(tmp_path / "t-0")  # one segment
    old_view = log.view
    log.truncate_to(10)
    regions: list = []
    next_offset = read_batches(old_view, 3, 1 << 20, True, old_view.log_end_offset, regions)
    try:
        end = regions[-1].offset + regions[-1].length  # reads what is left, no more
        assert end == os.path.getsize(tmp_path / "t-0" / f"{0:020d}.log")
        assert next_offset <= 9
    finally:
        for r in regions:
            r.release()
    info = log.read(3, 1 << 20)
    assert info.log_end_offset == 9
    info.release()
    log.close()


class Crash(Exception):
    """The process dies here: the folder is copied as it is and the call aborted."""


# (where the crash happens, the function that is replaced by the crash)
CRASH_POINTS = [
    ("before deleting segments", LogSegment, "delete"),
    ("before the cut", LogSegment, "truncate"),
    ("before the epoch cache is cut", LeaderEpochCache, "truncate_from_end"),
    ("before producer state is rebuilt", ProducerStateManager, "load_latest"),
]


@pytest.mark.parametrize(
    ("cls", "name"), [p[1:] for p in CRASH_POINTS], ids=[p[0] for p in CRASH_POINTS]
)
def test_a_crash_during_truncation_leaves_a_log_that_loads(tmp_path, monkeypatch, cls, name):  # type: ignore[no-untyped-def]
    log = three_epochs(tmp_path / "t-0", **SMALL)
    for seq in range(4):
        produce(log, seq)  # offsets 36-39
    log.flush()
    original = contents(log)
    directory, copy = tmp_path / "t-0", tmp_path / "crashed" / "t-0"

    def crash(*args: object, **kwargs: object) -> None:
        shutil.copytree(directory, copy)
        raise Crash

    monkeypatch.setattr(cls, name, crash)
    with pytest.raises(Crash):
        log.truncate_to(22)
    monkeypatch.undo()
    crashed = open_log(copy, recover=True, **SMALL)
    loaded = contents(crashed)
    assert loaded == original[: len(loaded)] and crashed.log_end_offset >= 21
    assert crashed.high_watermark <= crashed.log_end_offset
    for epoch in range(-1, 7):  # the epoch cache agrees with the batches loaded
        expected = _end_offset_from(loaded, epoch, crashed.log_end_offset)
        assert crashed.end_offset_for_epoch(epoch) == expected, epoch
    crashed.truncate_to(22)  # the follower truncates again: the same log as without crash
    fresh = three_epochs(tmp_path / "fresh", 7, **SMALL)
    assert contents(crashed) == contents(fresh)
    assert [crashed.end_offset_for_epoch(e) for e in range(7)] == [
        fresh.end_offset_for_epoch(e) for e in range(7)
    ]
    crashed.close()
    fresh.close()


def _end_offset_from(batches: list[tuple[int, int, int]], epoch: int, end: int) -> tuple[int, int]:
    cache = LeaderEpochCache(Path("."))
    for base, _, batch_epoch in batches:
        cache._add(batch_epoch, base)
    return cache.end_offset_for(epoch, end)


def test_readers_racing_with_truncation_end_cleanly(tmp_path) -> None:
    """Reads in threads while the log is cut and refilled: no error, and what a read
    returns parses as whole batches up to where the file then ended."""
    log = open_log(tmp_path / "t-0", segment_bytes=600, index_interval_bytes=100)
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def reader() -> None:
        try:
            while not stop.is_set():
                start = max(0, log.log_end_offset - 20)  # where followers and consumers read
                try:
                    info = log.read(start, 4096)
                except OffsetOutOfRange:
                    continue  # the log was cut below ``start`` meanwhile
                try:
                    data = region_bytes(info)
                finally:
                    info.release()
                offsets = [h.base_offset for h, _ in iter_batches(data)]
                assert offsets == sorted(offsets)
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(60):
            if stop.is_set():
                break
            for _ in range(4):
                log.append(records(3), leader_epoch=i, now_ms=0)
            log.truncate_to(max(0, log.log_end_offset - 3 - 3 * (i % 5)))
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert reads[0] > 10
    log.close()
