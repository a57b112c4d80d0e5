"""One log segment: ``<base>.log`` with its ``.index`` and ``.timeindex``.

(Its ``.txnindex``, the aborted transactions whose markers it holds, is ``index.transactions``';
the segment only deletes that file with its own.)

Owns: appending stamped batches at the end of the file (``os.pwritev``, two-phase: write,
then commit or roll back to the committed size), keeping the sparse indexes in step by
Kafka's rule (an entry once more than ``index.interval.bytes`` were written since the last),
locating the batch that holds an offset (index, then a walk of batch headers), loading
at start-up (trusting the files, or recovering: CRC-checking every batch, cutting a bad
tail and rebuilding the indexes), cutting it at a batch boundary (a replica's truncation)
and deleting its files. Its descriptors are ``segment_files``': every method here that
uses them runs inside ``opened`` (the LRU of open files may have closed them since), and an
unflushed segment the LRU closed keeps its ``dirty`` state and reopens to fsync. It must
not decide when to roll, flush or delete: the partition log does, holding its lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from trio_broker.records.control import EndTxnMarker, read_marker
from trio_broker.records.header import BatchHeader
from trio_broker.records.stamping import StampedRecords

from .config import LogConfig
from .errors import CorruptIndex
from .handles import SharedFile
from .index.sparse import OffsetIndex, TimeIndex
from .index.transactions import txn_index_path
from .open_files import OpenFiles
from .scan import BatchScanner, pread_exact, read_header
from .segment_files import SegmentFiles, with_files, with_log_file

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"

_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)
_REBUILD_CHUNK = 4096


class SegmentDamaged(OSError):
    """A failed append could not be rolled back: the files may hold a partial batch."""


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def _pwritev_all(fd: int, parts: Sequence[bytes | bytearray | memoryview], position: int) -> None:
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        batch = views[:_IOV_MAX]
        written = os.pwritev(fd, batch, position)
        position += written
        # Drop what was written, keeping the unwritten part of a partly written buffer.
        i = 0
        while i < len(batch) and written >= batch[i].nbytes:
            written -= batch[i].nbytes
            i += 1
        views = views[i:]
        if written:
            views[0] = views[0][written:]


@dataclass(slots=True)
class PendingAppend:
    """Bytes written past the committed end and the index entries they need."""

    end: int
    offset_entries: list[tuple[int, int]]
    time_entries: list[tuple[int, int]]
    bytes_since_index: int
    max_timestamp: int
    offset_of_max_timestamp: int
    next_offset: int
    first_batch_timestamp: int | None
    batches: int


class LogSegment(SegmentFiles):
    """A segment file plus its indexes; all mutation happens under the partition lock."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        log: SharedFile,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        config: LogConfig,
        created_ms: int,
        files: OpenFiles | None = None,
    ) -> None:
        super().__init__(log, offset_index, time_index, files)
        self.directory = directory
        self.base_offset = base_offset
        self._interval = config.index_interval_bytes
        self._index_bytes = config.segment_index_bytes
        self.created_ms = created_ms
        self.last_modified_ms = created_ms
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self._bytes_since_index = 0
        self.dirty = False
        self._join_lru()

    # -- files ---------------------------------------------------------------------------

    @staticmethod
    def paths(directory: Path, base_offset: int, suffix: str = "") -> tuple[Path, Path, Path]:
        """The log, offset index and time index files; ``suffix`` (the cleaner's
        ``.cleaned`` or ``.swap``) follows each name."""
        name = segment_name(base_offset)
        return (
            directory / (name + LOG_SUFFIX + suffix),
            directory / (name + INDEX_SUFFIX + suffix),
            directory / (name + TIME_INDEX_SUFFIX + suffix),
        )

    @property
    def log_path(self) -> Path:
        return self.paths(self.directory, self.base_offset)[0]

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        suffix: str = "",
        files: OpenFiles | None = None,
    ) -> LogSegment:
        log_path, index_path, time_path = cls.paths(directory, base_offset, suffix)
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(log_path, flags, 0o644)
        try:
            oi = OffsetIndex.create(index_path, base_offset, config.segment_index_bytes)
        except BaseException:
            os.close(fd)
            raise
        try:
            ti = TimeIndex.create(time_path, base_offset, config.segment_index_bytes)
        except BaseException:
            os.close(fd)
            oi.close()
            raise
        shared = SharedFile(fd, str(log_path))
        seg = cls(directory, base_offset, shared, oi, ti, config, now_ms, files)
        seg.dirty = True
        return seg

    @classmethod
    def open_existing(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        files: OpenFiles | None = None,
        names: frozenset[str] | None = None,
    ) -> tuple[LogSegment, bool]:
        """Open the files as they are; returns the segment and whether its indexes are sane.
        ``names``: the folder's listing, if the caller has it (else the indexes are looked
        for).

        Insane or missing indexes are replaced by empty ones: the caller must rebuild them.
        """
        # Plain strings, not Paths: loading opens thousands of segments.
        name = segment_name(base_offset)
        stem = os.path.join(directory, name)
        log_path, index_path, time_path = (
            stem + LOG_SUFFIX,
            stem + INDEX_SUFFIX,
            stem + TIME_INDEX_SUFFIX,
        )
        fd = os.open(log_path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        st = os.fstat(fd)
        if names is not None:
            sane = name + INDEX_SUFFIX in names and name + TIME_INDEX_SUFFIX in names
        else:
            sane = os.path.exists(index_path) and os.path.exists(time_path)
        oi: OffsetIndex | None = None
        ti: TimeIndex | None = None
        try:
            if sane:
                try:
                    oi = OffsetIndex.open(
                        index_path, base_offset, config.segment_index_bytes, log_size=st.st_size
                    )
                    ti = TimeIndex.open(time_path, base_offset, config.segment_index_bytes)
                except CorruptIndex:
                    sane = False
                    if oi is not None:
                        oi.close()
                    oi = ti = None
            if oi is None or ti is None:
                oi = OffsetIndex.create(index_path, base_offset, config.segment_index_bytes)
                ti = TimeIndex.create(time_path, base_offset, config.segment_index_bytes)
        except BaseException:
            os.close(fd)
            if oi is not None:
                oi.close()
            raise
        seg = cls(
            directory,
            base_offset,
            SharedFile(fd, log_path),
            oi,
            ti,
            config,
            now_ms,
            files,
        )
        seg.size = st.st_size
        seg.last_modified_ms = int(st.st_mtime * 1000)
        return seg, sane

    # -- appending -----------------------------------------------------------------------

    def _plan(self, batches: Iterable[tuple[int, BatchHeader]], end: int) -> PendingAppend:
        bytes_since = self._bytes_since_index
        max_ts, offset_of_max = self.max_timestamp, self.offset_of_max_timestamp
        last = self.time_index.last_entry()
        last_time = last[0] if last else -1
        first_ts = self.first_batch_timestamp
        next_offset = self.next_offset
        offset_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        count = 0
        for position, h in batches:
            if first_ts is None:
                first_ts = h.max_timestamp
            if h.max_timestamp > max_ts:
                max_ts, offset_of_max = h.max_timestamp, h.base_offset
            if bytes_since > self._interval:
                offset_entries.append((h.last_offset, position))
                if max_ts > last_time:
                    time_entries.append((max_ts, offset_of_max))
                    last_time = max_ts
                bytes_since = 0
            bytes_since += h.size
            next_offset = h.next_offset
            count += 1
        return PendingAppend(
            end=end,
            offset_entries=offset_entries,
            time_entries=time_entries,
            bytes_since_index=bytes_since,
            max_timestamp=max_ts,
            offset_of_max_timestamp=offset_of_max,
            next_offset=next_offset,
            first_batch_timestamp=first_ts,
            batches=count,
        )

    def write(self, stamped: StampedRecords) -> PendingAppend:
        """Write the batches after the committed end; nothing is visible until ``commit``.

        On OSError the file and indexes are truncated back before the error propagates.
        """
        position = self.size
        placed = []
        for h in stamped.headers:
            placed.append((position, h))
            position += h.size
        pending = self._plan(placed, position)
        with self.opened():
            try:
                self.dirty = True
                _pwritev_all(self.fd, stamped.parts, self.size)
                self.offset_index.write(pending.offset_entries)
                self.time_index.write(pending.time_entries)
            except OSError as exc:
                try:
                    self.rollback()
                except OSError as rollback_exc:
                    raise SegmentDamaged(f"{self.log_path}: rollback failed") from rollback_exc
                raise exc from None
        return pending

    def rollback(self) -> None:
        """Truncate the file and indexes back to what is committed."""
        with self.opened():
            os.ftruncate(self.fd, self.size)
            self.offset_index.rollback()
            self.time_index.rollback()

    def commit(self, pending: PendingAppend, now_ms: int | None = None) -> None:
        self.offset_index.commit(pending.offset_entries)
        self.time_index.commit(pending.time_entries)
        self._bytes_since_index = pending.bytes_since_index
        self.max_timestamp = pending.max_timestamp
        self.offset_of_max_timestamp = pending.offset_of_max_timestamp
        self.next_offset = pending.next_offset
        self.first_batch_timestamp = pending.first_batch_timestamp
        self.size = pending.end
        if now_ms is not None:
            self.last_modified_ms = now_ms

    def seal(self) -> None:
        """The segment stops being active: record its max timestamp in the time index."""
        last = self.time_index.last_entry()
        if self.max_timestamp > (last[0] if last else -1):
            entry = [(self.max_timestamp, self.offset_of_max_timestamp)]
            with self.opened():
                try:
                    self.time_index.write(entry)
                except OSError:
                    self.time_index.rollback()
                    raise
            self.time_index.commit(entry)
            self.dirty = True

    def flush(self) -> None:
        """fsync what was written since the last flush; a segment the LRU closed in the
        meantime is opened again for it (its writes are in the page cache)."""
        if self.dirty:
            with self.opened():
                os.fsync(self.fd)
                self.offset_index.flush()
                self.time_index.flush()
            self.dirty = False

    # -- decisions the log asks about ----------------------------------------------------

    @property
    def roll_basis_ms(self) -> int:
        """Kafka's rolling basis: the first batch's max timestamp, else creation time."""
        ts = self.first_batch_timestamp
        return ts if ts is not None and ts >= 0 else self.created_ms

    @property
    def largest_timestamp(self) -> int:
        """For time retention: the max timestamp, else the last modification time."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def should_roll(
        self, config: LogConfig, batch_bytes: int, last_offset: int, now_ms: int
    ) -> bool:
        if self.size == 0:
            return False
        return (
            self.size > config.segment_bytes - batch_bytes
            or now_ms - self.roll_basis_ms > config.roll_ms
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.offset_index.can_hold(last_offset)
        )

    # -- reading -------------------------------------------------------------------------

    def find_batch(self, fd: int, offset: int, size: int) -> tuple[int, BatchHeader] | None:
        """The first batch within ``size`` bytes whose offsets reach ``offset``."""
        _, position = self.offset_index.lookup(offset)
        if position > size:
            position = 0
        while position < size:
            h = read_header(fd, position)
            if h is None or position + h.size > size:
                return None
            if h.next_offset > offset:
                return position, h
            position += h.size
        return None

    def read_batch(self, fd: int, position: int, header: BatchHeader) -> bytes:
        return pread_exact(fd, header.size, position)

    # -- loading -------------------------------------------------------------------------

    @with_log_file
    def load_tail(self) -> bool:
        """Restore in-memory state from sane indexes and a walk of the last batches.

        Returns False when the walk meets a torn or malformed batch (recovery is needed).
        """
        last_time = self.time_index.last_entry()
        start = 0
        if last_time is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time
            start = self.offset_index.lookup(last_time[1])[1]
        last_index = self.offset_index.last_entry()
        if last_index is not None:
            start = min(start, last_index[1]) if last_time is not None else last_index[1]
        if start > 0:
            first = read_header(self.fd, 0)
            self.first_batch_timestamp = first.max_timestamp if first else None
        scanner = BatchScanner(
            self.fd,
            start=start,
            end=self.size,
            segment_base_offset=self.base_offset,
            min_offset=self.base_offset,
            verify_crc=False,
        )
        for _position, h in scanner:
            if self.first_batch_timestamp is None:
                self.first_batch_timestamp = h.max_timestamp
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.base_offset
            self.next_offset = h.next_offset
        if scanner.problem is not None:
            return False
        self._bytes_since_index = self.size - (last_index[1] if last_index else 0)
        return True

    @with_log_file
    def load_sealed(self, next_segment_base: int) -> bool:
        """Restore the state of a rolled segment from its indexes alone: ``seal`` left its
        max timestamp as the last time index entry. Falls back to ``load_tail``."""
        last_time = self.time_index.last_entry()
        if last_time is None:
            return self.load_tail()
        self.max_timestamp, self.offset_of_max_timestamp = last_time
        self.next_offset = next_segment_base
        first = read_header(self.fd, 0)
        self.first_batch_timestamp = first.max_timestamp if first else None
        return True

    @with_files
    def rebuild(self, *, verify_crc: bool, min_offset: int) -> tuple[bool, int, int]:
        """Walk the whole file, rebuilding both indexes and the in-memory state.

        With ``verify_crc`` every batch is checked and the file is cut after the last sound
        batch. Returns (sound, bytes cut, batches walked); without ``verify_crc`` nothing is
        cut and ``sound`` False asks for a verifying rebuild.
        """
        file_size = self.size
        self.offset_index.close()
        self.offset_index = OffsetIndex.create(
            self.offset_index.path, self.base_offset, self._index_bytes
        )
        self.time_index.close()
        self.time_index = TimeIndex.create(
            self.time_index.path, self.base_offset, self._index_bytes
        )
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.first_batch_timestamp = None
        self._bytes_since_index = 0
        scanner = BatchScanner(
            self.fd,
            start=0,
            end=file_size,
            segment_base_offset=self.base_offset,
            min_offset=max(min_offset, self.base_offset),
            verify_crc=verify_crc,
        )
        chunk: list[tuple[int, BatchHeader]] = []
        for item in scanner:
            chunk.append(item)
            if len(chunk) >= _REBUILD_CHUNK:
                self._apply_rebuilt(chunk, scanner.valid_end)
                chunk = []
        self._apply_rebuilt(chunk, scanner.valid_end)
        self.dirty = True
        if scanner.problem is None:
            return True, 0, scanner.batches
        if not verify_crc:
            return False, 0, scanner.batches
        os.ftruncate(self.fd, scanner.valid_end)
        return False, file_size - scanner.valid_end, scanner.batches

    def _apply_rebuilt(self, chunk: list[tuple[int, BatchHeader]], end: int) -> None:
        pending = self._plan(chunk, end if not chunk else chunk[-1][0] + chunk[-1][1].size)
        self.offset_index.write(pending.offset_entries)
        self.time_index.write(pending.time_entries)
        self.commit(pending)

    # -- truncation ----------------------------------------------------------------------

    @with_log_file
    def cut_point(self, offset: int) -> tuple[int, int]:
        """Where the segment ends once every batch with an offset at or after ``offset``
        is gone: (byte position, next offset). The next offset is the base offset when no
        batch stays."""
        start = self.offset_index.lookup(offset - 1)[1] if offset > self.base_offset else 0
        for position in dict.fromkeys((start, 0)):  # an unexpected index entry: walk all
            end_offset = self.base_offset
            while position < self.size:
                h = read_header(self.fd, position)
                if h is None or position + h.size > self.size or h.last_offset >= offset:
                    break
                end_offset = h.next_offset
                position += h.size
            if end_offset > self.base_offset or position == 0:
                return position, end_offset
        return 0, self.base_offset

    @with_files
    def truncate(self, position: int) -> None:
        """Cut the file at ``position`` (a batch boundary, ``cut_point``), rebuild both
        indexes by a walk and fsync. Concurrent readers of an older view read less."""
        if position < self.size:
            os.ftruncate(self.fd, position)
            self.size = position
        sound, _, _ = self.rebuild(verify_crc=False, min_offset=self.base_offset)
        if not sound:
            self.rebuild(verify_crc=True, min_offset=self.base_offset)
        self.flush()

    # -- end of life ---------------------------------------------------------------------

    def delete(self) -> None:
        """Close and unlink the files (data stays readable through open handles)."""
        self.close()
        for path in self.paths(self.directory, self.base_offset):
            path.unlink(missing_ok=True)
        txn_index_path(self.directory, self.base_offset).unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.size}, next={self.next_offset})"


def _scan_from(
    segments: Iterable[LogSegment], offset: int
) -> Iterator[tuple[LogSegment, int, BatchHeader]]:
    """(segment, position, header) of every batch ending at or after ``offset``, read
    by header only (no CRC check)."""
    for seg in segments:
        if seg.next_offset <= offset or seg.size == 0:
            continue
        with seg.opened(full=False):
            scanner = BatchScanner(
                seg.fd,
                start=0,
                end=seg.size,
                segment_base_offset=seg.base_offset,
                min_offset=0,
                verify_crc=False,
            )
            for position, header in scanner:
                if header.last_offset >= offset:
                    yield seg, position, header


def headers_from(segments: Iterable[LogSegment], offset: int) -> Iterator[BatchHeader]:
    """Batch headers of every batch ending at or after ``offset`` (headers only)."""
    for _, _, header in _scan_from(segments, offset):
        yield header


def batches_from(
    segments: Iterable[LogSegment], offset: int
) -> Iterator[tuple[BatchHeader, EndTxnMarker | None, int]]:
    """(header, transaction marker of a control batch, segment base offset) of every
    producer's batch ending at or after ``offset``: what producer state is rebuilt from
    (only control batches are read beyond their header)."""
    for seg, position, header in _scan_from(segments, offset):
        if header.producer_id < 0:
            continue
        marker = None
        if header.is_control:
            marker = read_marker(seg.read_batch(seg.fd, position, header))
        yield header, marker, seg.base_offset
