"""Reading a partition log without its lock: the view readers work on, and the reads.

Owns: ``LogView`` (the immutable picture of a log that its writer publishes after each
change: segments, committed size of the active one, log start and end offsets),
the transactions readers need (the aborted ones, ``index.transactions``' entries, and those not yet
stable), ``reference`` (a reader's hold on a segment's file, so that a segment deleted meanwhile
stays readable), ``read_batches`` (whole batches from an offset as ``FileRegion``s within a
byte budget, jumping through the offset index), and the timestamp lookups
(``offset_for_timestamp``, ``record_at_or_after``, ``max_timestamp_in``). A segment gone
before the reader got its reference raises ``SegmentGone``: the caller retries on a newer
view. Blocking (file reads): called from worker threads. Must not take the log's lock or
write.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from trio_broker.protocol.primitives import FileRegion
from trio_broker.records.header import BatchHeader, TimestampType
from trio_broker.records.reader import iter_records

from .handles import FileHandle
from .index.transactions import AbortedTxn
from .scan import read_header
from .segment import LogSegment


class SegmentGone(Exception):
    """A segment of the reader's view was deleted before the reader got a reference."""


@dataclass(frozen=True, slots=True)
class LogView:
    """What readers see of a log: immutable, replaced by the writer after each change."""

    segments: tuple[LogSegment, ...]
    bases: tuple[int, ...]
    active_size: int
    log_start_offset: int
    log_end_offset: int
    # (first offset, last offset) of transactions that may not be stable yet: the ongoing
    # (last offset: the log end) and the completed whose marker the high watermark may
    # not have passed. The last stable offset is the smallest first offset among those
    # reaching the high watermark, else the high watermark.
    unstable: tuple[tuple[int, int], ...] = ()
    aborted: tuple[AbortedTxn, ...] = ()

    def last_stable(self, high_watermark: int) -> int:
        lso = high_watermark
        for first, last in self.unstable:
            if last >= high_watermark and first < lso:
                lso = first
        return max(lso, self.log_start_offset)

    def size_of(self, i: int) -> int:
        return self.active_size if i == len(self.segments) - 1 else self.segments[i].size


@contextmanager
def reference(segment: LogSegment) -> Iterator[FileHandle]:
    handle = segment.acquire()
    if handle is None:
        raise SegmentGone
    try:
        yield handle
    finally:
        handle.close()


def read_batches(
    view: LogView,
    target: int,
    budget: int,
    min_one_batch: bool,
    limit: int,
    regions: list[FileRegion],
) -> int:
    if budget <= 0 and not (min_one_batch and not regions):
        # Nothing can be read (a fetch response already full): no segment is opened for
        # it (a segment the open-files bound closed would be reopened for nothing).
        return target
    i = max(0, bisect_right(view.bases, target) - 1)
    while i < len(view.segments) and target < limit:
        segment = view.segments[i]
        size = view.size_of(i)
        handle = segment.acquire()
        if handle is None:
            raise SegmentGone
        keep = False
        try:
            fd = handle.fileno()
            found = segment.find_batch(fd, target, size)
            if found is None:
                i += 1
                continue
            start, first = found
            if first.next_offset > limit:
                return target
            if first.size > budget:
                if regions or not min_one_batch:
                    return target
                end, target, more = start + first.size, first.next_offset, False
            else:
                end, target, more = _extend(segment, fd, start, size, budget, limit)
            regions.append(FileRegion(handle, start, end - start))
            keep = True
            budget -= end - start
            if not more or budget <= 0:
                return target
            i += 1
        finally:
            if not keep:
                handle.close()
    return target


def _extend(
    segment: LogSegment, fd: int, start: int, size: int, budget: int, limit: int
) -> tuple[int, int, bool]:
    """Grow a run of whole batches from ``start``; returns (end, next offset, whether
    the run reached the end of the segment)."""
    position = start
    next_offset = -1
    entry = segment.offset_index.last_entry_within(start + budget, limit)
    if entry is not None and entry[1] > start:
        position = entry[1]  # every batch before an index entry fits: jump there
    while position < size:
        h = read_header(fd, position)
        if h is None or position + h.size > size:
            break
        if position + h.size - start > budget or h.next_offset > limit:
            return position, h.base_offset, False
        position += h.size
        next_offset = h.next_offset
    if next_offset < 0:
        # Jumped to an index entry and stopped at once: its batch starts the next read.
        h = read_header(fd, position)
        next_offset = h.base_offset if h is not None else segment.next_offset
    return position, next_offset, position >= size


def offset_for_timestamp(view: LogView, timestamp: int) -> tuple[int, int] | None:
    min_offset = view.log_start_offset
    for i, segment in enumerate(view.segments):
        if segment.max_timestamp < timestamp:
            continue
        size = view.size_of(i)
        with reference(segment) as handle:
            fd = handle.fileno()
            position = 0
            entry = segment.time_index.lookup(timestamp)
            if entry is not None:
                position = segment.offset_index.lookup(entry[1])[1]
            if min_offset > segment.base_offset:
                position = max(position, segment.offset_index.lookup(min_offset)[1])
            while position < size:
                h = read_header(fd, position)
                if h is None or position + h.size > size:
                    break
                if h.max_timestamp >= timestamp and h.next_offset > min_offset:
                    found = record_at_or_after(segment, fd, position, h, timestamp, min_offset)
                    if found is not None:
                        return found
                position += h.size
    return None


def record_at_or_after(
    segment: LogSegment, fd: int, position: int, h: BatchHeader, timestamp: int, min_offset: int
) -> tuple[int, int] | None:
    if h.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return max(h.base_offset, min_offset), h.max_timestamp
    for record in iter_records(segment.read_batch(fd, position, h)):
        if record.offset >= min_offset and record.timestamp_ms >= timestamp:
            return record.offset, record.timestamp_ms
    return None


def max_timestamp_in(view: LogView) -> tuple[int, int] | None:
    """(offset, timestamp) of the record with the largest timestamp; the batch's base
    offset when the segment holding it went meanwhile."""
    best: LogSegment | None = None
    best_index = -1
    for i, segment in enumerate(view.segments):
        if segment.max_timestamp >= 0 and (
            best is None or segment.max_timestamp > best.max_timestamp
        ):
            best, best_index = segment, i
    if best is None:
        return None
    max_ts, batch_offset = best.max_timestamp, best.offset_of_max_timestamp
    try:
        with reference(best) as handle:
            fd = handle.fileno()
            found = best.find_batch(fd, batch_offset, view.size_of(best_index))
            if found is not None:
                position, h = found
                exact = record_at_or_after(best, fd, position, h, max_ts, 0)
                if exact is not None:
                    return exact
    except SegmentGone:
        pass
    return batch_offset, max_ts
