"""The transaction coordinator: transactional ids, their producer ids and epochs, and the
two-phase end of each transaction.

Owns: ``TransactionCoordinator``, Kafka's ``TransactionCoordinator`` and
``TransactionStateManager`` in one: the metadata of every transactional id whose
``__transaction_state`` partition this broker leads (all of them on a broker on its own),
read back from that partition when it comes to lead it, and every change written there
before it counts (``OrderedWriter``, the group coordinator's). The requests, with Kafka's
rules and error codes:

- ``init_producer_id``: a new id gets a producer id at epoch 0; a known one gets its epoch
  bumped (a new producer id once the epoch is exhausted), which fences the producer that
  had it. An ongoing transaction is aborted first (its epoch bumped) and the answer waits
  for that abort to complete (``COMPLETE_WAIT_S``; past it, CONCURRENT_TRANSACTIONS, which
  clients retry).
- ``add_partitions`` (AddPartitionsToTxn, and AddOffsetsToTxn with the group's
  ``__consumer_offsets`` partition) makes the transaction ONGOING and lists the partitions.
- ``end_txn``: PREPARE_COMMIT or PREPARE_ABORT is written (the outcome is decided); then
  every partition gets its marker (``Markers``), retried until written, and
  COMPLETE_COMMIT or COMPLETE_ABORT is written. The client is answered once the markers
  are written (the outcome is then what consumers see), or after ``COMPLETE_WAIT_S``; the
  id's next call waits for the COMPLETE_* write (at most as long) instead of being refused.
  Kafka answers at the PREPARE: its clients' next transaction is then refused
  CONCURRENT_TRANSACTIONS until the markers are written, and retried after a backoff. A
  PREPARE_* read back at start (a crash between the two) is completed the same way. EndTxn
  v5 (transaction version 2, KIP-890 part 2) bumps the epoch at each end (the markers carry
  the new one; an exhausted epoch moves the producer to a new id) and answers the producer
  id and epoch to go on with; its partitions came without AddPartitionsToTxn, added by
  their leaders as the transaction's batches arrived (``add_partitions``).
- every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, transactions
  older than their timeout are aborted with their epoch bumped (the producer is fenced);
  every ``transaction.remove.expired.transaction.cleanup.interval.ms``, ids idle longer
  than ``transactional.id.expiration.ms`` are forgotten (a tombstone).

The coordinator epoch written in the markers is the leader epoch of the id's
``__transaction_state`` partition (0 on a broker on its own), so a deposed coordinator's
markers are refused by the partitions. Requests are answered through ``TxnResult``s;
nothing blocks the event loop (the topic's reads run on a worker thread).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from ...protocol.errors import ErrorCode
from ...records import Record
from ..groups import LogOffsetsTopic, OrderedWriter, Ownership, partition_for
from .clock import Elapsed
from .markers import Markers, TxnMarker
from .state import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnState,
    bumped_retry,
    known_producer,
    latest_of,
    next_producer,
    record_of,
)

log = logging.getLogger("trio_broker.transactions")

MARKER_RETRY_S = 0.1
# EndTxn (and InitProducerId that had to abort) is answered once the transaction is
# complete, if that takes at most this long: the producer's next transaction is then not
# refused CONCURRENT_TRANSACTIONS (and retried after a backoff) while the markers are
# written. Past it (a partition's leader unreachable) the answer goes anyway: the outcome
# is decided and written.
COMPLETE_WAIT_S = 5.0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int
    id_expiration_ms: int
    abort_interval_s: float
    expire_interval_s: float

    @classmethod
    def from_broker(cls, config: Any) -> TxnConfig:
        return cls(
            config["transaction.max.timeout.ms"],
            config["transactional.id.expiration.ms"],
            config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000,
            config["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000,
        )


class TransactionCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        topic: LogOffsetsTopic,
        new_producer_id: Callable[[], Awaitable[int]],
        markers: Markers,
        *,
        exists: Callable[[], bool] = lambda: False,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.config = config
        self.topic = topic
        self.new_producer_id = new_producer_id
        self.markers = markers
        self.exists = exists  # whether the topic is there to read back at start
        self.now_ms = now_ms
        self.elapsed = Elapsed(now_ms)  # timeouts count monotonic time, not the wall clock
        self.txns: dict[str, TxnMetadata] = {}
        self.writer = OrderedWriter(topic)
        self.ownership = Ownership()  # every id, unless the topic is replicated
        self.replicated = topic.replicated
        if self.replicated:
            self.ownership.owned = set()
        self.epochs: dict[int, int] = {}  # partition -> coordinator epoch (leader epoch)
        self.active = False
        self.commits = 0
        self.aborts = {"client": 0, "timeout": 0, "fenced": 0}  # aborts by reason
        self.expired_ids = 0
        self._opened = False
        self._open_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self._scope = trio.CancelScope()
        self._completing: dict[str, trio.Event] = {}  # ids whose end is under way
        self._marked: dict[str, trio.Event] = {}  # ... set once their markers are written

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, max(1, self.topic.partitions))

    # ================================================================ life cycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read the topic back (if it exists), then serve until cancelled."""
        with self._scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.writer.run)
                if self.replicated or self.exists():
                    await self.ensure_open()
                for interval, job in (
                    (self.config.abort_interval_s, self.abort_timed_out),
                    (self.config.expire_interval_s, self.expire_ids),
                ):
                    nursery.start_soon(self._every, interval, job)
                self.active = True
                task_status.started()
        self.active = False

    def stop(self) -> None:
        """Stop serving (requests get COORDINATOR_NOT_AVAILABLE); ends ``run``. A
        transaction being completed is completed again at the next start."""
        self.active = False
        self._scope.cancel()

    async def ensure_open(self) -> None:
        """Make sure the topic exists and is read back (on a broker on its own it is
        created on the first transactional producer's question, as Kafka creates it)."""
        async with self._open_lock:
            if self._opened:
                return
            await trio.to_thread.run_sync(self.topic.open)
            if not self.replicated:
                loaded = await trio.to_thread.run_sync(latest_of, self.topic.scan())
                self._install(loaded)
            self._opened = True

    async def _every(self, interval_s: float, job: Callable[[], Awaitable[int]]) -> None:
        while True:
            await trio.sleep(interval_s)
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator job %s failed", job.__name__)

    def _install(self, loaded: dict[str, TxnMetadata | None]) -> None:
        for txn_id, meta in loaded.items():
            if meta is None:
                self.txns.pop(txn_id, None)
                continue
            self.txns[txn_id] = meta
            if meta.state.preparing:  # decided before a crash: complete it now
                self._spawn_completion(meta)
        if loaded:
            log.info("loaded %d transactional ids from __transaction_state", len(loaded))

    # ===================================================== partition leadership

    def role_changed(self, partition: int, leader: bool, leader_epoch: int = 0) -> None:
        """LeaderAndIsr or StopReplica for a partition of ``__transaction_state``."""
        if leader and self._nursery is not None:
            self.epochs[partition] = leader_epoch
            self._nursery.start_soon(self._elect, partition)
        elif not leader:
            self._resign(partition)

    async def _elect(self, partition: int) -> None:
        own = self.ownership
        if own.owned is None or partition in own.owned or partition in own.loading:
            return
        own.loading.add(partition)
        try:
            await self.ensure_open()
            records = self.topic.scan_partition(partition)
            loaded = await trio.to_thread.run_sync(latest_of, records)
            if partition in own.loading:  # not resigned meanwhile
                own.owned.add(partition)
                self._install(loaded)
                log.info("coordinating the transactional ids of partition %d", partition)
        finally:
            own.loading.discard(partition)

    def _resign(self, partition: int) -> None:
        own = self.ownership
        if own.owned is None:
            return
        own.loading.discard(partition)
        if partition in own.owned:
            own.owned.discard(partition)
            for txn_id in [t for t in self.txns if self.partition_for(t) == partition]:
                del self.txns[txn_id]

    def check(self, transactional_id: str | None) -> int:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        if not self.active or not self._opened:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.ownership.error_for(self.partition_for(transactional_id))

    def coordinator_epoch(self, transactional_id: str) -> int:
        return self.epochs.get(self.partition_for(transactional_id), 0)

    # ================================================================== writes

    async def _write(self, new: TxnMetadata) -> int:
        """Write ``new`` (the id ``pending`` meanwhile); it counts once written."""
        txn_id = new.transactional_id
        old = self.txns.get(txn_id)
        if old is not None:
            old.pending = True
        key, value = record_of(new)
        partition = self.partition_for(txn_id)
        code = await self.writer.submit(partition, [Record(key, value)]).wait()
        if old is not None:
            old.pending = False
        if code:
            log.warning("transactional id %s: state %s not written (%d)", txn_id, new.state, code)
            return code
        if self.ownership.error_for(partition):  # the partition moved away meanwhile
            return ErrorCode.NOT_COORDINATOR
        if new.state is TxnState.DEAD:
            self.txns.pop(txn_id, None)
        else:
            self.txns[txn_id] = new
            self.elapsed.written(txn_id, new.update_ms)
            self.elapsed.written(f"start {txn_id}", new.start_ms)  # kept while unchanged
        return ErrorCode.NONE

    # ===================================================== the producer's calls

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None = None,
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer starting up."""
        await self.ensure_open()
        error = self.check(transactional_id)
        if error:
            return error, -1, -1
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        now = self.now_ms()
        meta = self.txns.get(transactional_id)
        if meta is None:
            pid = await self.new_producer_id()
            new = TxnMetadata(transactional_id, pid, 0, timeout_ms, update_ms=now)
            error = await self._write(new)
            return (error, -1, -1) if error else (0, pid, 0)
        if expected is not None and expected != (-1, -1) and not known_producer(meta, expected):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        open_txn = meta.state in (TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE)
        # The old producer's transaction is aborted with the epoch bumped (fencing it);
        # the new one gets its epoch once that is done.
        if open_txn and not meta.pending and not await self._abort_fencing(meta):
            self.aborts["fenced"] += 1
        if meta.state.preparing or self.txns.get(transactional_id, meta).state.preparing:
            await self._until_complete(transactional_id)
        meta = self.txns.get(transactional_id, meta)
        if meta.pending or not meta.state.complete:  # still completing: the client retries
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if expected is not None and expected == (meta.producer_id, meta.producer_epoch - 1):
            # a retry of the last bump (its answer lost): the same id and epoch again
            return 0, meta.producer_id, meta.producer_epoch
        pid, epoch = meta.producer_id, meta.producer_epoch + 1
        last = (meta.producer_id, meta.producer_epoch)
        if epoch >= MAX_PRODUCER_EPOCH:
            pid, epoch = await self.new_producer_id(), 0
        new = meta.moved(
            producer_id=pid,
            producer_epoch=epoch,
            last_producer_id=last[0],
            last_producer_epoch=last[1],
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            start_ms=-1,
            update_ms=now,
        )
        error = await self._write(new)
        return (error, -1, -1) if error else (0, pid, epoch)

    async def _producer_call(
        self, transactional_id: str, producer_id: int, epoch: int
    ) -> tuple[int, TxnMetadata | None]:
        """(error, metadata) for a producer's call on its transaction: the metadata only
        when this coordinator holds the id and the producer id and epoch are current."""
        await self.ensure_open()
        error = self.check(transactional_id)
        if error:
            return error, None
        meta = self.txns.get(transactional_id)
        error = self._producer_error(meta, producer_id, epoch)
        return (error, None) if error else (ErrorCode.NONE, meta)

    def _producer_error(self, meta: TxnMetadata | None, producer_id: int, epoch: int) -> int:
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED
        if meta.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.NONE

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> int:
        """AddPartitionsToTxn (and AddOffsetsToTxn): the partitions join the transaction."""
        await self._until_complete(transactional_id)  # the last one's COMPLETE_* write
        error, meta = await self._producer_call(transactional_id, producer_id, epoch)
        if meta is None:
            return error
        if meta.state.preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state in (TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE):
            return ErrorCode.INVALID_TXN_STATE
        wanted = frozenset(partitions)
        if meta.state is TxnState.ONGOING and wanted <= meta.partitions:
            return ErrorCode.NONE
        now = self.now_ms()
        ongoing = meta.state is TxnState.ONGOING
        new = meta.moved(
            state=TxnState.ONGOING,
            partitions=(meta.partitions if ongoing else frozenset()) | wanted,
            start_ms=meta.start_ms if ongoing else now,
            update_ms=now,
        )
        return await self._write(new)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4's verify_only: which partitions the ongoing transaction
        of this producer holds (NONE) and which it does not (INVALID_TXN_STATE)."""
        wanted = list(partitions)
        meta = self.txns.get(transactional_id)
        error = self.check(transactional_id) or self._producer_error(meta, producer_id, epoch)
        if error:
            return dict.fromkeys(wanted, error)
        assert meta is not None
        held = meta.partitions if meta.state is TxnState.ONGOING else frozenset()
        return {tp: 0 if tp in held else ErrorCode.INVALID_TXN_STATE for tp in wanted}

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool
    ) -> int:
        """EndTxn before v5: decide the outcome (written), then complete it; answered once
        the markers are written (at most ``COMPLETE_WAIT_S``)."""
        error, _, _ = await self.end_transaction(
            transactional_id, producer_id, epoch, commit, bump=False
        )
        return error

    async def end_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, *, bump: bool
    ) -> tuple[int, int, int]:
        """EndTxn: (error, the producer id and epoch the producer goes on with). ``bump``
        (v5, transaction version 2): the end bumps the epoch, the markers carry the new one
        (a batch of the old epoch arriving late is fenced), and an exhausted epoch moves the
        producer to a new id at epoch 0; an abort with nothing added still bumps it; a retry
        with the epoch before the bump gets the same answer again."""
        await self._until_complete(transactional_id)  # a retry, or the last one's end
        await self.ensure_open()
        error = self.check(transactional_id)
        if error:
            return error, -1, -1
        meta = self.txns.get(transactional_id)
        done, again = (
            (TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT)
            if commit
            else (TxnState.COMPLETE_ABORT, TxnState.PREPARE_ABORT)
        )
        if (
            bump
            and meta is not None
            and not meta.pending
            and bumped_retry(meta, producer_id, epoch)
        ):
            if meta.state is done:  # answered already: the same answer again
                return ErrorCode.NONE, *next_producer(meta)
            if meta.state is again:
                return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        error = self._producer_error(meta, producer_id, epoch)
        if error:
            return error, -1, -1
        assert meta is not None
        state = meta.state
        if not bump and state is done:
            return ErrorCode.NONE, meta.producer_id, meta.producer_epoch  # answered already
        if not bump and state is again:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        empty_abort = bump and not commit and state.complete
        if state is not TxnState.ONGOING and not empty_abort:
            return ErrorCode.INVALID_TXN_STATE, -1, -1
        error = await self._prepare(meta, commit, **(await self._bump(meta) if bump else {}))
        if error:
            return error, -1, -1
        if commit:
            self.commits += 1
        else:
            self.aborts["client"] += 1
        await self._until(self._marked, transactional_id)
        return ErrorCode.NONE, *next_producer(self.txns.get(transactional_id, meta))

    async def _bump(self, meta: TxnMetadata) -> dict[str, Any]:
        """The changes of a transaction version 2 end: the next epoch (the markers carry
        it), the producer id and epoch it had (a retry's), and a new producer id to move
        to at the end once the epoch is exhausted."""
        changes: dict[str, Any] = {
            "producer_epoch": meta.producer_epoch + 1,
            "last_producer_id": meta.producer_id,
            "last_producer_epoch": meta.producer_epoch,
            "client_tv": 2,
        }
        if meta.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
            changes["next_producer_id"] = await self.new_producer_id()
        return changes

    async def _until_complete(self, transactional_id: str) -> None:
        """Wait (at most ``COMPLETE_WAIT_S``) for the id's markers and COMPLETE_* write."""
        await self._until(self._completing, transactional_id)

    @staticmethod
    async def _until(events: dict[str, trio.Event], transactional_id: str) -> None:
        event = events.get(transactional_id)
        if event is not None:
            with trio.move_on_after(COMPLETE_WAIT_S):
                await event.wait()

    async def _prepare(self, meta: TxnMetadata, commit: bool, **changes: Any) -> int:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        new = meta.moved(state=state, update_ms=self.now_ms(), **changes)
        error = await self._write(new)
        if not error:
            self._spawn_completion(new)
        return error

    async def _abort_fencing(self, meta: TxnMetadata) -> int:
        """Abort ``meta``'s transaction with its epoch bumped: its producer is fenced."""
        if meta.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
            return await self._prepare(meta, False)  # cannot bump: abort at this epoch
        return await self._prepare(
            meta,
            False,
            producer_epoch=meta.producer_epoch + 1,
            last_producer_id=meta.producer_id,
            last_producer_epoch=NO_PRODUCER_EPOCH,
        )

    # ============================================================== completion

    def _spawn_completion(self, meta: TxnMetadata) -> None:
        if self._nursery is not None:
            txn_id = meta.transactional_id
            done = self._completing[txn_id] = trio.Event()
            marked = self._marked[txn_id] = trio.Event()
            self._nursery.start_soon(self._complete_then_tell, meta, done, marked)

    async def _complete_then_tell(
        self, prepared: TxnMetadata, done: trio.Event, marked: trio.Event
    ) -> None:
        txn_id = prepared.transactional_id
        try:
            await self._complete(prepared, marked)
        finally:
            marked.set()
            done.set()
            if self._completing.get(txn_id) is done:
                del self._completing[txn_id], self._marked[txn_id]

    async def _complete(self, prepared: TxnMetadata, marked: trio.Event) -> None:
        """Write every partition's marker (retrying what fails), then COMPLETE_*."""
        txn_id = prepared.transactional_id
        commit = prepared.state is TxnState.PREPARE_COMMIT
        left = set(prepared.partitions)
        while left:
            if self.txns.get(txn_id) is not prepared:
                return  # resigned, or moved on meanwhile
            marker = TxnMarker(
                prepared.producer_id,
                prepared.producer_epoch,
                self.coordinator_epoch(txn_id),
                commit,
                sorted(left),
            )
            (results,) = await self.markers.write([marker])
            for tp, code in results.items():
                if code in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    left.discard(tp)  # written (or the topic is gone: nothing to mark)
                elif code in (
                    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                ):
                    log.warning("transactional id %s: marker for %s refused (%d)", txn_id, tp, code)
                    return  # a newer coordinator (or epoch) owns it now
            if left:
                await trio.sleep(MARKER_RETRY_S)
        marked.set()
        state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        done = prepared.moved(state=state, partitions=frozenset(), update_ms=self.now_ms())
        if prepared.next_producer_id != NO_PRODUCER_ID:  # epoch exhausted: the new id
            done = done.moved(
                producer_id=prepared.next_producer_id,
                producer_epoch=0,
                next_producer_id=NO_PRODUCER_ID,
                last_producer_id=prepared.producer_id,
            )
        while self.txns.get(txn_id) is prepared:
            if not await self._write(done):
                return
            await trio.sleep(MARKER_RETRY_S)

    # ============================================================ housekeeping

    async def abort_timed_out(self) -> int:
        """Abort (fencing the producer) every transaction past its timeout; how many."""
        open_for = self.elapsed.ms
        expired = [
            m
            for m in self.txns.values()
            if m.state is TxnState.ONGOING
            and not m.pending
            and open_for(f"start {m.transactional_id}", m.start_ms, m.timeout_ms) > m.timeout_ms
        ]
        for meta in expired:
            log.info(
                "transactional id %s: transaction timed out after %d ms, aborting",
                meta.transactional_id,
                meta.timeout_ms,
            )
            if not await self._abort_fencing(meta):
                self.aborts["timeout"] += 1
        return len(expired)

    async def expire_ids(self) -> int:
        """Forget ids idle past ``transactional.id.expiration.ms``; how many."""
        now, limit = self.now_ms(), self.config.id_expiration_ms
        self.elapsed.keep(k for t in self.txns for k in (t, f"start {t}"))
        idle = [
            m
            for m in self.txns.values()
            if m.state.complete
            and not m.pending
            and self.elapsed.ms(m.transactional_id, m.update_ms, limit) > limit
        ]
        for meta in idle:
            if not await self._write(meta.moved(state=TxnState.DEAD, update_ms=now)):
                self.expired_ids += 1
        return len(idle)
