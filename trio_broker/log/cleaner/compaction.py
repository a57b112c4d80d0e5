"""Compaction of one partition log: Kafka's ``Cleaner``, one pass at a time.

Owns: ``dirty_state`` (where the dirty section starts, from the log's
``cleaner-offset-checkpoint``, where the cleanable part ends, the dirty ratio and whether
``max.compaction.lag.ms`` forces a pass) and ``clean`` (one pass). The cleanable part is
the sealed segments below the active one, cut at the first segment whose largest
timestamp is newer than ``min.compaction.lag.ms``. A pass maps each key of the dirty
section to its latest offset (``OffsetMap``, stopping where the map is full), then
rewrites every sealed segment from the log start up to the mapped end, consecutive
segments into one where their cleaned total fits (``groups``: Kafka's
``groupSegmentsBySize``, so no empty segment stays behind):

- a record is kept if it has a key and is the latest for it (or its key was not mapped);
  records without a key are dropped, as Kafka's cleaner drops them;
- a tombstone (null value) is kept until its batch's delete horizon (KIP-534): the first
  pass that keeps it sets the horizon to now + ``delete.retention.ms``; a later pass
  after the horizon drops it;
- offsets are never renumbered; a batch whose records all stay is copied byte for byte;
  a changed one keeps its header fields and codec (``records.retain``); a batch left
  empty is dropped unless it is the last batch of its producer (an empty header keeps the
  producer's sequence, as Kafka keeps it);
- transactions, as Kafka's cleaner: nothing at or after the last stable offset is cleaned
  (the cleanable part ends at the segment holding it); the records of aborted
  transactions (the transaction index says which) are never mapped and are removed;
  transaction markers are kept as they are, so the transaction indexes stay true.

Each cleaned segment is written as ``.cleaned`` files, fsynced, and swapped in for its
group by ``PartitionLog.replace_segments`` (``swap`` is the crash-safe protocol). The
checkpoint moves to the mapped end once every group is swapped; a crash before that repeats
the pass, which is idempotent. Blocking I/O and CPU: a cleaner thread's work, never the
event loop's. One pass per log at a time (the caller's duty). Must not know topics or trio.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from trio_broker.records.header import BatchHeader
from trio_broker.records.reader import DecodedRecord, iter_records
from trio_broker.records.retain import delete_horizon, empty_batch, retained_batch

from ..checkpoint import CLEANER_CHECKPOINT_FILE, read_first_dirty, write_first_dirty
from ..log_view import SegmentGone, reference
from ..partition_log import PartitionLog
from ..segment import LogSegment
from ..swap import CLEANED_SUFFIX, discard_cleaned
from .groups import WRITE_CHUNK, CleanedGroup, append_batches, segment_batches
from .offset_map import OffsetMap

CHECKPOINT_FILE = CLEANER_CHECKPOINT_FILE


@dataclass(frozen=True, slots=True)
class DirtyState:
    """A log's compaction state: [first_dirty, first_uncleanable) is the dirty section."""

    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    max_lag_due: bool

    @property
    def ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def needs_cleaning(self, min_ratio: float) -> bool:
        return self.dirty_bytes > 0 and (self.ratio >= min_ratio or self.max_lag_due)


@dataclass(frozen=True, slots=True)
class CleanResult:
    first_dirty: int
    end_offset: int
    segments: int  # the segments cleaned
    cleaned_segments: int  # what they became (Kafka's groups)
    bytes_read: int
    bytes_written: int
    records_removed: int
    duration_ms: float
    # The earliest delete horizon of a tombstone kept: a pass then removes it (Kafka's
    # latestDeleteHorizon); None when no tombstone was kept.
    horizon_ms: int | None


