"""The log cleaner on real partition logs: what a pass keeps, and every crash point."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trio_broker.log import PartitionLog
from trio_broker.log.cleaner.compaction import (
    _build_map,
    _SegmentCleaner,
    clean,
    dirty_state,
    read_first_dirty,
)
from trio_broker.log.cleaner.groups import CleanedGroup
from trio_broker.log.cleaner.offset_map import OffsetMap
from trio_broker.log.swap import CLEANED_SUFFIX, SWAP_SUFFIX, commit_cleaned
from trio_broker.records import Record, build_batch, iter_batches, iter_records, validate_batches
from trio_broker.records.header import CONTROL_MASK, Compression
from trio_broker.records.retain import DELETE_HORIZON_MASK

from .helpers import open_log, region_bytes

SLOTS = 1_000
DAY = 24 * 3600 * 1000


def put(
    log: PartitionLog,
    pairs: list[tuple[bytes | None, bytes | None]],
    *,
    ts: int = 1_000,
    codec: str = "none",
    **batch: object,
) -> None:
    data = build_batch(
        [Record(k, v, (), ts) for k, v in pairs], compression=codec, timestamp_ms=ts, **batch
    )  # type: ignore[arg-type]
    records = validate_batches(memoryview(data), max_batch_bytes=1 << 24)
    log.append(records, leader_epoch=0, now_ms=ts)


def contents(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    info = log.read(log.log_start_offset, 1 << 30)
    try:
        data = region_bytes(info)
    finally:
        info.release()
    return [(r.offset, r.key, r.value) for _, b in iter_batches(data) for r in iter_records(b)]


def headers(log: PartitionLog):
    info = log.read(log.log_start_offset, 1 << 30)
    try:
        return [h for h, _ in iter_batches(region_bytes(info))]
    finally:
        info.release()


def compacted_log(path: Path, **config: object) -> PartitionLog:
    config.setdefault("cleanup_policy", ("compact",))
    return open_log(path, **config)


def test_the_latest_value_per_key_stays_at_its_offset_across_segments(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    for round_ in range(3):
        put(log, [(b"a", b"a%d" % round_), (b"b", b"b%d" % round_)])
        log.roll(1_000)
    put(log, [(b"a", b"a-active"), (b"a", b"a-active2")])  # the active segment
    before = contents(log)
    result = clean(log, 5_000, SLOTS)
    assert result is not None and result.segments == 3 and result.records_removed == 4
    assert result.cleaned_segments == 1  # the three cleaned copies fit in one segment
    assert result.end_offset == 6 and read_first_dirty(log.directory) == 6
    after = contents(log)
    assert after == [
        (4, b"a", b"a2"),
        (5, b"b", b"b2"),
        (6, b"a", b"a-active"),
        (7, b"a", b"a-active2"),
    ]
    assert set(after) <= set(before)
    assert log.log_start_offset == 0 and log.log_end_offset == 8
    # Emptied batches (no producer id) go; the others keep their offset range.
    assert [(h.base_offset, h.last_offset) for h in headers(log)] == [(4, 5), (6, 7)]
    # One segment holds what the three kept; no empty one stays behind.
    assert log.segment_base_offsets == (0, 6)
    assert sorted(p.name for p in log.directory.glob("*.log")) == [f"{b:020d}.log" for b in (0, 6)]
    # Nothing dirty is left: a second pass finds nothing to do.
    assert dirty_state(log, 5_000).dirty_bytes == 0
    assert clean(log, 5_000, SLOTS) is None
    log.close()
    reopened = compacted_log(tmp_path / "t-0", recover=True)
    assert contents(reopened) == after
    reopened.close()


def test_a_later_pass_uses_the_clean_section_and_new_dirty_keys(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1"), (b"b", b"1")])
    log.roll(1_000)
    clean(log, 2_000, SLOTS)
    put(log, [(b"a", b"2")])
    log.roll(1_000)
    state = dirty_state(log, 2_000)
    assert state.first_dirty == 2 and state.clean_bytes > 0 and 0 < state.ratio < 1
    clean(log, 2_000, SLOTS)
    assert contents(log) == [(1, b"b", b"1"), (2, b"a", b"2")]
    log.close()


def test_records_without_a_key_are_dropped(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(None, b"x"), (b"k", b"v")])
    log.roll(1_000)
    clean(log, 2_000, SLOTS)
    assert contents(log) == [(1, b"k", b"v")]
    log.close()


def test_tombstones_stay_until_the_delete_horizon(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", delete_retention_ms=10_000)
    put(log, [(b"a", b"1"), (b"b", b"1")])
    put(log, [(b"a", None)])
    log.roll(1_000)
    first = clean(log, 50_000, SLOTS)
    assert first is not None and first.horizon_ms == 60_000
    assert contents(log) == [(1, b"b", b"1"), (2, b"a", None)]
    tomb = headers(log)[1]
    assert tomb.attributes & DELETE_HORIZON_MASK and tomb.base_timestamp == 60_000
    # The record's own timestamp survives the horizon in the base timestamp.
    info = log.read(2, 1 << 20)
    try:
        (record,) = [r for _, b in iter_batches(region_bytes(info)) for r in iter_records(b)]
    finally:
        info.release()
    assert record.timestamp_ms == 1_000
    # Before the horizon a forced pass keeps it; after, it goes and so does its batch.
    assert clean(log, 59_999, SLOTS, force=True) is not None
    assert contents(log)[-1] == (2, b"a", None)
    gone = clean(log, 60_000, SLOTS, force=True)
    assert gone is not None and gone.records_removed == 1 and gone.horizon_ms is None
    assert contents(log) == [(1, b"b", b"1")]
    assert log.log_end_offset == 3
    log.close()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_recompressed_with_their_codec(tmp_path, codec: str) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1")], codec=codec)
    put(log, [(b"c", b"2")], codec=codec)
    log.roll(1_000)
    clean(log, 2_000, SLOTS)
    assert contents(log) == [(1, b"b", b"1"), (2, b"a", b"2"), (4, b"c", b"2")]
    first = headers(log)[0]
    assert first.compression is Compression[codec.upper()]
    assert (first.base_offset, first.last_offset, first.records_count) == (0, 3, 2)
    log.close()
    reopened = compacted_log(tmp_path / "t-0", recover=True)  # CRCs verified
    assert reopened.load_stats.bytes_truncated == 0
    assert contents(reopened) == [(1, b"b", b"1"), (2, b"a", b"2"), (4, b"c", b"2")]
    reopened.close()


def test_a_producers_last_batch_stays_as_an_empty_header(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    pid = {"producer_id": 7, "producer_epoch": 0}
    put(log, [(b"a", b"1")], base_sequence=0, **pid)
    put(log, [(b"a", b"2")], base_sequence=1, **pid)
    put(log, [(b"a", b"3")])  # not idempotent: supersedes both
    log.roll(1_000)
    clean(log, 2_000, SLOTS)
    hs = headers(log)
    # The producer's first batch goes; its last one stays, empty, keeping its sequence.
    assert [(h.base_offset, h.records_count, h.producer_id, h.base_sequence) for h in hs] == [
        (1, 0, 7, 1),
        (2, 1, -1, -1),
    ]
    assert contents(log) == [(2, b"a", b"3")]
    log.close()
    reopened = compacted_log(tmp_path / "t-0", recover=True)
    assert reopened.last_producer_offsets() == {7: 1}
    put(reopened, [(b"a", b"4")], base_sequence=2, **pid)  # in sequence after the restart
    reopened.close()


def test_control_batches_are_kept(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    marker = [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")]
    put(
        log, [(b"a", b"1")], producer_id=3, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    put(log, marker, producer_id=3, producer_epoch=0, is_transactional=True, is_control=True)
    put(log, [(b"a", b"2")])
    log.roll(1_000)
    clean(log, 2_000, SLOTS)
    hs = headers(log)
    assert [h.base_offset for h in hs] == [0, 1, 2]
    assert hs[1].attributes & CONTROL_MASK and hs[1].records_count == 1
    log.close()


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", min_compaction_lag_ms=5_000)
    put(log, [(b"a", b"old")], ts=1_000)
    log.roll(1_000)
    put(log, [(b"a", b"new")], ts=8_000)
    log.roll(8_000)
    put(log, [(b"x", b"active")], ts=8_000)
    state = dirty_state(log, 10_000)
    assert state.first_uncleanable == 1  # the second segment is younger than the lag
    clean(log, 10_000, SLOTS)
    assert contents(log)[:2] == [(0, b"a", b"old"), (1, b"a", b"new")]
    clean(log, 13_001, SLOTS)
    assert contents(log)[:1] == [(1, b"a", b"new")]
    log.close()


def test_max_compaction_lag_makes_a_pass_due(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", max_compaction_lag_ms=5_000)
    put(log, [(b"a", b"1")], ts=1_000)
    put(log, [(b"b", b"1")], ts=1_000)
    log.roll(1_000)
    clean(log, 1_000, SLOTS)
    put(log, [(b"b", b"2")], ts=2_000)
    log.roll(2_000)
    # Dirty ratio is small, but the dirty part is older than max.compaction.lag.ms.
    assert not dirty_state(log, 3_000).needs_cleaning(0.99)
    assert dirty_state(log, 7_001).needs_cleaning(0.99)
    log.close()


def test_compacted_logs_roll_by_max_compaction_lag_and_keep_old_segments(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0", max_compaction_lag_ms=1_000, retention_ms=10)
    put(log, [(b"a", b"1")], ts=1_000)
    assert log.maybe_roll(2_001)
    assert log.apply_retention(10**9) == 0  # compact only: retention does not delete
    log.reconfigure(log.config.__class__(cleanup_policy=("compact", "delete"), retention_ms=10))
    put(log, [(b"a", b"2")], ts=1_000_000)
    assert log.apply_retention(10**9) == 1
    log.close()


# ------------------------------------------------------------------ crash recovery


def _files(path: Path) -> set[str]:
    return {n for n in os.listdir(path) if n.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))}


def _crash_log(tmp_path: Path) -> tuple[Path, list[tuple[int, bytes | None, bytes | None]]]:
    """A log with a dirty sealed segment; returns the expected contents after cleaning."""
    path = tmp_path / "t-0"
    log = compacted_log(path)
    put(log, [(b"a", b"1"), (b"b", b"1")])
    put(log, [(b"a", b"2")])
    log.roll(1_000)
    put(log, [(b"z", b"active")])
    log.close()
    return path, [(1, b"b", b"1"), (2, b"a", b"2"), (3, b"z", b"active")]


ORIGINAL = [(0, b"a", b"1"), (1, b"b", b"1"), (2, b"a", b"2"), (3, b"z", b"active")]


def _write_cleaned(path: Path) -> None:
    """Run a pass up to the written ``.cleaned`` files, then 'crash' (no swap)."""
    log = compacted_log(path)
    omap, _, _ = _build_map(log, dirty_state(log, 5_000), SLOTS)
    seg = log.view.segments[0]
    copy, _ = _SegmentCleaner(log, omap, {}, 5_000).write(seg)
    CleanedGroup(seg, copy, log.view.bases[1]).finish()
    log.close()


@pytest.mark.parametrize("stage", ["cleaned", "swap", "index-installed", "orphan-index-swap"])
def test_recovery_from_a_crash_at_each_stage(tmp_path, stage: str) -> None:
    path, cleaned = _crash_log(tmp_path)
    _write_cleaned(path)
    base = "00000000000000000000"
    expected = ORIGINAL
    if stage in ("swap", "index-installed"):
        commit_cleaned(path, 0)
        expected = cleaned
    if stage == "index-installed":
        os.replace(path / f"{base}.index.swap", path / f"{base}.index")
        os.replace(path / f"{base}.timeindex.swap", path / f"{base}.timeindex")
    if stage == "orphan-index-swap":  # crashed inside commit_cleaned, log not renamed
        os.replace(path / f"{base}.index.cleaned", path / f"{base}.index.swap")
    assert _files(path)
    for recover in (True, False):
        log = compacted_log(path, recover=recover)
        assert _files(path) == set()
        assert contents(log) == expected
        assert log.read(2, 1 << 20).next_fetch_offset >= 3
        log.close()
    # And cleaning after recovery reaches the same end state.
    log = compacted_log(path)
    clean(log, 5_000, SLOTS)
    assert contents(log) == cleaned
    log.close()


def test_a_segment_deleted_by_retention_meanwhile_is_not_swapped_in(tmp_path) -> None:
    path, _ = _crash_log(tmp_path)
    log = compacted_log(path)
    seg = log.view.segments[0]
    copy, _ = _SegmentCleaner(log, OffsetMap(1), {}, 0).write(seg)
    CleanedGroup(seg, copy, log.view.bases[1]).finish()
    log.delete_records_before(3)
    assert not log.replace_segments([seg], 0)
    assert _files(path) == set()
    log.close()


def test_a_stopped_pass_changes_nothing_and_keeps_the_checkpoint(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1")])
    log.roll(1_000)
    put(log, [(b"a", b"2")])
    log.roll(1_000)
    before = contents(log)
    assert clean(log, 2_000, SLOTS, should_stop=lambda: True) is None
    assert contents(log) == before and read_first_dirty(log.directory) is None
    assert _files(log.directory) == set()
    log.close()


def test_a_full_offset_map_cleans_what_it_mapped_and_the_next_pass_goes_on(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    for key in (b"a", b"b", b"a", b"b"):
        put(log, [(key, b"v")])
        log.roll(1_000)
    first = clean(log, 2_000, 1)  # one key fits: the map stops after the first batch
    assert first is not None and first.end_offset == 1
    assert [o for o, _, _ in contents(log)] == [0, 1, 2, 3]
    while clean(log, 2_000, 1) is not None:
        pass
    assert [(o, k) for o, k, _ in contents(log)] == [(2, b"a"), (3, b"b")]
    log.close()


def test_without_a_min_lag_future_timestamps_do_not_block_cleaning(tmp_path) -> None:
    log = compacted_log(tmp_path / "t-0")
    put(log, [(b"a", b"1")], ts=10**13)  # a producer clock far ahead
    put(log, [(b"a", b"2")], ts=10**13)
    log.roll(10**13)
    clean(log, 2_000, SLOTS)
    assert contents(log) == [(1, b"a", b"2")]
    log.close()
