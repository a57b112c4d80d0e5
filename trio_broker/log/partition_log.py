"""The log of one partition: ordered segments in ``<topic>-<partition>/``.

Owns: ``PartitionLog`` (on ``log_core.LogCore``, which holds the state, rolling, flushing,
checkpoints, retention and end of life): opening and loading, offset assignment and
appends (serialized by a lock, rolled by size, time and index capacity, fsynced every
``flush.messages``), a follower's appends of the leader's batches as they are, the leader
epochs (``index.leader_epochs``), truncation (a replica cutting what diverged from its leader),
producer state and transactions (replayed, with the aborted transaction index rewritten,
from the newest producer snapshot on every load and truncation), swapping in cleaned
segments; and the reads, lock-free, on the immutable ``LogView`` published after each
change (the reading itself is ``log_view``'s: whole committed batches as ``FileRegion``s,
timestamp lookups). A reader sees only batches fully written (and fsynced, when the flush
policy asks) before the view was published. Every public method is thread-safe: the server
calls them from worker threads. Failures of the disk become ``LogStorageError``; a failed
append is truncated away before the error is raised; if even that fails, the log goes
offline (every call raises). It must not validate producers' batches
(``records.validate_batches`` does) nor know about topics, requests or trio.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from trio_broker.protocol.primitives import FileRegion
from trio_broker.records.control import EndTxnMarker, markers_of
from trio_broker.records.stamping import StampedRecords, as_stored, assign_offsets
from trio_broker.records.validation import ValidatedRecords, stored_batches

from .checkpoint import PartitionCheckpoint, read_first_dirty, write_checkpoint, write_first_dirty
from .config import LogConfig
from .errors import LogStorageError, OffsetOutOfRange, ReplicaGap, ReplicaOverlap
from .files import fsync_dir
from .index.leader_epochs import LeaderEpochCache
from .index.transactions import collect
from .loader import load_segments
from .log_core import LogCore
from .log_view import LogView, SegmentGone, max_timestamp_in, offset_for_timestamp, read_batches
from .open_files import OpenFiles
from .results import AppendInfo, ReadInfo
from .segment import LogSegment, SegmentDamaged, batches_from, headers_from
from .swap import (
    commit_cleaned,
    discard_cleaned,
    install_swap,
    remove_replaced,
    write_cleaned_txn_index,
)

logger = logging.getLogger(__name__)

_READ_RETRIES = 8


class PartitionLog(LogCore):
    """Segments of one partition on disk. Create with ``PartitionLog.open``."""

    @classmethod
    def open(
        cls,
        directory: Path | str,
        config: LogConfig,
        *,
        recover: bool,
        now_ms: int,
        checkpoint: PartitionCheckpoint | None = None,
        files: OpenFiles | None = None,
    ) -> PartitionLog:
        """Load (or create) the log in ``directory``.

        ``recover`` False trusts the files (clean shutdown); True CRC-checks everything
        after the recovery point and cuts a torn or corrupt tail. ``checkpoint`` is the
        log dir's clean-shutdown checkpoint of the partition (``dir_checkpoints``): given,
        it is used instead of ``partition.checkpoint``, which is not rewritten at load.
        ``files``: the LRU of open segment files its segments join (None: they keep their
        files open until closed).
        """
        directory = Path(directory)
        try:
            loaded = load_segments(
                directory,
                config,
                recover=recover,
                now_ms=now_ms,
                checkpoint=checkpoint,
                files=files,
            )
            if loaded.changed:  # (a clean load that made and removed nothing has no need)
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
            checkpoint,
            files,
            names=loaded.names,
            own_checkpoint=(loaded.own_checkpoint,) if loaded.own_checkpoint_read else None,
        )
        try:
            if checkpoint is None and (log._checkpointed is not None or log._log_end > 0):
                log.checkpoint()  # (an empty new log's missing file reads as what it holds)
            log._load_producer_state(now_ms)
            end = log._segments[-1].next_offset
            headers = headers_from(log._segments, log._log_start)  # read if the file is lost
            log._epochs = LeaderEpochCache.load(
                directory, headers, log._log_start, end, names=loaded.names
            )
            log._publish()
        except BaseException as exc:
            for segment in log._segments:  # a log that failed to open holds no descriptor
                segment.close()
            if isinstance(exc, OSError) and not isinstance(exc, LogStorageError):
                raise LogStorageError(
                    f"{directory}: cannot load producer state or leader epochs: {exc}"
                ) from exc
            raise
        return log

    def _load_producer_state(self, now_ms: int) -> None:
        """Newest snapshot at or below the log end, then replay the batches after it:
        the transactions they complete are completed again, the aborted ones written to
        the transaction indexes again (their entries from the snapshot on are dropped
        first), so a crash or a truncation leaves the indexes as the log says."""
        log_end = self._segments[-1].next_offset
        start = self._producers.load_latest(log_end)
        if start is None:
            start = self._log_start
        self._txn.truncate_from(start)
        self._completed = []
        for header, marker, base in batches_from(self._segments, start):
            done = self._producers.update(header, now_ms, marker)
            if done is not None:
                self._txn_completed(done, base)
        self._producers.truncate_head(self._log_start)

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
        log_end = self._log_end
        rolled = self._maybe_roll_for(records.size, log_end + records.record_count - 1, now_ms)
        # The sequence and marker rules (raise ProducerStateError); a retry gets its
        # earlier batch.
        markers = markers_of(records.data, records.batches)
        duplicate = self._producers.check_append([b.header for b in records.batches], markers)
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
        append_time = now_ms if config.message_timestamp_type == "LogAppendTime" else None
        stamped = assign_offsets(
            records,
            base_offset=log_end,
            leader_epoch=leader_epoch,
            log_append_time_ms=append_time,
        )
        self._write_locked(stamped, records.record_count, now_ms, markers)
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

    def _maybe_roll_for(self, size: int, last_offset: int, now_ms: int) -> bool:
        if self._segments[-1].should_roll(self._config, size, last_offset, now_ms):
            return self._roll_locked(now_ms)
        return False

    def _write_locked(
        self,
        stamped: StampedRecords,
        record_count: int,
        now_ms: int,
        markers: list[EndTxnMarker | None] | None = None,
    ) -> None:
        """Write, fsync if ``flush.messages`` says so, commit, update producers, publish."""
        active = self._segments[-1]
        try:
            pending = active.write(stamped)
        except OSError as exc:
            raise self._storage_error("append", exc) from exc
        flush = self._unflushed + record_count >= self._config.flush_interval_messages
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
        for i, header in enumerate(stamped.headers):
            if header.producer_id >= 0:
                marker = markers[i] if markers is not None else None
                done = self._producers.update(header, now_ms, marker)
                if done is not None:
                    self._txn_completed(done, active.base_offset)
        if self._completed and not self.replicated:  # its high watermark is its end
            self._prune_completed(stamped.last_offset + 1)
        if flush:
            self._set_recovery_point(stamped.last_offset + 1)
            self._unflushed = 0
            self._last_flush_ms = now_ms
        else:
            self._unflushed += record_count
        self._publish()

    def append_as_follower(
        self, data: bytes | memoryview, *, now_ms: int, allow_gap: bool = False
    ) -> AppendInfo:
        """Append the leader's batches (a fetch response's records) exactly as it stored
        them: offsets, leader epochs, timestamps and bytes kept; no producer sequence
        checks (producer state is updated from the headers), no size limit.

        Each batch is checked by header and CRC (``records.stored_batches``: a damaged one
        raises ``RecordsError`` and nothing is appended); a partial batch at the end is
        left out. Batches ending below the log end are skipped (already here). If the
        first remaining batch starts above the log end, raises ``ReplicaGap`` unless
        ``allow_gap``: a compacted leader has no batch for offsets its cleaner removed, so
        a fetch at the log end may be answered from a later offset (pass it when the
        response answers a fetch at the current log end; Kafka's follower accepts that).
        A first batch straddling the log end is taken only by an empty log (after
        ``truncate_fully_and_start_at`` inside a batch): the log restarts at the batch's
        base offset, its log start offset kept, as Kafka's follower does; otherwise
        ``ReplicaOverlap``. Leader epochs newer than the latest are recorded, durably,
        before the batches are written. Rolls and flushes as ``append``.

        Returns the offsets appended. When nothing is (an empty or all-duplicate
        response): ``record_count`` 0, ``first_offset`` the log end, ``last_offset`` one
        less, timestamps -1.
        """
        view = memoryview(data)
        batches = stored_batches(view)  # before the lock: CPU only
        with self._lock:
            self._check_usable()
            log_end = self._log_end
            kept = tuple(b for b in batches if b.header.next_offset > log_end)
            if not kept:
                return self._nothing_appended(log_end)
            first = kept[0].header
            if first.base_offset > log_end and not allow_gap:
                raise ReplicaGap(first.base_offset, log_end)
            if first.base_offset < log_end:
                if log_end != self._log_start:
                    raise ReplicaOverlap(first.base_offset, log_end)
                start = self._log_start
                self._truncate_fully_locked(first.base_offset, now_ms, start, publish=False)
            stamped = as_stored(view, kept)
            record_count = sum(b.header.records_count for b in kept)
            rolled = self._maybe_roll_for(stamped.size, stamped.last_offset, now_ms)
            try:  # durably, before the batches
                self._epochs.assign_all(
                    (b.header.partition_leader_epoch, b.header.base_offset) for b in kept
                )
            except OSError as exc:
                raise self._storage_error("leader epoch checkpoint", exc) from exc
            self._write_locked(stamped, record_count, now_ms, markers_of(view, kept))
            return AppendInfo(
                first_offset=stamped.first_offset,
                last_offset=stamped.last_offset,
                log_append_time_ms=-1,
                log_start_offset=self._log_start,
                record_count=record_count,
                size_bytes=stamped.size,
                max_timestamp=stamped.max_timestamp,
                offset_of_max_timestamp=stamped.offset_of_max_timestamp,
                rolled=rolled,
            )

    def _nothing_appended(self, log_end: int) -> AppendInfo:
        return AppendInfo(
            first_offset=log_end,
            last_offset=log_end - 1,
            log_append_time_ms=-1,
            log_start_offset=self._log_start,
            record_count=0,
            size_bytes=0,
            max_timestamp=-1,
            offset_of_max_timestamp=-1,
        )

    def assign_epoch(self, epoch: int) -> None:
        """This replica leads from ``epoch`` on: record (durably) that the epoch starts at
        the log end, if it is newer than the latest (Kafka's leader on election)."""
        with self._lock:
            self._check_usable()
            try:
                self._epochs.assign(epoch, self._log_end)
            except OSError as exc:
                raise self._storage_error("leader epoch checkpoint", exc) from exc

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
                self._wait_for_writer()
                continue
            except OSError as exc:
                for region in regions:
                    region.release()
                raise self._storage_error("read", exc) from exc
            return ReadInfo(
                regions=regions,
                size_bytes=sum(r.length for r in regions),
                next_fetch_offset=next_offset,
                high_watermark=self._high_watermark_in(view),
                last_stable_offset=self._last_stable_in(view),
                log_start_offset=view.log_start_offset,
                log_end_offset=view.log_end_offset,
            )
        raise LogStorageError(f"{self.directory.name}: read kept racing with deletions")

    def aborted_between(self, fetch_offset: int, upper_bound: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        [``fetch_offset``, ``upper_bound``): a read_committed fetch's list. Lock-free."""
        return collect(self._view.aborted, fetch_offset, upper_bound)

    def _wait_for_writer(self) -> None:
        """A segment of the reader's view is gone: the writer deleting it (truncation
        deletes before it publishes, fsyncing in between) has the lock until its new view
        is out. Wait for that rather than retrying on the old view."""
        with self._lock:
            pass

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
                self._wait_for_writer()
                continue
            except OSError as exc:
                raise self._storage_error("timestamp lookup", exc) from exc
        raise LogStorageError(f"{self.directory.name}: lookup kept racing with deletions")

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch (``LeaderEpochCache.end_offset_for``). Lock-free."""
        return self._epochs.end_offset_for(epoch, self._view.log_end_offset)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``."""
        with self._lock:
            return self._producers.remove_expired(now_ms, expiration_ms)

    def last_producer_offsets(self) -> dict[int, int]:
        """Producer id -> last offset of its last batch (the cleaner keeps that batch)."""
        with self._lock:
            return {pid: e.last_offset for pid, e in self._producers.producers.items()}

    def replace_segments(
        self, old: Sequence[LogSegment], now_ms: int, *, truncations: int | None = None
    ) -> bool:
        """Swap the cleaned copy of the consecutive sealed segments ``old`` (the ``.cleaned``
        files at the first one's base offset, written and fsynced) into their place: one
        segment from the first one's base offset to the next segment's, holding the
        group's aborted transaction index entries (``swap`` is the protocol). False, and
        the copy discarded, if they are no longer consecutive sealed segments of this log
        (retention or deletion meanwhile) or, given the ``truncations`` count the cleaner
        began with, if the log was truncated since (a cut segment rolled again is the same
        object with other records)."""
        base = old[0].base_offset
        with self._lock:
            try:
                i = self._group_index(old)
                if i is None or (truncations is not None and truncations != self.truncations):
                    discard_cleaned(self.directory, base)
                    return False
                bases = [s.base_offset for s in old]
                end = self._segments[i + len(old)].base_offset
                for segment in old:  # not to be reopened under their names, soon the copy's
                    segment.close()  # (readers' handles keep the old data; new ones retry)
                write_cleaned_txn_index(self.directory, base, self._txn.of_segments(bases))
                commit_cleaned(self.directory, base)
                remove_replaced(self.directory, bases[1:])
                install_swap(self.directory, base)
                new, sane = LogSegment.open_existing(
                    self.directory, base, self._config, now_ms, self._files
                )
                if not (sane and new.load_sealed(end)):
                    new.rebuild(verify_crc=False, min_offset=new.base_offset)
                    new.next_offset = max(new.next_offset, end)
            except OSError as exc:
                raise self._storage_error("segment swap", SegmentDamaged(str(exc))) from exc
            self._segments[i : i + len(old)] = [new]
            self._txn.merged(bases, base)
            self._segments_changed()
            return True

    def _group_index(self, group: Sequence[LogSegment]) -> int | None:
        """Where ``group`` starts among the sealed segments, if it is still there whole."""
        sealed = self._segments[:-1]
        if not group or group[0] not in sealed:
            return None
        i = sealed.index(group[0])
        if sealed[i : i + len(group)] != list(group):
            return None
        return i

    # -- truncation: a replica cutting what diverged from its leader --------------------

    def truncate_to(self, offset: int) -> bool:
        """Kafka's truncateTo: every batch whose last offset is >= ``offset`` goes; the log
        end becomes the base offset of the batch holding ``offset`` (or the end of the last
        batch before it, when the cleaner left a gap), so <= ``offset``. If ``offset`` >= the
        log end no record goes (False), but leader epochs starting at the log end do. Below
        the log start offset (or when the cut would fall below it, the batch holding
        ``offset`` also holding the log start) it is ``truncate_fully_and_start_at``. True
        if anything was removed.

        The steps, and what a crash after each leaves (the loader makes each whole):
        1. the checkpoint is written with recovery point and high watermark at most the
           new end: the old log loads, the checkpoint understating it;
        2. the segments above the cut are deleted, the highest first: a shorter log loads;
        3. the segment holding the cut is cut, its indexes rebuilt by a walk, fsynced: a
           torn cut or stale indexes are what recovery rebuilds (it walks the last segment);
        4. leader epochs starting at or after the new end are dropped: on load, epochs at
           or past the log end are dropped anyway;
        5. producer snapshots above the new end are deleted and the state rebuilt from the
           newest left: on load, snapshots past the log end are deleted anyway;
        6. the cleaner's checkpoint is clamped to the new end, the folder fsynced, the new
           checkpoint written and the view published. A failure of the disk in 2-6 takes
           the log offline (reopening it loads what the disk holds).
        """
        with self._lock:
            self._check_usable()
            if offset >= self._log_end:
                # As Kafka's: an epoch begun here by a leader that appended nothing before
                # another was elected would be sent as the last fetched epoch for ever.
                try:
                    self._epochs.truncate_from_end(self._log_end)
                except OSError as exc:
                    raise self._storage_error("truncation", SegmentDamaged(str(exc))) from exc
                return False
            if offset < self._log_start:
                self._truncate_fully_locked(offset, _wall_ms())
                return True
            segment = self._segments[bisect_right(self._bases, offset) - 1]
            position, new_end = segment.cut_point(offset)
            if new_end < self._log_start:
                self._truncate_fully_locked(self._log_start, _wall_ms())
                return True
            self._recovery_point = min(self._recovery_point, new_end)
            self._high_watermark = min(self._high_watermark, new_end)
            self._checkpoint_locked()
            self.truncations += 1
            try:
                for gone in reversed(self._segments):
                    if gone is segment:
                        break
                    gone.delete()
                    self._segments.pop()
                segment.truncate(position)
                end = segment.next_offset
                self._segments_changed(publish=False)
                self._epochs.truncate_from_end(end)
                self._load_producer_state(_wall_ms())
                _clamp_first_dirty(self.directory, end)
                fsync_dir(self.directory)
            except OSError as exc:
                raise self._storage_error("truncation", SegmentDamaged(str(exc))) from exc
            self._recovery_point = min(self._recovery_point, end)
            self._high_watermark = min(self._high_watermark, end)
            self._checkpoint_locked()
            self._publish()
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start afresh, empty, at ``offset``: log start, log end,
        recovery point and high watermark all become ``offset``; leader epochs and producer
        state are emptied, their files removed. A crash midway: the epoch file and producer
        snapshots go first (a missing epoch file is rebuilt from what batches remain), then
        the checkpoint says ``offset``, then segments go, the highest first; the loader
        starts afresh at the checkpointed log start when no segment reaches it."""
        with self._lock:
            self._check_usable()
            self._truncate_fully_locked(offset, _wall_ms())

    def _truncate_fully_locked(
        self, offset: int, now_ms: int, log_start: int | None = None, *, publish: bool = True
    ) -> None:
        if offset < 0:
            raise OffsetOutOfRange(offset, self._log_start, self._log_end)
        start = offset if log_start is None else log_start
        self.truncations += 1
        try:
            self._epochs.clear()
            self._producers.clear()
            self._txn.clear()
            self._completed = []
            checkpoint = PartitionCheckpoint(offset, start, start)
            write_checkpoint(self.directory, checkpoint)
            self._checkpointed = checkpoint
            for gone in reversed(self._segments):
                gone.delete()
            self._segments.clear()
            self._segments.append(
                LogSegment.create(self.directory, offset, self._config, now_ms, files=self._files)
            )
            _clamp_first_dirty(self.directory, offset)
            fsync_dir(self.directory)
        except OSError as exc:
            raise self._storage_error("truncation", SegmentDamaged(str(exc))) from exc
        self._log_start = start
        self._recovery_point = offset
        self._high_watermark = start
        self._unflushed = 0
        self._dir_dirty = False
        self._segments_changed(publish)


def _wall_ms() -> int:
    return int(time.time() * 1000)


def _clamp_first_dirty(directory: Path, end: int) -> None:
    """The cleaner's checkpoint must not claim offsets the log no longer holds."""
    first_dirty = read_first_dirty(directory)
    if first_dirty is not None and first_dirty > end:
        write_first_dirty(directory, end)
