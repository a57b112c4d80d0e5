"""Sparse indexes of one segment, in Kafka's on-disk format.

Owns: the ``.index`` file (entries of relative offset int32 + byte position int32, one per
``index.interval.bytes`` of log, keyed by the last offset of the batch at that position) and
the ``.timeindex`` file (timestamp int64 + relative offset int32, appended only when the
segment's max timestamp grows). Files are append-only and hold exactly their entries (as a
Kafka index after trimming); a copy lives in memory as arrays for bisection.

Writes are two-phase: ``write`` puts entries in the file, ``commit`` makes them visible to
lookups, ``rollback`` truncates the file back. Only the log's writer (holding the partition
lock) writes; readers bisect the arrays concurrently, bounded by the array appended last.
Lookups never touch the file, so its descriptor may be closed (``close``) while the segment
is not written and opened again (``reopen``) for the next write or fsync. It must not read
the log file itself.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

from ..errors import CorruptIndex

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT32_MAX = 2**31 - 1


def _open_rw(path: str | Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks = []
    pos = 0
    while pos < size:
        chunk = os.pread(fd, size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    return b"".join(chunks)


def _pwrite_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, position)
        view = view[n:]
        position += n


class _IndexFile:
    """The file half of an index: committed size, two-phase append, fsync, close."""

    entry: struct.Struct

    def __init__(self, path: str | Path, fd: int, entries: int) -> None:
        self.path = path
        self._fd = fd
        self._committed_bytes = entries * self.entry.size
        self._written_bytes = self._committed_bytes
        self._dirty = False

    def _write(self, data: bytes) -> None:
        if data:
            _pwrite_all(self._fd, data, self._written_bytes)
            self._written_bytes += len(data)
            self._dirty = True

    def rollback(self) -> None:
        """Drop written, uncommitted entries from the file."""
        if self._written_bytes != self._committed_bytes:
            os.ftruncate(self._fd, self._committed_bytes)
            self._written_bytes = self._committed_bytes

    def _commit_bytes(self) -> None:
        self._committed_bytes = self._written_bytes

    def _truncate_bytes(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self._committed_bytes = self._written_bytes = size
        self._dirty = True

    @property
    def size_bytes(self) -> int:
        return self._committed_bytes

    def flush(self) -> None:
        if self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def reopen(self) -> None:
        """Open the file again after ``close`` (never creating it): the entries stay as
        they are in memory, and a write not yet fsynced is fsynced through the new
        descriptor (Linux syncs the file, whichever descriptor wrote it)."""
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))


class OffsetIndex(_IndexFile):
    """``<base>.index``: last offset of a batch -> byte position of that batch."""

    entry = _OFFSET_ENTRY

    def __init__(self, path: str | Path, base_offset: int, max_bytes: int, fd: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max(1, max_bytes // self.entry.size)
        self._offsets = array("q")
        self._positions = array("q")
        super().__init__(path, fd, 0)

    @classmethod
    def open(
        cls, path: str | Path, base_offset: int, max_bytes: int, *, log_size: int | None = None
    ) -> OffsetIndex:
        """Open (creating if missing) and load; raises ``CorruptIndex`` if it is not sane."""
        index = cls(path, base_offset, max_bytes, _open_rw(path))
        try:
            index._load(_read_all(index._fd), log_size)
        except BaseException:
            index.close()
            raise
        return index

    @classmethod
    def create(cls, path: str | Path, base_offset: int, max_bytes: int) -> OffsetIndex:
        """An empty index file (an existing one is emptied)."""
        index = cls(path, base_offset, max_bytes, _open_rw(path))
        index._truncate_bytes(0)
        return index

    def _load(self, data: bytes, log_size: int | None) -> None:
        if len(data) % self.entry.size:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of 8")
        last_rel, last_pos = -1, -1
        for rel, pos in self.entry.iter_unpack(data):
            if rel <= last_rel or pos <= last_pos or rel < 0 or pos < 0:
                raise CorruptIndex(f"{self.path}: entries are not increasing")
            if log_size is not None and pos >= log_size:
                raise CorruptIndex(f"{self.path}: position {pos} is past the log's end")
            self._offsets.append(self.base_offset + rel)
            self._positions.append(pos)
            last_rel, last_pos = rel, pos
        self._committed_bytes = self._written_bytes = len(data)

    def __len__(self) -> int:
        return len(self._positions)

    @property
    def is_full(self) -> bool:
        return len(self._positions) >= self.max_entries

    def can_hold(self, offset: int) -> bool:
        """Whether ``offset`` fits in a relative int32."""
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def write(self, entries: list[tuple[int, int]]) -> None:
        self._write(b"".join(self.entry.pack(o - self.base_offset, p) for o, p in entries))

    def commit(self, entries: list[tuple[int, int]]) -> None:
        self._commit_bytes()
        for offset, position in entries:
            self._offsets.append(offset)
            self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry whose offset is <= ``offset``; (base offset, 0) if none."""
        n = len(self._positions)
        i = bisect_right(self._offsets, offset, 0, n) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def last_entry_within(self, max_position: int, max_offset: int) -> tuple[int, int] | None:
        """The last entry with position <= ``max_position`` and offset < ``max_offset``."""
        n = len(self._positions)
        i = min(
            bisect_right(self._positions, max_position, 0, n),
            bisect_left(self._offsets, max_offset, 0, n),
        )
        if i == 0:
            return None
        return self._offsets[i - 1], self._positions[i - 1]

    def last_entry(self) -> tuple[int, int] | None:
        n = len(self._positions)
        return (self._offsets[n - 1], self._positions[n - 1]) if n else None

    def entries(self) -> list[tuple[int, int]]:
        n = len(self._positions)
        return list(zip(self._offsets[:n], self._positions[:n], strict=True))


