"""Idempotent producers' state in one partition (Kafka's ProducerStateManager).

Owns: for every producer id seen in the partition, its epoch and the metadata of its last
five batches (sequence range and offsets); the sequence checks an append must pass; and
snapshots of that state (``<20-digit offset>.snapshot``, JSON with a CRC-32C, written to a
temporary file and renamed; fsynced with its folder, or at shutdown left to the log
manager's one sync; none when the newest is already at the offset) from which a restart
replays only the log after the snapshot; the list of them is read once and then kept.

The rules, as Kafka's: a batch from an older epoch is INVALID_PRODUCER_EPOCH; a new epoch
must start at sequence 0; within an epoch a batch must follow the last one's sequence, or
it is OUT_OF_ORDER_SEQUENCE_NUMBER — unless it is one of the last five batches again (a
retry after a lost response), which is answered with the offsets it got the first time. A
producer the partition has never seen (or has forgotten) is accepted at any sequence.

Transactions, as Kafka's: a transactional batch (attributes bit 4) opens an ongoing
transaction for its producer, its first offset kept, and a data batch that is not
transactional while one is open is INVALID_TXN_STATE; a transaction marker (a control
batch, ``records.control``) ends it and is answered with a ``CompletedTxn`` (none when
the producer wrote nothing since the last marker). A marker from an older producer epoch
is INVALID_PRODUCER_EPOCH, one whose coordinator epoch is older than the last seen for the
producer TRANSACTION_COORDINATOR_FENCED (both checked on the leader only: a follower takes
the leader's batches as they are); a marker with a newer producer epoch fences the older
one. Snapshots keep each producer's coordinator epoch and ongoing transaction.
Blocking file I/O for snapshots; no trio. Callers hold the partition's lock.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from ..protocol.errors import ErrorCode
from ..records.control import EndTxnMarker
from ..records.header import BatchHeader
from .files import fsync_dir, read_small, write_synced, write_unsynced

CACHED_BATCHES = 5
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"
KEEP_SNAPSHOTS = 2


class ProducerStateError(Exception):
    """An append refused by the sequence rules; carries the Kafka error code."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: its first offset and the marker's (last) offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    last_append_ms: int = -1
    coordinator_epoch: int = -1  # of the last marker
    txn_first_offset: int | None = None  # the ongoing transaction's first offset
    marker_offset: int = -1  # of the last marker

    @property
    def last_seen(self) -> int:
        """The last offset of its last batch, data or marker."""
        return max(self.last_offset, self.marker_offset)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1


def last_sequence(header: BatchHeader) -> int:
    """The sequence of a batch's last record (sequences wrap after 2**31 - 1)."""
    return (header.base_sequence + header.last_offset_delta) % (INT32_MAX + 1)


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (last_seq == INT32_MAX and next_seq == 0)


def _meta_row(b: BatchMeta) -> list[int]:
    return [b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.max_timestamp]


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def _snapshot_offsets(names: Iterable[str]) -> list[int]:
    offsets = []
    for name in names:
        if name.endswith(SNAPSHOT_SUFFIX):
            stem = name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                offsets.append(int(stem))
    return sorted(offsets)


