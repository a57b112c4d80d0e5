"""The state of one partition log and the housekeeping done under its lock.

Owns: ``LogCore``, the base of ``PartitionLog``: the segment list and the ``LogView``
published to readers after each change, log start offset, recovery point, high watermark
(a single replica's is its log end; a replicated log's is what the partition says, kept
within the log), the last stable offset (the first offset of the oldest transaction not
yet stable, else the high watermark) and what completing a transaction records (the
aborted transaction index, ``index.transactions``), the checkpoint, fsync and ``flush.messages`` /
``flush.ms``, rolling, removing the oldest segments (retention, DeleteRecords), closing
and deleting; and the rule for failures of the disk: they become ``LogStorageError``; one
that leaves the files unknown, or that is not the exhaustion of a resource that may come
back (``EXHAUSTION_ERRNOS``: a full disk is undone and retried; EIO, EROFS or a folder gone
are not), takes the log offline. Appends, reads, lookups and
truncation are ``partition_log``'s. It must not validate records nor know about topics,
requests or trio.
"""

from __future__ import annotations

import errno
import logging
import shutil
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from .checkpoint import CHECKPOINT_FILE, PartitionCheckpoint, read_checkpoint, write_checkpoint
from .config import LogConfig
from .errors import LogClosed, LogStorageError, OffsetOutOfRange
from .files import fsync_dir
from .index.leader_epochs import LeaderEpochCache
from .index.transactions import AbortedTxn, TxnIndexes
from .loader import LoadStats
from .log_view import LogView
from .open_files import OpenFiles
from .producer_state import CompletedTxn, ProducerStateManager
from .retention import segments_to_delete
from .segment import LogSegment, SegmentDamaged

_ONGOING = 2**63 - 1  # the last offset an ongoing transaction is given in the view
# Failures of a resource that may come back (space, quota, file size, descriptors, memory):
# the operation is undone and the log stays online. Any other OSError takes it offline.
EXHAUSTION_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EMFILE, errno.ENFILE, errno.ENOMEM}
)

logger = logging.getLogger(__name__)