class TimeIndex(_IndexFile):
    """``<base>.timeindex``: a max timestamp so far -> the offset where it was reached."""

    entry = _TIME_ENTRY

    def __init__(self, path: str | Path, base_offset: int, max_bytes: int, fd: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max(1, max_bytes // self.entry.size)
        self._timestamps = array("q")
        self._offsets = array("q")
        super().__init__(path, fd, 0)

    @classmethod
    def open(cls, path: str | Path, base_offset: int, max_bytes: int) -> TimeIndex:
        index = cls(path, base_offset, max_bytes, _open_rw(path))
        try:
            index._load(_read_all(index._fd))
        except BaseException:
            index.close()
            raise
        return index

    @classmethod
    def create(cls, path: str | Path, base_offset: int, max_bytes: int) -> TimeIndex:
        index = cls(path, base_offset, max_bytes, _open_rw(path))
        index._truncate_bytes(0)
        return index

    def _load(self, data: bytes) -> None:
        if len(data) % self.entry.size:
            raise CorruptIndex(f"{self.path}: size {len(data)} is not a multiple of 12")
        last_ts, last_rel = None, -1
        for ts, rel in self.entry.iter_unpack(data):
            if (last_ts is not None and ts <= last_ts) or rel < last_rel or rel < 0:
                raise CorruptIndex(f"{self.path}: entries are not increasing")
            self._timestamps.append(ts)
            self._offsets.append(self.base_offset + rel)
            last_ts, last_rel = ts, rel
        self._committed_bytes = self._written_bytes = len(data)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def last_entry(self) -> tuple[int, int] | None:
        n = len(self._offsets)
        return (self._timestamps[n - 1], self._offsets[n - 1]) if n else None

    def accepts(self, timestamp: int, pending_last: int | None = None) -> bool:
        """Whether an entry for ``timestamp`` would be appended (it must grow)."""
        last = self.last_entry()
        floor = last[0] if last else None
        if pending_last is not None and (floor is None or pending_last > floor):
            floor = pending_last
        return floor is None or timestamp > floor

    def write(self, entries: list[tuple[int, int]]) -> None:
        self._write(b"".join(self.entry.pack(t, o - self.base_offset) for t, o in entries))

    def commit(self, entries: list[tuple[int, int]]) -> None:
        self._commit_bytes()
        for timestamp, offset in entries:
            self._timestamps.append(timestamp)
            self._offsets.append(offset)

    def lookup(self, timestamp: int) -> tuple[int, int] | None:
        """The last entry whose timestamp is < ``timestamp``: every offset up to its offset
        has a smaller timestamp. None when there is no such entry."""
        n = len(self._offsets)
        i = bisect_left(self._timestamps, timestamp, 0, n) - 1
        if i < 0:
            return None
        return self._timestamps[i], self._offsets[i]

    def entries(self) -> list[tuple[int, int]]:
        n = len(self._offsets)
        return list(zip(self._timestamps[:n], self._offsets[:n], strict=True))