class ProducerStateManager:
    def __init__(self, directory: Path, names: Iterable[str] | None = None) -> None:
        """``names``: the folder's file names if the caller has listed it (else it is
        listed when the snapshots are first needed)."""
        self.directory = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> its open transaction's first offset
        # The offsets of the snapshot files, listed once and then kept as they are written
        # and deleted here (nothing else writes them).
        self._snapshots: list[int] | None = None
        if names is not None:
            self._snapshots = _snapshot_offsets(names)

    @property
    def first_unstable_offset(self) -> int | None:
        """The smallest first offset of the ongoing transactions."""
        return min(self.ongoing.values(), default=None)

    # ----------------------------------------------------------------- checks

    def check_append(
        self,
        headers: list[BatchHeader],
        markers: Sequence[EndTxnMarker | None] | None = None,
    ) -> BatchMeta | None:
        """Check the batches of one append: each transaction marker by ``check_marker``;
        an idempotent producer's append must be one batch (INVALID_RECORD otherwise);
        then as ``check``."""
        for i, h in enumerate(headers):
            marker = markers[i] if markers is not None else None
            if h.is_control and marker is not None and h.producer_id >= 0:
                self.check_marker(h, marker)
        producer_batches = [h for h in headers if h.producer_id >= 0 and not h.is_control]
        if not producer_batches:
            return None
        if len(headers) > 1:
            raise ProducerStateError(
                ErrorCode.INVALID_RECORD,
                "an idempotent produce must hold exactly one record batch per partition",
            )
        return self.check(producer_batches[0])

    def check(self, header: BatchHeader) -> BatchMeta | None:
        """Check one producer batch before it is appended.

        Returns the earlier batch's metadata if this batch is a duplicate of one of the
        producer's last five; raises ``ProducerStateError`` if the sequence rules refuse
        it; returns None if it may be appended.
        """
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        first_seq = header.base_sequence
        epoch = header.producer_epoch
        if epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {epoch} is older than {entry.epoch}",
            )
        if first_seq == NO_SEQUENCE:
            # A coordinator's batch (TxnOffsetCommit's offsets): no sequence to follow,
            # as Kafka skips the check for its coordinators' appends; the epoch counts.
            return None
        if epoch > entry.epoch:
            if first_seq != 0:
                raise ProducerStateError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {header.producer_id}: a new epoch {epoch} must start at "
                    f"sequence 0, not {first_seq}",
                )
            return None
        if entry.txn_first_offset is not None and not header.is_transactional:
            raise ProducerStateError(
                ErrorCode.INVALID_TXN_STATE,
                f"producer {header.producer_id} sent a non-transactional batch while its "
                f"transaction from offset {entry.txn_first_offset} is ongoing",
            )
        last_seq = last_sequence(header)
        for meta in entry.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        current = entry.last_seq
        if current != NO_SEQUENCE and not in_sequence(current, first_seq):
            raise ProducerStateError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} epoch {epoch}: sequence {first_seq} does not "
                f"follow {current}",
            )
        return None

    def check_marker(self, header: BatchHeader, marker: EndTxnMarker) -> None:
        """A leader's transaction marker: not from an older producer epoch
        (INVALID_PRODUCER_EPOCH), not from an older coordinator epoch
        (TRANSACTION_COORDINATOR_FENCED)."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return
        if header.producer_epoch < entry.epoch:
            raise ProducerStateError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"marker of producer {header.producer_id}: epoch {header.producer_epoch} is "
                f"older than {entry.epoch}",
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise ProducerStateError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"marker of producer {header.producer_id}: coordinator epoch "
                f"{marker.coordinator_epoch} is older than {entry.coordinator_epoch}",
            )

    def update(
        self, header: BatchHeader, now_ms: int, marker: EndTxnMarker | None = None
    ) -> CompletedTxn | None:
        """Record a batch that was appended (its header carries its assigned offsets);
        a transaction marker (``marker``, of a control batch) ends the producer's
        transaction: returned, if it had one."""
        if header.producer_id < 0:
            return None
        if header.is_control:
            return None if marker is None else self._end_txn(header, marker, now_ms)
        entry = self.producers.get(header.producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            old = entry
            entry = ProducerEntry(header.producer_id, header.producer_epoch)
            if old is not None:
                entry.coordinator_epoch = old.coordinator_epoch
                entry.txn_first_offset = old.txn_first_offset
                entry.marker_offset = old.marker_offset
            self.producers[header.producer_id] = entry
        if header.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = header.base_offset
            self.ongoing[header.producer_id] = header.base_offset
        if header.base_sequence == NO_SEQUENCE:  # a coordinator's: no sequence kept
            entry.last_append_ms = now_ms
            return None
        entry.batches.append(
            BatchMeta(
                header.base_sequence,
                last_sequence(header),
                header.base_offset,
                header.last_offset,
                header.max_timestamp,
            )
        )
        entry.last_append_ms = now_ms
        return None

    def _end_txn(
        self, header: BatchHeader, marker: EndTxnMarker, now_ms: int
    ) -> CompletedTxn | None:
        pid = header.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = ProducerEntry(pid, header.producer_epoch)
            self.producers[pid] = entry
        elif header.producer_epoch > entry.epoch:  # the marker fences the older epoch
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.marker_offset = header.base_offset
        entry.last_append_ms = now_ms
        first = entry.txn_first_offset
        entry.txn_first_offset = None
        self.ongoing.pop(pid, None)
        if first is None:  # nothing written since the last marker: nothing to complete
            return None
        return CompletedTxn(pid, first, header.base_offset, not marker.commit)

    # ----------------------------------------------------------- housekeeping

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget producers whose every batch now lies before the log start (not those
        with an ongoing transaction)."""
        gone = [
            pid
            for pid, e in self.producers.items()
            if e.last_seen < log_start_offset and e.txn_first_offset is None
        ]
        for pid in gone:
            del self.producers[pid]

    def clear(self) -> None:
        """Forget every producer and delete every snapshot (the log was emptied)."""
        self.producers.clear()
        self.ongoing.clear()
        for offset in self.snapshot_offsets():
            self._delete_snapshot(offset)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms``."""
        gone = [
            pid
            for pid, e in self.producers.items()
            if e.last_append_ms >= 0
            and now_ms - e.last_append_ms >= expiration_ms
            and e.txn_first_offset is None
        ]
        for pid in gone:
            del self.producers[pid]
        return len(gone)

    # -------------------------------------------------------------- snapshots

    def snapshot_offsets(self) -> list[int]:
        if self._snapshots is None:
            self._snapshots = _snapshot_offsets(os.listdir(self.directory))
        return list(self._snapshots)

    def take_snapshot(self, offset: int, *, sync: bool = True) -> bool:
        """Write the state as of ``offset`` (the next offset to be appended); False, and
        nothing written, when the newest snapshot is already at ``offset`` (nothing was
        appended since: Kafka's rule too). ``sync`` False leaves the fsync of the file and
        its folder to the caller (the log manager's one ``os.sync`` at shutdown, before
        the clean-shutdown marker): a snapshot torn by a crash before it is deleted at load
        and the state replayed from the one before, as for any damaged snapshot."""
        known = self.snapshot_offsets()
        if known and known[-1] == offset:
            return False
        body = json.dumps(
            {
                "version": 2,
                "offset": offset,
                "producers": [
                    {
                        "id": e.producer_id,
                        "epoch": e.epoch,
                        "last_append_ms": e.last_append_ms,
                        "coordinator_epoch": e.coordinator_epoch,
                        "txn_first_offset": e.txn_first_offset,
                        "marker_offset": e.marker_offset,
                        "batches": [
                            [
                                b.first_seq,
                                b.last_seq,
                                b.first_offset,
                                b.last_offset,
                                b.max_timestamp,
                            ]
                            for b in e.batches
                        ],
                    }
                    for e in self.producers.values()
                ],
            },
            separators=(",", ":"),
            sort_keys=True,
        )
        text = json.dumps({"crc": crc32c.crc32c(body.encode()), "body": body})
        path = self.directory / snapshot_name(offset)
        tmp = path.with_name(path.name + ".tmp")
        if sync:
            write_synced(tmp, text.encode())
        else:
            write_unsynced(tmp, text.encode())
        os.replace(tmp, path)
        if sync:
            fsync_dir(self.directory)
        self._snapshots = sorted({*known, offset})
        for old in self.snapshot_offsets()[:-KEEP_SNAPSHOTS]:
            self._delete_snapshot(old)
        return True

    def load_latest(self, max_offset: int) -> int | None:
        """Load the newest sound snapshot at or below ``max_offset``; returns its offset.

        Snapshots above ``max_offset`` (the log was cut below them) or damaged are deleted.
        """
        self.producers.clear()
        self.ongoing.clear()
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                self._delete_snapshot(offset)
                continue
            try:
                self._load(os.path.join(self.directory, snapshot_name(offset)))
            except (OSError, ValueError, KeyError, TypeError):
                self.producers.clear()
                self.ongoing.clear()
                self._delete_snapshot(offset)
                continue
            return offset
        return None

    def _load(self, path: str) -> None:
        outer = json.loads(read_small(path))
        body = outer["body"]
        if crc32c.crc32c(body.encode()) != outer["crc"]:
            raise ValueError(f"{os.path.basename(path)}: CRC mismatch")
        data = json.loads(body)
        for p in data["producers"]:
            entry = ProducerEntry(
                p["id"],
                p["epoch"],
                last_append_ms=p["last_append_ms"],
                coordinator_epoch=p.get("coordinator_epoch", -1),
                txn_first_offset=p.get("txn_first_offset"),
                marker_offset=p.get("marker_offset", -1),
            )
            for b in p["batches"]:
                entry.batches.append(BatchMeta(*b))
            self.producers[entry.producer_id] = entry
            if entry.txn_first_offset is not None:
                self.ongoing[entry.producer_id] = entry.txn_first_offset

    def replay(self, headers: Iterable[BatchHeader], now_ms: int) -> None:
        """Rebuild state from data batches after the snapshot (headers only; the log
        replays markers through ``update``)."""
        for header in headers:
            self.update(header, now_ms)

    def _delete_snapshot(self, offset: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.directory / snapshot_name(offset))
        if self._snapshots is not None and offset in self._snapshots:
            self._snapshots.remove(offset)