def dirty_state(log: PartitionLog, now_ms: int) -> DirtyState:
    view = log.view
    config = log.config
    bases = view.bases
    start = view.log_start_offset
    checkpoint = read_first_dirty(log.directory)
    first_dirty = start if checkpoint is None else max(start, checkpoint)
    # Never past the last stable offset: the segment holding it is not cleanable.
    first_uncleanable = min(
        bases[-1], bases[max(0, bisect_right(bases, log.last_stable_offset) - 1)]
    )
    first_dirty = min(first_dirty, first_uncleanable)
    clean = dirty = 0
    earliest_dirty_ts: int | None = None
    for i, seg in enumerate(view.segments[:-1]):
        end = bases[i + 1]
        if end <= start:
            continue
        if end <= first_dirty:
            clean += seg.size
            continue
        lag = config.min_compaction_lag_ms
        if lag > 0 and now_ms - seg.largest_timestamp < lag:
            first_uncleanable = max(first_dirty, seg.base_offset)
            break
        if earliest_dirty_ts is None:
            earliest_dirty_ts = seg.roll_basis_ms
        dirty += seg.size
    due = (
        earliest_dirty_ts is not None and now_ms - earliest_dirty_ts > config.max_compaction_lag_ms
    )
    return DirtyState(first_dirty, first_uncleanable, clean, dirty, due)


def aborted_ranges(log: PartitionLog) -> dict[int, list[tuple[int, int]]]:
    """Producer id -> (first, last offset) of each of its aborted transactions."""
    out: dict[int, list[tuple[int, int]]] = {}
    for e in log.aborted_transactions:
        out.setdefault(e.producer_id, []).append((e.first_offset, e.last_offset))
    return out


def in_aborted(aborted: dict[int, list[tuple[int, int]]], header: BatchHeader) -> bool:
    """Whether a transactional data batch belongs to an aborted transaction."""
    if not header.is_transactional or header.is_control:
        return False
    return any(f <= header.base_offset <= last for f, last in aborted.get(header.producer_id, ()))


def _build_map(log: PartitionLog, state: DirtyState, slots: int) -> tuple[OffsetMap, int, int]:
    """The offset map of the dirty section, the offset it reaches, and bytes read."""
    omap = OffsetMap(slots)
    view = log.view
    aborted = aborted_ranges(log)
    end, read = state.first_dirty, 0
    for i, seg in enumerate(view.segments[:-1]):
        seg_end = view.bases[i + 1]
        if seg_end <= state.first_dirty:
            continue
        if seg.base_offset >= state.first_uncleanable:
            break
        with reference(seg) as handle:
            for header, data in segment_batches(seg, handle.fileno()):
                read += header.size
                if header.last_offset < state.first_dirty:
                    continue
                if not header.is_control and not in_aborted(aborted, header):
                    for record in iter_records(data):
                        if record.key is not None and record.offset >= state.first_dirty:
                            omap.put(record.key, record.offset)
                end = header.next_offset
                if omap.full:
                    return omap, end, read
        end = seg_end
    return omap, end, read


