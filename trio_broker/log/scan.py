"""Walking the batches of a segment file: headers only, or fully checked for recovery.

Owns: ``read_header`` (one pread of a batch header) and ``BatchScanner``, which walks a
file region batch by batch and stops at the first batch that is torn (length past the end
of the file), malformed, out of order or, when asked, fails its CRC-32C. The scanner only
reads: cutting the bad tail and rebuilding indexes is the segment's job.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from trio_broker.records.header import (
    CURRENT_MAGIC,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    batch_crc,
)

_CHUNK = 1 << 20
_INT32_MAX = 2**31 - 1


def pread_exact(fd: int, size: int, position: int) -> bytes:
    """``size`` bytes at ``position``, fewer only at the end of the file."""
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_header(fd: int, position: int) -> BatchHeader | None:
    """The batch header at ``position``, or None if the file ends before 61 bytes."""
    data = pread_exact(fd, HEADER_SIZE, position)
    if len(data) < HEADER_SIZE:
        return None
    return BatchHeader.parse(data)


class BatchScanner:
    """Iterate ``(position, header)`` over the sound batches of ``[start, end)``.

    After iteration, ``valid_end`` is the position just after the last sound batch and
    ``problem`` says why the walk stopped early (None when it reached ``end``).
    """

    def __init__(
        self,
        fd: int,
        *,
        start: int,
        end: int,
        segment_base_offset: int,
        min_offset: int,
        verify_crc: bool,
    ) -> None:
        self._fd = fd
        self._start = start
        self._end = end
        self._segment_base = segment_base_offset
        self._min_offset = min_offset
        self._verify = verify_crc
        self.valid_end = start
        self.problem: str | None = None
        self.batches = 0

    def _check(self, header: BatchHeader, position: int) -> str | None:
        size = header.size
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            return f"batch at {position} has length {header.batch_length}"
        if position + size > self._end:
            return f"batch at {position} of {size} bytes is torn (file ends at {self._end})"
        if header.magic != CURRENT_MAGIC:
            return f"batch at {position} has magic {header.magic}"
        # The cleaner keeps a batch's offset range while removing records from it (even
        # all of them: an empty batch keeps a producer's last sequence), so fewer records
        # than offsets is sound; more is not.
        if (
            header.last_offset_delta < 0
            or not 0 <= header.records_count <= header.last_offset_delta + 1
        ):
            return f"batch at {position} has an inconsistent record count"
        if header.base_offset < self._min_offset:
            return f"batch at {position} has offset {header.base_offset} < {self._min_offset}"
        if header.last_offset - self._segment_base > _INT32_MAX:
            return f"batch at {position} has an offset beyond the segment's range"
        return None

    def __iter__(self) -> Iterator[tuple[int, BatchHeader]]:
        return self._walk_checked() if self._verify else self._walk_headers()

    def _walk_headers(self) -> Iterator[tuple[int, BatchHeader]]:
        position = self._start
        while position < self._end:
            header = read_header(self._fd, position)
            if header is None or position + HEADER_SIZE > self._end:
                self.problem = f"{self._end - position} trailing bytes at {position}"
                return
            problem = self._check(header, position)
            if problem:
                self.problem = problem
                return
            yield position, header
            self._advance(header, position)
            position = self.valid_end

    def _walk_checked(self) -> Iterator[tuple[int, BatchHeader]]:
        position = self._start
        buf = b""
        buf_pos = position
        while position < self._end:
            rel = position - buf_pos
            if len(buf) - rel < HEADER_SIZE:
                buf = pread_exact(self._fd, min(_CHUNK, self._end - position), position)
                buf_pos, rel = position, 0
                if len(buf) < HEADER_SIZE:
                    self.problem = f"{self._end - position} trailing bytes at {position}"
                    return
            header = BatchHeader.parse(buf, rel)
            problem = self._check(header, position)
            if problem:
                self.problem = problem
                return
            if len(buf) - rel < header.size:
                buf = pread_exact(self._fd, max(_CHUNK, header.size), position)
                buf_pos, rel = position, 0
                if len(buf) < header.size:
                    self.problem = f"batch at {position} is torn"
                    return
            if batch_crc(memoryview(buf)[rel : rel + header.size]) != header.crc:
                self.problem = f"batch at {position} fails its CRC"
                return
            yield position, header
            self._advance(header, position)
            position = self.valid_end

    def _advance(self, header: BatchHeader, position: int) -> None:
        self.valid_end = position + header.size
        self._min_offset = header.next_offset
        self.batches += 1
