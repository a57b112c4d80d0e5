"""The cleaner groups segments (Kafka's groupSegmentsBySize): many small segments become
few, none is left empty, what a compacted log promises survives, and a crash at any step
of a group's swap leaves a loadable log with nothing lost."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

from trio_broker.log import PartitionLog
from trio_broker.log import swap as swap_protocol
from trio_broker.log.cleaner.compaction import _build_map, _SegmentCleaner, clean, dirty_state
from trio_broker.log.cleaner.groups import CleanedGroup, segment_batches
from trio_broker.log.index.transactions import read_entries, txn_index_path
from trio_broker.records.control import EndTxnMarker, marker_batch
from trio_broker.records.validation import validate_batches

from .helpers import records
from .test_cleaner import SLOTS, compacted_log, contents, headers, put

Rows = list[tuple[int, bytes | None, bytes | None]]


def latest(rows: Rows) -> Rows:
    """Each key's last record: what compaction must keep, at its offset."""
    last: dict[bytes | None, tuple[int, bytes | None, bytes | None]] = {}
    for row in rows:
        last[row[1]] = row
    return sorted(last.values())


def sealed_files(log: PartitionLog) -> list[Path]:
    return sorted(log.directory.glob("*.log"))[:-1]


def updates(log: PartitionLog, keys: int, rounds: int, ts: int = 1_000) -> None:
    for r in range(rounds):
        for k in range(keys):
            put(log, [(b"key-%02d" % k, b"value-%02d-%04d" % (k, r))], ts=ts)


