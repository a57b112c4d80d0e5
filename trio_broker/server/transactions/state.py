"""One transactional id's state at its coordinator, and the moves Kafka allows between states.

Owns: ``TxnState`` (Kafka's ids, as ``__transaction_state`` stores them), ``TxnMetadata``
(producer id and epoch, the previous ones, the timeout, the state, the partitions of the
ongoing transaction, its times, the transaction version its last end used and, under
transaction version 2, the producer id the producer moves to once its epochs run out) and
the producer checks of its moves (``known_producer``, ``bumped_retry``, ``next_producer``),
``record_of`` / ``metadata_of``, which turn it into
the key and value of a ``__transaction_state`` record and back, and ``latest_of``, the
state of every id a run of such records leaves. Pure data; no I/O.

The states, as Kafka's ``TransactionState``: a new id is EMPTY; its first
AddPartitionsToTxn makes it ONGOING; EndTxn moves it to PREPARE_COMMIT or PREPARE_ABORT
(the outcome is decided), and once every partition has its marker to COMPLETE_COMMIT or
COMPLETE_ABORT, from where the next AddPartitionsToTxn begins again. DEAD is an id being
forgotten (its tombstone). A state change is written to ``__transaction_state`` before it
counts; while one is being written the id is ``pending`` and requests for it are
answered CONCURRENT_TRANSACTIONS (the coordinator waits for an end's writes first).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from ...protocol.errors import CorruptRequest
from ...protocol.messages.txn_records import (
    TransactionLogKey,
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

log = logging.getLogger("trio_broker.transactions")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
# Kafka bumps to a new producer id when the epoch would reach Short.MaxValue.
MAX_PRODUCER_EPOCH = 2**15 - 1

TopicPartition = tuple[str, int]


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """Kafka's name (DescribeTransactions, ListTransactions, the admin API)."""
        return "".join(w.capitalize() for w in self.name.split("_"))

    @property
    def preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.EMPTY)


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    update_ms: int = -1
    # KIP-890 part 2: 2 once an EndTxn v5 ended a transaction (each end bumps the epoch)
    client_tv: int = 0
    # transaction version 2: the producer id the end moves to when the epoch is exhausted
    next_producer_id: int = NO_PRODUCER_ID
    pending: bool = False  # a state change is being written

    def moved(self, **changes: object) -> TxnMetadata:
        """A copy with ``changes`` (never pending: the copy is what is being written)."""
        return replace(self, pending=False, **changes)  # type: ignore[arg-type]


def bumped_retry(meta: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """Whether a transaction version 2 EndTxn comes again from before the bump its first
    try made: the epoch before this id's, or the last epoch of the id it moved from."""
    if meta.client_tv != 2:
        return False
    if producer_id == meta.producer_id:
        return epoch == meta.producer_epoch - 1
    return producer_id == meta.last_producer_id and epoch == MAX_PRODUCER_EPOCH - 1


def next_producer(meta: TxnMetadata) -> tuple[int, int]:
    """The producer id and epoch the producer goes on with after ``meta``'s end."""
    if meta.next_producer_id != NO_PRODUCER_ID:
        return meta.next_producer_id, 0
    return meta.producer_id, meta.producer_epoch


def known_producer(meta: TxnMetadata, expected: tuple[int, int]) -> bool:
    """Whether the (producer id, epoch) a producer gives is this id's current or previous
    one (or the one just before the last bump: its answer may have been lost)."""
    return expected in (
        (meta.producer_id, meta.producer_epoch),
        (meta.producer_id, meta.producer_epoch - 1),
        (meta.last_producer_id, meta.last_producer_epoch),
    )


def record_of(meta: TxnMetadata) -> tuple[bytes, bytes | None]:
    """The key and value of ``meta``'s ``__transaction_state`` record (DEAD: a tombstone)."""
    key = encode_key(TransactionLogKey(transactional_id=meta.transactional_id))
    if meta.state is TxnState.DEAD:
        return key, None
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    value = TransactionLogValue(
        producer_id=meta.producer_id,
        previous_producer_id=meta.last_producer_id,
        next_producer_id=meta.next_producer_id,
        producer_epoch=meta.producer_epoch,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_status=int(meta.state),
        transaction_partitions=[
            TransactionLogValue.PartitionsSchema(topic=t, partition_ids=ps)
            for t, ps in by_topic.items()
        ],
        transaction_last_update_timestamp_ms=meta.update_ms,
        transaction_start_timestamp_ms=meta.start_ms,
        client_transaction_version=meta.client_tv,
    )
    return key, encode_value(value)


def metadata_of(key: bytes, value: bytes | None) -> tuple[str, TxnMetadata | None]:
    """The transactional id of a record and its metadata (None: a tombstone). Raises
    ``CorruptRequest`` for a record that is not one."""
    txn_id = decode_key(key).transactional_id
    if value is None:
        return txn_id, None
    v = decode_value(value)
    partitions = frozenset(
        (p.topic, i) for p in (v.transaction_partitions or []) for i in p.partition_ids
    )
    return txn_id, TxnMetadata(
        transactional_id=txn_id,
        producer_id=v.producer_id,
        producer_epoch=v.producer_epoch,
        timeout_ms=v.transaction_timeout_ms,
        state=TxnState(v.transaction_status),
        last_producer_id=v.previous_producer_id,
        partitions=partitions,
        start_ms=v.transaction_start_timestamp_ms,
        update_ms=v.transaction_last_update_timestamp_ms,
        client_tv=v.client_transaction_version,
        next_producer_id=v.next_producer_id,
    )


class StoredTxnRecord(Protocol):
    """A ``__transaction_state`` record as read back (``groups.storage.StoredRecord``)."""

    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


def latest_of(records: Iterable[StoredTxnRecord]) -> dict[str, TxnMetadata | None]:
    """The latest metadata of each id in ``records`` (None: its tombstone came last)."""
    out: dict[str, TxnMetadata | None] = {}
    for r in records:
        if r.key is None:
            continue
        try:
            txn_id, meta = metadata_of(r.key, r.value)
        except (CorruptRequest, ValueError) as exc:
            log.warning("unreadable __transaction_state record at offset %d: %s", r.offset, exc)
            continue
        out[txn_id] = meta
    return out
