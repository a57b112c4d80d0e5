"""The log of one partition: ordered segments in ``<topic>-<partition>/``.

Owns: offset assignment and appends (serialized by a lock, rolled by size, time and index
capacity, fsynced every ``flush.messages``), the log start offset (DeleteRecords,
retention), recovery point, checkpoint, leader epochs (``leader_epochs``), closing,
deleting, swapping in cleaned segments; and the reads, lock-free, on the immutable
``LogView`` it publishes after each change (the reading itself is ``log_view``'s: whole
committed batches as ``FileRegion``s, timestamp lookups). A reader sees only batches fully
written (and fsynced, when the flush policy asks) before the view was published. Every
public method is thread-safe: the server calls them from worker threads. Failures of the
disk become ``LogStorageError``; a failed append is truncated away before the error is
raised; if even that fails, the log goes offline (every call raises). It must not validate
producers' batches (``records.validate_batches`` does) nor know about topics, requests or
trio.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from trio_broker.protocol.primitives import FileRegion
from trio_broker.records.stamping import assign_offsets
from trio_broker.records.validation import ValidatedRecords

from .checkpoint import PartitionCheckpoint, read_checkpoint, write_checkpoint
from .config import LogConfig
from .errors import LogClosed, LogStorageError, OffsetOutOfRange
from .files import fsync_dir
from .leader_epochs import LeaderEpochCache
from .loader import LoadStats, load_segments
from .log_view import (
    LogView,
    SegmentGone,
    max_timestamp_in,
    offset_for_timestamp,
    read_batches,
)
from .producer_state import ProducerStateManager
from .results import AppendInfo, ReadInfo
from .retention import segments_to_delete
from .segment import LogSegment, SegmentDamaged, headers_from
from .swap import commit_cleaned, discard_cleaned, install_swap

logger = logging.getLogger(__name__)

_READ_RETRIES = 8


class PartitionLog:
    """Segments of one partition on disk. Create with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        stats: LoadStats,
        now_ms: int,
    ) -> None:
        self.directory = directory
        self._config = config
        self._lock = threading.Lock()
        self._segments = segments
        self._log_start = log_start_offset
        self._recovery_point = recovery_point
        self.load_stats = stats
        self._checkpointed = read_checkpoint(directory)
        self._unflushed = 0
        self._last_flush_ms = now_ms
        self._dir_dirty = False
        self._closed = False
        self._offline: str | None = None
        self._seg_tuple: tuple[LogSegment, ...] = ()
        self._bases: tuple[int, ...] = ()
        self._segments_changed()
        self._producers = ProducerStateManager(directory)
        self._epochs = LeaderEpochCache(directory)
        # Told how long each fsync took, in ms (the broker's LogFlushRateAndTimeMs).
        self.flush_listener: Callable[[float], None] | None = None

    @classmethod
    def open(
        cls, directory: Path | str, config: LogConfig, *, recover: bool, now_ms: int
    ) -> PartitionLog:
        """Load (or create) the log in ``directory``.

        ``recover`` False trusts the files (clean shutdown); True CRC-checks everything
        after the recovery point and cuts a torn or corrupt tail.
        """
        directory = Path(directory)
        try:
            loaded = load_segments(directory, config, recover=recover, now_ms=now_ms)
            fsync_dir(directory)
        except OSError as exc:
            raise LogStorageError(f"{directory}: cannot load the log: {exc}") from exc
        log = cls(
            directory,
            config,
            loaded.segments,
            loaded.log_start_offset,
            loaded.recovery_point,
            loaded.stats,
            now_ms,
        )
        log.checkpoint()
        try:
            log._load_producer_state(now_ms)
            end = log._segments[-1].next_offset
            headers = headers_from(log._segments, log._log_start)  # read if the file is lost
            log._epochs = LeaderEpochCache.load(directory, headers, log._log_start, end)
        except OSError as exc:
            raise LogStorageError(
                f"{directory}: cannot load producer state or leader epochs: {exc}"
            ) from exc
        return log

    def _load_producer_state(self, now_ms: int) -> None:
        """Newest snapshot at or below the log end, then replay the headers after it."""
        log_end = self._segments[-1].next_offset
        start = self._producers.load_latest(log_end)
        if start is None:
            start = self._log_start
        self._producers.replay(headers_from(self._segments, start), now_ms)
        self._producers.truncate_head(self._log_start)

    # -- state -------------------------------------------------------------------------

    def _segments_changed(self) -> None:
        self._seg_tuple = tuple(self._segments)
        self._bases = tuple(s.base_offset for s in self._segments)
        self._publish()

    def _publish(self) -> None:
        active = self._segments[-1]
        self._view = LogView(
            self._seg_tuple, self._bases, active.size, self._log_start, active.next_offset
        )

    @property
    def config(self) -> LogConfig:
        return self._config

    def reconfigure(self, config: LogConfig) -> None:
        """Use ``config`` from now on (index settings apply to new segments)."""
        with self._lock:
            self._config = config

    @property
    def log_start_offset(self) -> int:
        return self._view.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._view.log_end_offset

    @property
    def high_watermark(self) -> int:
        """A single replica: everything appended is committed."""
        return self._view.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """No transactions yet: the high watermark."""
        return self._view.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def unflushed_messages(self) -> int:
        return self._unflushed

    @property
    def size_bytes(self) -> int:
        view = self._view
        return sum(view.size_of(i) for i in range(len(view.segments)))

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        return self._view.bases

    @property
    def view(self) -> LogView:
        """The latest published picture of the log (the cleaner reads sealed segments)."""
        return self._view

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def offline(self) -> bool:
        return self._offline is not None

    def _check_usable(self) -> None:
        if self._closed:
            raise LogClosed(f"{self.directory.name}: log is closed")
        if self._offline is not None:
            raise LogStorageError(f"{self.directory.name}: log is offline: {self._offline}")

    def _storage_error(self, what: str, exc: OSError) -> LogStorageError:
        if isinstance(exc, SegmentDamaged):
            self._offline = str(exc)
            logger.error("%s: %s failed and could not be undone: %s", self.directory, what, exc)
        return LogStorageError(f"{self.directory.name}: {what} failed: {exc}")

    # -- appending ---------------------------------------------------------------------

    def append(self, records: ValidatedRecords, *, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Assign offsets to validated batches and append them; returns where they went."""
        with self._lock:
            return self._append_locked(records, leader_epoch, now_ms)

    def _append_locked(
        self, records: ValidatedRecords, leader_epoch: int, now_ms: int
    ) -> AppendInfo:
        self._check_usable()
        config = self._config
        log_end = self._segments[-1].next_offset
        rolled = False
        if self._segments[-1].should_roll(
            config, records.size, log_end + records.record_count - 1, now_ms
        ):
            rolled = self._roll_locked(now_ms)
        # The sequence rules (raise ProducerStateError); a retry gets its earlier batch.
        duplicate = self._producers.check_append([b.header for b in records.batches])
        if duplicate is not None:
            return AppendInfo(
                first_offset=duplicate.first_offset,
                last_offset=duplicate.last_offset,
                log_append_time_ms=-1,
                log_start_offset=self._log_start,
                record_count=0,
                size_bytes=0,
                max_timestamp=duplicate.max_timestamp,
                offset_of_max_timestamp=duplicate.first_offset,
                duplicate=True,
            )
        try:
            self._epochs.assign(leader_epoch, log_end)  # durably, before the batch
        except OSError as exc:
            raise self._storage_error("leader epoch checkpoint", exc) from exc
        active = self._segments[-1]
        append_time = now_ms if config.message_timestamp_type == "LogAppendTime" else None
        stamped = assign_offsets(
            records,
            base_offset=log_end,
            leader_epoch=leader_epoch,
            log_append_time_ms=append_time,
        )
        try:
            pending = active.write(stamped)
        except OSError as exc:
            raise self._storage_error("append", exc) from exc
        flush = self._unflushed + records.record_count >= config.flush_interval_messages
        if flush:
            try:
                self._fsync_locked()
            except OSError as exc:
                error: OSError = exc
                try:
                    active.rollback()
                except OSError as rollback_exc:
                    error = SegmentDamaged(f"rollback failed: {rollback_exc}")
                raise self._storage_error("flush", error) from exc
        active.commit(pending, now_ms)
        for header in stamped.headers:
            if header.producer_id >= 0:
                self._producers.update(header, now_ms)
        if flush:
            self._recovery_point = stamped.last_offset + 1
            self._unflushed = 0
            self._last_flush_ms = now_ms
        else:
            self._unflushed += records.record_count
        self._publish()
        return AppendInfo(
            first_offset=stamped.first_offset,
            last_offset=stamped.last_offset,
            log_append_time_ms=-1 if append_time is None else append_time,
            log_start_offset=self._log_start,
            record_count=records.record_count,
            size_bytes=stamped.size,
            max_timestamp=stamped.max_timestamp,
            offset_of_max_timestamp=stamped.offset_of_max_timestamp,
            rolled=rolled,
        )

    def _roll_locked(self, now_ms: int) -> bool:
        active = self._segments[-1]
        if active.size == 0:
            return False
        try:
            active.seal()
            new = LogSegment.create(self.directory, active.next_offset, self._config, now_ms)
        except OSError as exc:
            raise self._storage_error("roll", exc) from exc
        self._segments.append(new)
        self._dir_dirty = True
        self._segments_changed()
        try:
            self._producers.take_snapshot(new.base_offset)
        except OSError as exc:
            logger.warning("%s: producer state snapshot failed: %s", self.directory, exc)
        return True

    def maybe_roll(self, now_ms: int) -> bool:
        """Roll the active segment if it is older than ``segment.ms``."""
        with self._lock:
            self._check_usable()
            active = self._segments[-1]
            if active.size and now_ms - active.roll_basis_ms > self._config.roll_ms:
                return self._roll_locked(now_ms)
            return False

    def roll(self, now_ms: int) -> bool:
        """Roll now (if the active segment holds anything)."""
        with self._lock:
            self._check_usable()
            return self._roll_locked(now_ms)

    # -- durability --------------------------------------------------------------------

    def _fsync_locked(self) -> None:
        began = time.perf_counter()
        start = max(0, bisect_right(self._bases, self._recovery_point) - 1)
        for seg in self._segments[start:]:
            seg.flush()
        if self._dir_dirty:
            fsync_dir(self.directory)
            self._dir_dirty = False
        listener = self.flush_listener
        if listener is not None:
            listener((time.perf_counter() - began) * 1000)

    def flush(self, now_ms: int | None = None) -> None:
        """fsync everything appended so far; the recovery point moves to the log end."""
        with self._lock:
            self._check_usable()
            self._flush_locked(now_ms)

    def _flush_locked(self, now_ms: int | None) -> None:
        try:
            self._fsync_locked()
        except OSError as exc:
            raise self._storage_error("flush", exc) from exc
        self._recovery_point = self._segments[-1].next_offset
        self._unflushed = 0
        if now_ms is not None:
            self._last_flush_ms = now_ms

    def flush_if_due(self, now_ms: int) -> bool:
        """Flush when ``flush.ms`` has passed since the last flush and data is unflushed."""
        interval = self._config.flush_interval_ms
        if interval is None or self._unflushed == 0 or now_ms - self._last_flush_ms < interval:
            return False
        with self._lock:
            self._check_usable()
            self._flush_locked(now_ms)
        return True

    def checkpoint(self) -> None:
        """Persist the recovery point and log start offset if they changed."""
        with self._lock:
            self._checkpoint_locked()

    def _checkpoint_locked(self) -> None:
        current = PartitionCheckpoint(self._recovery_point, self._log_start)
        if current == self._checkpointed:
            return
        try:
            write_checkpoint(self.directory, current)
        except OSError as exc:
            raise self._storage_error("checkpoint", exc) from exc
        self._checkpointed = current

    # -- reading -----------------------------------------------------------------------

    def _snapshot(self) -> LogView:
        self._check_usable()
        return self._view

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one_batch: bool = True,
        max_offset: int | None = None,
    ) -> ReadInfo:
        """Whole batches from the one holding ``fetch_offset``, up to ``max_bytes``.

        The first batch is returned even when larger than ``max_bytes`` if
        ``min_one_batch``. Only batches ending at or before ``max_offset`` (exclusive
        bound, e.g. the high watermark) are returned. Raises ``OffsetOutOfRange`` outside
        [log start, log end]. The caller owns the regions and must release them.
        """
        for _ in range(_READ_RETRIES):
            view = self._snapshot()
            if not view.log_start_offset <= fetch_offset <= view.log_end_offset:
                raise OffsetOutOfRange(fetch_offset, view.log_start_offset, view.log_end_offset)
            limit = (
                view.log_end_offset if max_offset is None else min(max_offset, view.log_end_offset)
            )
            regions: list[FileRegion] = []
            try:
                next_offset = read_batches(
                    view, fetch_offset, max_bytes, min_one_batch, limit, regions
                )
            except SegmentGone:
                for region in regions:
                    region.release()
                continue
            except OSError as exc:
                for region in regions:
                    region.release()
                raise self._storage_error("read", exc) from exc
            return ReadInfo(
                regions=regions,
                size_bytes=sum(r.length for r in regions),
                next_fetch_offset=next_offset,
                high_watermark=view.log_end_offset,
                last_stable_offset=view.log_end_offset,
                log_start_offset=view.log_start_offset,
                log_end_offset=view.log_end_offset,
            )
        raise LogStorageError(f"{self.directory.name}: read kept racing with deletions")

    # -- lookups: timestamps, leader epochs ---------------------------------------------

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """The earliest (offset, timestamp) whose timestamp is >= ``timestamp``, exact per
        record (compressed batches are decompressed). None if no record is that recent."""
        return self._lookup(lambda view: offset_for_timestamp(view, timestamp))

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        return self._lookup(max_timestamp_in)

    def _lookup(self, find: Callable[[LogView], tuple[int, int] | None]) -> tuple[int, int] | None:
        for _ in range(_READ_RETRIES):
            try:
                return find(self._snapshot())
            except SegmentGone:
                continue
            except OSError as exc:
                raise self._storage_error("timestamp lookup", exc) from exc
        raise LogStorageError(f"{self.directory.name}: lookup kept racing with deletions")

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch (``LeaderEpochCache.end_offset_for``). Lock-free."""
        return self._epochs.end_offset_for(epoch, self._view.log_end_offset)

    # -- deletion ----------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (<= high watermark) and
        delete the segments wholly below it. Returns the new log start offset."""
        with self._lock:
            self._check_usable()
            log_end = self._segments[-1].next_offset
            if offset < 0 or offset > log_end:
                raise OffsetOutOfRange(offset, self._log_start, log_end)
            if offset <= self._log_start:
                return self._log_start
            self._log_start = offset
            count = 0
            while (
                count < len(self._segments) - 1 and self._segments[count + 1].base_offset <= offset
            ):
                count += 1
            self._remove_oldest_locked(count)
            return self._log_start

    def apply_retention(self, now_ms: int) -> int:
        """Delete old segments by ``retention.ms`` and ``retention.bytes`` when the policy
        has ``delete``, and those below the log start offset (never the active one); the
        log start offset moves. Returns how many segments were deleted."""
        with self._lock:
            if self._closed or self._offline is not None:
                return 0
            count = segments_to_delete(self._segments, self._config, now_ms, self._log_start)
            if count:
                self._remove_oldest_locked(count)
            return count

    def _remove_oldest_locked(self, count: int) -> None:
        removed = self._segments[:count]
        del self._segments[:count]
        self._log_start = max(self._log_start, self._segments[0].base_offset)
        self._segments_changed()
        self._checkpoint_locked()
        self._producers.truncate_head(self._log_start)
        try:
            self._epochs.trim_start(self._log_start)
        except OSError as exc:  # rewritten at the next change or load; never understates
            logger.warning("%s: leader epoch checkpoint: %s", self.directory, exc)
        for segment in removed:
            try:
                segment.delete()
            except OSError as exc:  # the checkpoint already excludes it
                logger.warning("%s: could not delete %s: %s", self.directory, segment, exc)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``."""
        with self._lock:
            return self._producers.remove_expired(now_ms, expiration_ms)

    def last_producer_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the cleaner keeps that batch)."""
        with self._lock:
            return {pid: e.last_offset for pid, e in self._producers.producers.items()}

    def replace_segment(self, old: LogSegment, now_ms: int) -> bool:
        """Swap the cleaned copy of the sealed segment ``old`` (its ``.cleaned`` files,
        written and fsynced) into place. False, and the copy discarded, if ``old`` is no
        longer a sealed segment of this log (retention deleted it meanwhile)."""
        with self._lock:
            try:
                if self._closed or self._offline or old not in self._segments[:-1]:
                    discard_cleaned(self.directory, old.base_offset)
                    return False
                commit_cleaned(self.directory, old.base_offset)
                install_swap(self.directory, old.base_offset)
                i = self._segments.index(old)
                new, sane = LogSegment.open_existing(
                    self.directory, old.base_offset, self._config, now_ms
                )
                if not (sane and new.load_sealed(self._segments[i + 1].base_offset)):
                    new.rebuild(verify_crc=False, min_offset=new.base_offset)
            except OSError as exc:
                raise self._storage_error("segment swap", SegmentDamaged(str(exc))) from exc
            self._segments[i] = new
            self._segments_changed()
            old.close()  # its files were replaced; readers' handles keep the old data
            return True

    @property
    def producer_count(self) -> int:
        return len(self._producers.producers)

    # -- end of life -------------------------------------------------------------------

    def close(self) -> None:
        """Flush, checkpoint (recovery point = log end) and close. Regions still out keep
        their files open until released."""
        with self._lock:
            if self._closed:
                return
            error: LogStorageError | None = None
            if self._offline is None:
                try:
                    self._flush_locked(None)
                    self._checkpoint_locked()
                    self._producers.take_snapshot(self._segments[-1].next_offset)
                except LogStorageError as exc:
                    error = exc
                except OSError as exc:
                    error = LogStorageError(f"{self.directory.name}: snapshot failed: {exc}")
            self._closed = True
            for segment in self._segments:
                try:
                    segment.close()
                except OSError as exc:
                    logger.warning("%s: closing %s: %s", self.directory, segment, exc)
            if error is not None:
                raise error

    def delete(self) -> None:
        """Close without flushing and remove the folder."""
        with self._lock:
            self._closed = True
            for segment in self._segments:
                with suppress(OSError):
                    segment.close()
            try:
                shutil.rmtree(self.directory)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise LogStorageError(f"{self.directory.name}: delete failed: {exc}") from exc

    def __repr__(self) -> str:
        view = self._view
        return (
            f"PartitionLog({self.directory.name}, start={view.log_start_offset}, "
            f"end={view.log_end_offset}, segments={len(view.segments)})"
        )