def test_passes_over_many_small_segments_leave_few_and_no_empty_one(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", segment_bytes=2_000, index_interval_bytes=200)
    for round_ in range(5):
        updates(log, keys=10, rounds=40)  # 400 records, 15 segments or more
        log.roll(1_000)
        before = contents(log)
        sealed_before = len(log.segment_base_offsets) - 1
        result = clean(log, 5_000, SLOTS)
        assert result is not None and result.segments == sealed_before
        after = contents(log)
        # Every key's latest value stays at its offset; nothing else appears.
        assert latest(before) == latest(after) and set(after) <= set(before)
        assert log.log_end_offset == before[-1][0] + 1
        # 15 or more segments became one (the ten latest values fit in 2,000 bytes).
        assert sealed_before >= 15 and len(log.segment_base_offsets) == 2, round_
        files = sealed_files(log)
        assert len(files) == 1 and all(p.stat().st_size > 0 for p in files)
        assert files[0].stat().st_size <= 2_000
    expected = contents(log)
    log.close()
    for recover in (True, False):
        again = compacted_log(tmp_path / "t-0", recover=recover)
        assert contents(again) == expected
        assert again.load_stats.bytes_truncated == 0
        again.close()


def test_segments_whose_cleaned_total_does_not_fit_stay_apart(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", segment_bytes=1_000)
    for k in range(60):  # distinct keys: nothing to remove
        put(log, [(b"unique-%03d" % k, b"x" * 40)])
    log.roll(1_000)
    bases = log.segment_base_offsets
    before = contents(log)
    result = clean(log, 5_000, SLOTS)
    assert result is not None and result.records_removed == 0
    assert contents(log) == before
    # Two full segments never make one: the segment files stay as they were.
    assert log.segment_base_offsets == bases
    assert all(p.stat().st_size <= 1_000 for p in sealed_files(log))
    log.close()


def test_a_group_respects_the_index_size(tmp_path) -> None:
    # An index entry per batch, room for three offset entries (two time entries).
    log = compacted_log(
        tmp_path / "t-0", segment_bytes=400, index_interval_bytes=0, segment_index_bytes=24
    )
    for k in range(40):
        put(log, [(b"k%02d" % k, b"v")], ts=1_000 + k)
    log.roll(1_000)
    clean(log, 5_000, SLOTS)
    for seg in log.view.segments[:-1]:
        assert len(seg.offset_index) * 8 <= 24 and len(seg.time_index) * 12 <= 24
    assert [r[1] for r in contents(log)] == [b"k%02d" % k for k in range(40)]
    log.close()


def test_a_group_never_spans_more_than_an_int32_of_offsets(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1")])
    log.roll(1_000)
    put(log, [(b"b", b"1")])
    log.roll(1_000)
    seg = log.view.segments[0]
    copy, _ = _SegmentCleaner(log, _build_map(log, dirty_state(log, 0), SLOTS)[0], {}, 0).write(seg)
    group = CleanedGroup(seg, copy, 1)
    second = log.view.segments[1]
    other, _ = _SegmentCleaner(log, _build_map(log, dirty_state(log, 0), SLOTS)[0], {}, 0).write(
        second
    )
    try:
        assert group.admits(other, 2, log.config)
        assert not group.admits(other, 2**31 + 1, log.config)
        assert group.admits(other, 2**31, log.config)
    finally:
        other.close()
        group.discard()
        swap_protocol.discard_cleaned(log.directory, second.base_offset)
    log.close()


# -- transactions ------------------------------------------------------------------------

PID_A, PID_B = 21, 22


def txn_put(log: PartitionLog, pid: int, seq: int, key: bytes) -> None:
    put(
        log,
        [(key, b"txn-%d" % pid)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def end_txn(log: PartitionLog, pid: int, commit: bool) -> None:
    data = marker_batch(pid, 0, EndTxnMarker(commit, 0), 1_000)
    log.append(
        validate_batches(memoryview(data), max_batch_bytes=1 << 20), leader_epoch=0, now_ms=0
    )


def txn_log(path: Path) -> PartitionLog:
    """Segments 0..5, one batch each: an abort and a commit whose markers sit in segments
    after the first, so that a group's transaction index is the others' entries."""
    log = compacted_log(path)
    put(log, [(b"k", b"plain")])  # 0
    log.roll(1_000)
    txn_put(log, PID_A, 0, b"k")  # 1: aborted below
    log.roll(1_000)
    end_txn(log, PID_A, False)  # 2: the abort marker
    log.roll(1_000)
    txn_put(log, PID_B, 0, b"k")  # 3: committed below
    log.roll(1_000)
    end_txn(log, PID_B, True)  # 4: the commit marker
    log.roll(1_000)
    put(log, [(b"z", b"last")])  # 5
    log.roll(1_000)
    put(log, [(b"active", b"x")])  # 6, the active segment
    return log


def test_a_group_holds_its_segments_aborted_transactions(tmp_path) -> None:
    log = txn_log(tmp_path / "t-0")
    aborted = log.aborted_between(0, log.log_end_offset)
    assert aborted == [(PID_A, 1)]
    assert read_entries(txn_index_path(log.directory, 2))
    result = clean(log, 5_000, SLOTS)
    assert result is not None and result.cleaned_segments == 1
    assert log.segment_base_offsets == (0, 6)
    # The aborted record and the superseded ones are gone; both markers stay.
    kept = {h.base_offset: (h.records_count, h.is_control) for h in headers(log)}
    assert kept == {1: (0, False), 2: (1, True), 3: (1, False), 4: (1, True), 5: (1, False),
                    6: (1, False)}  # fmt: skip
    # The abort's entry moved to the group's index; the others' files are gone.
    assert [e.producer_id for e in read_entries(txn_index_path(log.directory, 0))] == [PID_A]
    assert not txn_index_path(log.directory, 2).exists()
    assert log.aborted_between(0, log.log_end_offset) == aborted
    log.close()
    for recover in (True, False):
        again = compacted_log(tmp_path / "t-0", recover=recover)
        assert again.aborted_between(0, again.log_end_offset) == aborted
        assert again.last_stable_offset == again.log_end_offset
        again.close()


def test_a_pass_begun_before_a_truncation_swaps_nothing_in(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1")])
    put(log, [(b"a", b"2")])
    log.roll(1_000)
    put(log, [(b"b", b"1")])
    log.roll(1_000)
    seg = log.view.segments[0]
    truncations = log.truncations
    omap = _build_map(log, dirty_state(log, 0), SLOTS)[0]
    copy, _ = _SegmentCleaner(log, omap, {}, 0).write(seg)
    group = CleanedGroup(seg, copy, log.view.bases[1])
    group.finish()
    # A follower cuts into the segment, takes other records and rolls it again: the
    # same segment object, sealed, with records the copy knows nothing of.
    log.truncate_to(1)
    put(log, [(b"c", b"leader's")])
    log.roll(1_000)
    assert seg in log.view.segments[:-1]
    assert not log.replace_segments([seg], 0, truncations=truncations)
    assert [r[1:] for r in contents(log)] == [(b"a", b"1"), (b"c", b"leader's")]
    assert not list(log.directory.glob("*.cleaned")) and not list(log.directory.glob("*.swap"))
    log.close()


# -- a crash at each step of a group's swap ---------------------------------------------


@contextmanager
def at_each_step(action: Callable[[], None]) -> Iterator[None]:
    """Call ``action`` before each rename and deletion the swap protocol makes."""
    patches = []
    for name in ("_rename", "_unlink"):
        real = getattr(swap_protocol, name)

        def step(*args: Path, _real: Callable[..., None] = real) -> None:
            action()
            _real(*args)

        patches.append(patch.object(swap_protocol, name, step))
    with patches[0], patches[1]:
        yield


def crash_points(directory: Path, run: Callable[[], object]) -> list[Path]:
    """Run ``run``; before each step of the swap protocol copy the folder as a crash
    there leaves it (the page cache's view, as the crash property tests take it).
    Returns the copies, in order, the finished folder last."""
    copies: list[Path] = []

    def copy() -> None:
        target = directory.parent / f"crash-{len(copies):03d}" / directory.name
        shutil.copytree(directory, target)
        copies.append(target)

    with at_each_step(copy):
        run()
    copy()
    return copies


def load_crashed(copy: Path, recover: bool) -> PartitionLog:
    """Load a copy of ``copy``: no temporary file left, and every segment holds only
    offsets from its base to the next segment's (no overlap, whatever reads show)."""
    fresh = Path(tempfile.mkdtemp(dir=copy.parent)) / copy.name
    shutil.copytree(copy, fresh)
    log = compacted_log(fresh, recover=recover)
    assert not list(fresh.glob("*.cleaned")) and not list(fresh.glob("*.swap"))
    view = log.view
    for seg, end in zip(view.segments, (*view.bases[1:], log.log_end_offset), strict=True):
        for header, _ in segment_batches(seg, seg.fd):
            assert seg.base_offset <= header.base_offset and header.last_offset < end, (
                copy.parent.name,
                seg,
                header.base_offset,
            )
    return log


def small_segments(path: Path) -> tuple[Rows, Rows]:
    """Five segments of updates to three keys, then the active one; returns the log's
    records and what a pass keeps."""
    log = compacted_log(path)
    for r in range(5):
        for k in (b"a", b"b", b"c"):
            put(log, [(k, b"%s%d" % (k, r))])
        log.roll(1_000)
    put(log, [(b"z", b"active")])
    original = contents(log)
    log.close()
    return original, [row for row in latest(original)]


def test_a_crash_at_each_step_of_a_group_swap_loses_nothing(tmp_path) -> None:
    path = tmp_path / "t-0"
    original, cleaned = small_segments(path)

    def one_pass() -> None:
        log = compacted_log(path)
        assert clean(log, 5_000, SLOTS) is not None
        log.close()

    copies = crash_points(path, one_pass)
    assert len(copies) > 10  # the copies' removal, the renames, the deletions
    states = []
    for copy in copies:
        for recover in (True, False):
            log = load_crashed(copy, recover)
            got = contents(log)
            assert got in (original, cleaned), copy.parent.name
            states.append(got == cleaned)
            assert log.log_end_offset == original[-1][0] + 1
            log.append(records(1, key=b"after"), leader_epoch=0, now_ms=0)
            log.close()
    # Before the point of no return the old log, after it the cleaned one; never back.
    assert states[0] is False and states[-1] is True
    assert states == sorted(states)
    # And a pass after the recovery reaches the same end.
    log = load_crashed(copies[len(copies) // 2], True)
    clean(log, 5_000, SLOTS)
    assert contents(log) == cleaned
    assert len(log.segment_base_offsets) == 2
    log.close()


def test_a_crash_while_a_groups_emptied_tail_is_deleted_loses_nothing(
    tmp_path,
) -> None:
    """The group's last segments had only superseded records: the swap ends before them.
    A crash after some are deleted leaves the others as they were (records the next pass
    removes again), never an overlap nor a loss."""
    path = tmp_path / "t-0"
    log = compacted_log(path, segment_bytes=1_000)
    put(log, [(b"keep", b"1")])
    log.roll(1_000)
    for r in range(4):  # four segments superseded by a later one
        put(log, [(b"gone", b"%d" % r)])
        log.roll(1_000)
    # What supersedes them, in a segment too large to join their group.
    put(log, [(b"gone", b"final"), (b"big", b"x" * 900)])
    log.roll(1_000)
    put(log, [(b"z", b"active")])
    original = contents(log)
    log.close()
    cleaned = latest(original)

    def one_pass() -> None:
        log = compacted_log(path, segment_bytes=1_000)
        assert clean(log, 5_000, SLOTS) is not None
        assert log.segment_base_offsets == (0, 5, 7)
        log.close()

    between = 0  # crash states with some of the emptied tail left
    for copy in crash_points(path, one_pass):
        for recover in (True, False):
            log = load_crashed(copy, recover)
            got = contents(log)
            assert set(cleaned) <= set(got) <= set(original), copy.parent.name
            between += got not in (original, cleaned)
            assert [r[0] for r in got] == sorted({r[0] for r in got})
            clean(log, 6_000, SLOTS, force=True)
            assert contents(log) == cleaned
            log.close()
    assert between


def test_a_crash_at_each_step_keeps_the_aborted_transactions(tmp_path) -> None:
    path = tmp_path / "t-0"
    log = txn_log(path)
    end = log.log_end_offset
    aborted = log.aborted_between(0, end)
    latest_k = latest(contents(log))
    log.close()

    def one_pass() -> None:
        log = compacted_log(path)
        clean(log, 5_000, SLOTS)
        log.close()

    for copy in crash_points(path, one_pass):
        for recover in (True, False):
            log = load_crashed(copy, recover)
            assert log.aborted_between(0, end) == aborted, copy.parent.name
            assert set(latest_k) <= set(contents(log))
            log.close()