class _SegmentCleaner:
    """Filters the batches of one segment into its ``.cleaned`` copy."""

    def __init__(
        self, log: PartitionLog, omap: OffsetMap, producers: dict[int, int], now_ms: int
    ) -> None:
        self.log, self.omap, self.producers, self.now_ms = log, omap, producers, now_ms
        self.removed = 0
        self.horizon: int | None = None  # the earliest delete horizon of a kept tombstone
        self.aborted = aborted_ranges(log)

    def _keep(self, record: DecodedRecord, horizon: int | None) -> bool:
        if record.key is None or record.offset < self.omap.get(record.key):
            return False
        return record.value is not None or horizon is None or self.now_ms < horizon

    def filter(self, header: BatchHeader, data: bytes) -> bytes | None:
        if header.is_control:
            return data
        records = list(iter_records(data))
        horizon = delete_horizon(header)
        dropped = in_aborted(self.aborted, header)
        kept = [] if dropped else [r for r in records if self._keep(r, horizon)]
        self.removed += len(records) - len(kept)
        if not kept:
            last = self.producers.get(header.producer_id)
            return (
                empty_batch(header)
                if header.producer_id >= 0 and last == header.last_offset
                else None
            )
        new_horizon: int | None = None
        if any(r.value is None for r in kept):
            due = horizon
            if due is None:
                due = new_horizon = self.now_ms + self.log.config.delete_retention_ms
            self.horizon = due if self.horizon is None else min(self.horizon, due)
        if len(kept) == len(records) and new_horizon is None:
            return data
        return retained_batch(header, kept, horizon_ms=new_horizon)

    def write(self, seg: LogSegment) -> tuple[LogSegment, int]:
        """Write the cleaned copy of ``seg`` (``.cleaned`` files at its base offset, not
        fsynced: ``CleanedGroup.finish`` does); returns it, open, and the bytes read."""
        out = LogSegment.create(
            self.log.directory, seg.base_offset, self.log.config, self.now_ms, CLEANED_SUFFIX
        )
        read = 0
        try:
            parts: list[bytes] = []
            headers: list[BatchHeader] = []
            pending = 0
            with reference(seg) as handle:
                for header, data in segment_batches(seg, handle.fileno()):
                    read += header.size
                    kept = self.filter(header, data)
                    if kept is None:
                        continue
                    parts.append(kept)
                    headers.append(BatchHeader.parse(kept))
                    pending += len(kept)
                    if pending >= WRITE_CHUNK:
                        append_batches(out, parts, headers)
                        parts, headers, pending = [], [], 0
            append_batches(out, parts, headers)
        except BaseException:
            out.close()
            discard_cleaned(self.log.directory, seg.base_offset)
            raise
        return out, read


class _Swapped:
    """Swaps a pass's finished groups in, counting what it did."""

    def __init__(self, log: PartitionLog, now_ms: int, truncations: int) -> None:
        self.log, self.now_ms, self.truncations = log, now_ms, truncations
        self.segments = self.groups = self.written = 0

    def swap(self, group: CleanedGroup) -> None:
        try:
            size = group.finish()
        except BaseException:
            group.discard()
            raise
        if self.log.replace_segments(group.segments, self.now_ms, truncations=self.truncations):
            self.segments += len(group.segments)
            self.groups += 1
            self.written += size


def clean(
    log: PartitionLog,
    now_ms: int,
    map_slots: int,
    *,
    force: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
) -> CleanResult | None:
    """One cleaning pass if the log has a dirty section (or, with ``force``, a clean one:
    the pass that removes tombstones past their horizon); None if there is nothing.

    ``should_stop`` is asked before each segment: a pass stopped (shutdown) or overtaken
    by retention or deletion (a segment gone meanwhile) returns None without moving the
    checkpoint; the segments it swapped in already are sound, the next pass redoes it.
    """
    began = time.perf_counter()
    state = dirty_state(log, now_ms)
    if state.dirty_bytes == 0 and not (force and state.clean_bytes):
        return None
    try:
        omap, end, read = _build_map(log, state, map_slots)
    except SegmentGone:
        return None
    producers = log.last_producer_offsets()
    cleaner = _SegmentCleaner(log, omap, producers, now_ms)
    tally = _Swapped(log, now_ms, log.truncations)
    view = log.view
    group: CleanedGroup | None = None
    try:
        for i, seg in enumerate(view.segments[:-1]):
            if seg.base_offset >= end:
                break
            if should_stop():
                return None
            try:
                copy, seg_read = cleaner.write(seg)
            except SegmentGone:
                return None
            read += seg_read
            next_base = view.bases[i + 1]
            if group is not None and group.admits(copy, next_base, log.config):
                group.absorb(seg, copy, next_base)
                continue
            group, previous = CleanedGroup(seg, copy, next_base), group
            if previous is not None:
                tally.swap(previous)
        last, group = group, None
        if last is not None:
            tally.swap(last)
    finally:
        if group is not None:
            group.discard()
    write_first_dirty(log.directory, end)
    return CleanResult(
        first_dirty=state.first_dirty,
        end_offset=end,
        segments=tally.segments,
        cleaned_segments=tally.groups,
        bytes_read=read,
        bytes_written=tally.written,
        records_removed=cleaner.removed,
        duration_ms=(time.perf_counter() - began) * 1000,
        horizon_ms=cleaner.horizon,
    )