class LogCore:
    """Shared state and locked helpers of a partition log (see ``PartitionLog``)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        stats: LoadStats,
        now_ms: int,
        checkpoint: PartitionCheckpoint | None = None,
        files: OpenFiles | None = None,
        *,
        names: frozenset[str] | None = None,
        own_checkpoint: tuple[PartitionCheckpoint | None] | None = None,
    ) -> None:
        """``names``: the folder's file names if the loader listed them (None: listed
        here); ``own_checkpoint``: ``partition.checkpoint`` if the loader read it, in a
        1-tuple (None: read here)."""
        self.directory = directory
        self._files = files  # the LRU of open segment files (None: all held open)
        self._config = config
        self._lock = threading.Lock()
        self._segments = segments
        self._log_start = log_start_offset
        self._recovery_point = recovery_point
        self.load_stats = stats
        if own_checkpoint is not None:
            self._checkpointed = own_checkpoint[0]
        elif names is not None and CHECKPOINT_FILE not in names:
            self._checkpointed = None
        else:
            self._checkpointed = read_checkpoint(directory)
        self._unflushed = 0
        self._last_flush_ms = now_ms
        self._dir_dirty = False
        self._closed = False
        self._offline: str | None = None
        self._seg_tuple: tuple[LogSegment, ...] = ()
        self._bases: tuple[int, ...] = ()
        self._producers = ProducerStateManager(directory, names)
        self._txn = TxnIndexes(directory)
        self._txn.load((s.base_offset for s in segments), names)
        # (first, last offset) of completed transactions whose marker may not be below
        # the high watermark yet (they hold the last stable offset back until it is).
        self._completed: list[tuple[int, int]] = []
        self._epochs = LeaderEpochCache(directory)
        # False: the only replica, whose high watermark is its log end. True: the
        # partition has other replicas; the high watermark is what ``set_high_watermark``
        # said (the leader's rule, or the leader's word on a follower).
        self.replicated = False
        # How many truncations the log has had: a cleaner pass begun before one does not
        # swap its copies in (``PartitionLog.replace_segments``).
        self.truncations = 0
        cp = checkpoint if checkpoint is not None else self._checkpointed
        hw = log_start_offset if cp is None else cp.high_watermark
        if hw is None:  # a version 0 checkpoint: what was flushed was committed
            hw = cp.recovery_point if cp is not None else log_start_offset
        self._high_watermark = min(max(hw, log_start_offset), segments[-1].next_offset)
        self._segments_changed()
        # Told how long each fsync took, in ms (the broker's LogFlushRateAndTimeMs).
        self.flush_listener: Callable[[float], None] | None = None
        # Told (with this log) when a segment is sealed: the cleaner looks at a compacted
        # log then. Called under the log's lock on the appending thread: it must not block
        # nor raise.
        self.roll_listener: Callable[[LogCore], None] | None = None
        # Told (with this log) when it goes offline: its log dir goes with it. Called on
        # the failing thread, maybe under the log's lock: it must not block nor raise.
        self.offline_listener: Callable[[LogCore], None] | None = None

    # -- state -------------------------------------------------------------------------

    def _segments_changed(self, publish: bool = True) -> None:
        self._seg_tuple = tuple(self._segments)
        self._bases = tuple(s.base_offset for s in self._segments)
        if publish:
            self._publish()

    def _publish(self) -> None:
        active = self._segments[-1]
        end = active.next_offset
        unstable = tuple(self._completed) + tuple(
            (first, _ONGOING) for first in self._producers.ongoing.values()
        )
        self._view = LogView(
            self._seg_tuple,
            self._bases,
            active.size,
            self._log_start,
            end,
            unstable,
            self._txn.entries,
        )

    def _txn_completed(self, done: CompletedTxn, segment_base: int) -> None:
        """A marker ended a transaction: it stays unstable until the high watermark
        passes the marker; an aborted one goes to the segment's transaction index."""
        self._completed.append((done.first_offset, done.last_offset))
        if not done.aborted:
            return
        lso = self._producers.first_unstable_offset
        entry = AbortedTxn(
            done.producer_id,
            done.first_offset,
            done.last_offset,
            done.last_offset + 1 if lso is None else lso,
        )
        try:
            self._txn.append(segment_base, entry)
        except OSError as exc:  # kept in memory; a recovery past it writes it again
            logger.warning("%s: transaction index: %s", self.directory, exc)

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
        """The log end for the only replica; else the stored one, never past the log end."""
        return self._high_watermark_in(self._view)

    def _high_watermark_in(self, view: LogView) -> int:
        if not self.replicated:
            return view.log_end_offset
        return min(self._high_watermark, view.log_end_offset)

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest transaction that is ongoing or whose marker the
        high watermark has not passed, else the high watermark (never above it, never
        below the log start)."""
        return self._last_stable_in(self._view)

    def _last_stable_in(self, view: LogView) -> int:
        return view.last_stable(self._high_watermark_in(view))

    @property
    def aborted_transactions(self) -> tuple[AbortedTxn, ...]:
        """Every aborted transaction the indexes hold, by marker offset."""
        return self._view.aborted

    def set_high_watermark(self, offset: int) -> bool:
        """Store ``offset``, clamped into [log start, log end], as the high watermark of a
        replicated log (it may move down: a follower told a lower one). True if it
        changed. Persisted by ``checkpoint`` and ``close``."""
        with self._lock:
            self._check_usable()
            hw = min(max(offset, self._log_start), self._segments[-1].next_offset)
            changed = hw != self._high_watermark
            self._high_watermark = hw
            if self._completed:
                self._prune_completed(hw)
            return changed

    def _prune_completed(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below ``high_watermark`` are stable."""
        self._completed = [c for c in self._completed if c[1] >= high_watermark]

    def _set_recovery_point(self, offset: int) -> None:
        # The only replica's stored high watermark follows what is flushed: the checkpoint
        # then changes when the recovery point does, not after every append.
        self._recovery_point = offset
        if not self.replicated:
            self._high_watermark = offset

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch of the epoch cache, -1 if none."""
        return self._epochs.latest_epoch

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
    def open_files(self) -> int:
        """The descriptors this log's segments hold open now (with an LRU of open files,
        only those of its recently used segments)."""
        return sum(s.files_open for s in self._view.segments)

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        return self._view.bases

    @property
    def view(self) -> LogView:
        """The latest published picture of the log (the cleaner reads sealed segments)."""
        return self._view

    @property
    def producer_count(self) -> int:
        return len(self._producers.producers)

    def active_producers(self) -> list[tuple[int, int, int, int, int, int]]:
        """(producer id, epoch, last sequence, last batch's max timestamp, coordinator
        epoch, open transaction's first offset or -1) of each producer kept here, for
        DescribeProducers. Takes the log's lock: blocking."""
        with self._lock:
            return [
                (
                    e.producer_id,
                    e.epoch,
                    e.last_seq,
                    e.batches[-1].max_timestamp if e.batches else -1,
                    e.coordinator_epoch,
                    -1 if e.txn_first_offset is None else e.txn_first_offset,
                )
                for e in self._producers.producers.values()
            ]

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
            logger.error("%s: %s failed and could not be undone: %s", self.directory, what, exc)
            self.take_offline(str(exc))
        elif exc.errno not in EXHAUSTION_ERRNOS:
            # The disk or the folder failed (EIO, EROFS, a folder gone: ENOENT), not a
            # resource that may come back: nothing written from now on could be trusted
            # to be there (an unlinked file takes writes), so the log goes offline.
            logger.error("%s: %s failed, the log goes offline: %s", self.directory, what, exc)
            self.take_offline(str(exc))
        return LogStorageError(f"{self.directory.name}: {what} failed: {exc}")

    def take_offline(self, reason: str) -> None:
        """From now on every call raises ``LogStorageError`` (until the log is loaded
        again). Takes no lock: a log's failure takes its log dir's others offline from
        under their own. ``offline_listener`` is told the first time."""
        if self._offline is not None:
            return
        self._offline = reason
        listener = self.offline_listener
        if listener is not None:
            listener(self)

    # -- rolling -----------------------------------------------------------------------

    def _roll_locked(self, now_ms: int) -> bool:
        active = self._segments[-1]
        if active.size == 0:
            return False
        try:
            active.seal()
            new = LogSegment.create(
                self.directory, active.next_offset, self._config, now_ms, files=self._files
            )
        except OSError as exc:
            raise self._storage_error("roll", exc) from exc
        self._segments.append(new)
        self._dir_dirty = True
        self._segments_changed()
        try:
            self._producers.take_snapshot(new.base_offset)
        except OSError as exc:
            logger.warning("%s: producer state snapshot failed: %s", self.directory, exc)
        listener = self.roll_listener
        if listener is not None:
            listener(self)
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
        self._set_recovery_point(self._segments[-1].next_offset)
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
        """Persist the recovery point, log start offset and high watermark if they
        changed."""
        with self._lock:
            self._checkpoint_locked()

    def _checkpoint_locked(self) -> None:
        current = PartitionCheckpoint(
            self._recovery_point, self._log_start, min(self._high_watermark, self._log_end)
        )
        if current == self._checkpointed:
            return
        try:
            write_checkpoint(self.directory, current)
        except OSError as exc:
            raise self._storage_error("checkpoint", exc) from exc
        self._checkpointed = current

    @property
    def _log_end(self) -> int:
        return self._segments[-1].next_offset

    # -- removing the oldest segments --------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (<= high watermark) and
        delete the segments wholly below it. Returns the new log start offset."""
        with self._lock:
            self._check_usable()
            if offset < 0 or offset > self._high_watermark_in(self._view):
                raise OffsetOutOfRange(offset, self._log_start, self._log_end)
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
        has ``delete``, and those below the log start offset (never the active one, nor
        one that would move the log start past the high watermark); the log start offset
        moves. Returns how many segments were deleted."""
        with self._lock:
            if self._closed or self._offline is not None:
                return 0
            count = segments_to_delete(self._segments, self._config, now_ms, self._log_start)
            hw = self._high_watermark_in(self._view)
            while count and self._segments[count].base_offset > max(hw, self._log_start):
                count -= 1
            if count:
                self._remove_oldest_locked(count)
            return count

    def _remove_oldest_locked(self, count: int) -> None:
        removed = self._segments[:count]
        del self._segments[:count]
        self._log_start = max(self._log_start, self._segments[0].base_offset)
        self._high_watermark = max(self._high_watermark, self._log_start)
        self._txn.forget_below(self._segments[0].base_offset)
        self._producers.truncate_head(self._log_start)
        self._segments_changed()
        self._checkpoint_locked()
        try:
            self._epochs.trim_start(self._log_start)
        except OSError as exc:  # rewritten at the next change or load; never understates
            logger.warning("%s: leader epoch checkpoint: %s", self.directory, exc)
        for segment in removed:
            try:
                segment.delete()
            except OSError as exc:  # the checkpoint already excludes it
                logger.warning("%s: could not delete %s: %s", self.directory, segment, exc)

    # -- end of life -------------------------------------------------------------------

    def checkpoint_values(self) -> PartitionCheckpoint:
        """The recovery point, log start offset and high watermark now (what
        ``checkpoint`` writes)."""
        with self._lock:
            return PartitionCheckpoint(
                self._recovery_point, self._log_start, min(self._high_watermark, self._log_end)
            )

    def close(self, *, checkpoint: bool = True, sync_snapshot: bool = True) -> None:
        """Flush, checkpoint (recovery point = log end) and close. Regions still out keep
        their files open until released. ``checkpoint`` False leaves ``partition.checkpoint``
        as it was: the log manager writes the log dir's files for all its logs instead.
        ``sync_snapshot`` False leaves the producer-state snapshot unsynced: the log
        manager syncs them all at once before its clean-shutdown marker."""
        with self._lock:
            if self._closed:
                return
            error: LogStorageError | None = None
            if self._offline is None:
                try:
                    self._flush_locked(None)
                    if checkpoint:
                        self._checkpoint_locked()
                    end = self._segments[-1].next_offset
                    self._producers.take_snapshot(end, sync=sync_snapshot)
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

    def delete(self, *, remove: bool = True) -> None:
        """Close without flushing and remove the folder (``remove`` False: the caller
        removes it later)."""
        with self._lock:
            self._closed = True
            for segment in self._segments:
                with suppress(OSError):
                    segment.close()
            if not remove:
                return
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
