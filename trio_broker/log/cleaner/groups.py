"""Consecutive cleaned segments made one: Kafka's ``groupSegmentsBySize``, on cleaned sizes.

Owns: ``CleanedGroup``, the cleaned copy of consecutive sealed segments being built as one
``.cleaned`` segment at the first one's base offset. Each segment of a pass is first
cleaned into a copy of its own (``<its base>.log.cleaned``, not fsynced); the copy joins
the group (its batches appended to the group's file, its own files removed) when

- the group's cleaned bytes plus the copy's fit in ``segment.bytes``,
- the entries of the group's offset index plus the copy's fit in ``segment.index.bytes``
  (and those of the time indexes), with one to spare: appending a copy's batches after
  others may place one entry more than the copy's own index has,
- and every offset up to the next segment's base stays within an int32 of the group's
  base offset (the indexes store offsets relative to it);

an empty copy always joins (it adds no bytes, entries nor offsets to the file), so a pass
leaves no empty segment behind but, when everything before it went, the first. Otherwise
the group is finished (``finish``: sealed, fsynced, its time set to its segments' newest)
and swapped in, and the copy starts the next group. Kafka groups by the segments' sizes
before cleaning; the cleaned sizes let a pass merge what compaction shrank at once (a
copy's bytes are written twice when it joins: a segment's worth at most).

Blocking file I/O on a cleaner thread. It must not decide what a copy keeps
(``compaction`` does) nor swap anything in (``PartitionLog.replace_segments`` does).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from trio_broker.records.header import BatchHeader
from trio_broker.records.stamping import StampedRecords

from ..config import LogConfig
from ..scan import BatchScanner, pread_exact
from ..segment import LogSegment
from ..swap import CLEANED_SUFFIX, discard_cleaned

_INT32_MAX = 2**31 - 1
WRITE_CHUNK = 1 << 20


def segment_batches(seg: LogSegment, fd: int) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every batch of ``seg`` (read through ``fd``), header and bytes."""
    scanner = BatchScanner(
        fd,
        start=0,
        end=seg.size,
        segment_base_offset=seg.base_offset,
        min_offset=seg.base_offset,
        verify_crc=False,
    )
    for position, header in scanner:
        yield header, pread_exact(fd, header.size, position)


def append_batches(out: LogSegment, parts: list[bytes], headers: list[BatchHeader]) -> int:
    """Append whole batches (offsets as they are) to ``out``; returns the bytes written."""
    if not parts:
        return 0
    size = sum(len(p) for p in parts)
    best = max(headers, key=lambda h: h.max_timestamp)
    stamped = StampedRecords(
        parts=list(parts),
        headers=headers,
        size=size,
        first_offset=headers[0].base_offset,
        last_offset=headers[-1].last_offset,
        max_timestamp=best.max_timestamp,
        offset_of_max_timestamp=best.base_offset,
    )
    out.commit(out.write(stamped))
    return size


class CleanedGroup:
    """The cleaned copy of ``segments`` (consecutive, sealed), in ``out``."""

    def __init__(self, first: LogSegment, copy: LogSegment, next_base: int) -> None:
        self.segments = [first]
        self.out = copy
        self.end = next_base  # the base offset of the segment after the group
        self.last_modified_ms = first.last_modified_ms

    @property
    def base_offset(self) -> int:
        return self.out.base_offset

    def admits(self, copy: LogSegment, next_base: int, config: LogConfig) -> bool:
        """Whether the copy of the segment that ends at ``next_base`` joins the group."""
        if copy.size == 0:
            return True
        out = self.out
        index_bytes = config.segment_index_bytes
        return (
            out.size + copy.size <= config.segment_bytes
            and (len(out.offset_index) + len(copy.offset_index) + 1) * 8 <= index_bytes
            and (len(out.time_index) + len(copy.time_index) + 1) * 12 <= index_bytes
            and next_base - 1 - out.base_offset <= _INT32_MAX
        )

    def absorb(self, segment: LogSegment, copy: LogSegment, next_base: int) -> None:
        """Append the copy's batches; its files go."""
        try:
            parts: list[bytes] = []
            headers: list[BatchHeader] = []
            pending = 0
            for header, data in segment_batches(copy, copy.fd):
                parts.append(data)
                headers.append(header)
                pending += len(data)
                if pending >= WRITE_CHUNK:
                    append_batches(self.out, parts, headers)
                    parts, headers, pending = [], [], 0
            append_batches(self.out, parts, headers)
        finally:
            copy.close()
            discard_cleaned(copy.directory, copy.base_offset)
        self.segments.append(segment)
        self.end = next_base
        self.last_modified_ms = max(self.last_modified_ms, segment.last_modified_ms)

    def finish(self) -> int:
        """Seal and fsync the cleaned file and close it; returns its size."""
        out = self.out
        try:
            out.seal()
            out.flush()
        finally:
            out.close()
        mtime_ns = self.last_modified_ms * 1_000_000
        os.utime(
            LogSegment.paths(out.directory, out.base_offset, CLEANED_SUFFIX)[0], ns=(mtime_ns,) * 2
        )
        return out.size

    def discard(self) -> None:
        self.out.close()
        discard_cleaned(self.out.directory, self.out.base_offset)
