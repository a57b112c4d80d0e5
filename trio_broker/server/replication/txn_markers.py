"""Writing transaction markers as the partitions' leader (Kafka's WriteTxnMarkers path).

Owns: ``TxnMarkerWriter.write``, what the transaction coordinator (and the
WriteTxnMarkers API) calls to end a transaction in each of its partitions: for every
marker and partition, a control batch (``records.control.marker_batch``) appended as the
leader, all of a call's appends in one job on the io pool, the producer-state rules
applied by the log (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED); then, as
Kafka's WriteTxnMarkers does with acks=-1, each marker waits until the ISR holds it (the
signal acks=all produces wait on; REQUEST_TIMED_OUT after ``timeout_ms``,
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below ``min.insync.replicas``). After
each append the parked fetches are told (a read_committed fetch waits for the last
stable offset a marker moves); once a marker is appended and the ISR holds it, the replica
manager's ``marker_observers`` are called with (topic, partition, producer id, commit):
the group coordinator's hook for transactional offset commits (Kafka calls its
onTransactionCompleted at that point, for the partitions whose marker succeeded). Runs on
the event loop; the appends on io threads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import trio

from ...apis.services import TxnMarker
from ...log.errors import LogError, LogStorageError
from ...log.partition_log import PartitionLog
from ...log.producer_state import ProducerStateError
from ...log.storage_hook import before_storage_operation
from ...protocol.errors import ErrorCode
from ...records.control import EndTxnMarker, marker_batch
from ...records.errors import RecordsError
from ...records.validation import validate_batches
from .replica_manager import ReplicaManager

log = logging.getLogger("trio_broker.transactions")

TIMEOUT_MS = 30_000  # Kafka's request.timeout.ms default, which its WriteTxnMarkers uses

TopicPartition = tuple[str, int]


def _append(
    plog: PartitionLog, marker: TxnMarker, leader_epoch: int, now_ms: int
) -> int | Exception:
    """Append one marker (blocking); the offset it got, or the failure."""
    before_storage_operation()
    batch = marker_batch(
        marker.producer_id,
        marker.producer_epoch,
        EndTxnMarker(marker.commit, marker.coordinator_epoch),
        now_ms,
    )
    try:
        records = validate_batches(memoryview(batch), max_batch_bytes=len(batch))
        return plog.append(records, leader_epoch=leader_epoch, now_ms=now_ms).last_offset
    except (ProducerStateError, LogError, RecordsError) as exc:
        return exc


def _error_of(outcome: Exception) -> int:
    if isinstance(outcome, LogStorageError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    if isinstance(outcome, (ProducerStateError, RecordsError)):
        return outcome.error_code
    if isinstance(outcome, LogError):  # closed or deleted meanwhile
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    raise outcome


class TxnMarkerWriter:
    def __init__(self, replicas: ReplicaManager, timeout_ms: int = TIMEOUT_MS) -> None:
        self.replicas = replicas
        self.timeout_ms = timeout_ms

    async def write(self, markers: Sequence[TxnMarker]) -> list[dict[TopicPartition, int]]:
        """One dict of error codes per marker, by (topic, partition)."""
        rm = self.replicas
        results: list[dict[TopicPartition, int]] = [{} for _ in markers]
        jobs: list[tuple[int, TopicPartition, PartitionLog, int]] = []
        for i, marker in enumerate(markers):
            for topic, partition in marker.partitions:
                plog = rm.partition(topic, partition)
                if plog is None:
                    results[i][(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not rm.cluster.leads(topic, partition):
                    results[i][(topic, partition)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif not rm.replication.enough_replicas(topic, partition, rm.min_insync(topic)):
                    results[i][(topic, partition)] = ErrorCode.NOT_ENOUGH_REPLICAS
                else:
                    epoch = rm.cluster.leader_epoch(topic, partition)
                    jobs.append((i, (topic, partition), plog, epoch))
        if not jobs:
            return results

        def append_all() -> list[int | Exception]:
            now_ms = time.time_ns() // 1_000_000
            return [_append(plog, markers[i], epoch, now_ms) for i, _, plog, epoch in jobs]

        outcomes = await rm.io.run(append_all)
        waiting: list[tuple[int, TopicPartition, int]] = []
        for (i, key, _, _), outcome in zip(jobs, outcomes, strict=True):
            if isinstance(outcome, Exception):
                results[i][key] = _error_of(outcome)
                continue
            rm.fetch_purgatory.check(key)
            rm.replication.appended(*key)
            waiting.append((i, key, outcome + 1))
        deadline = trio.current_time() + self.timeout_ms / 1000
        for i, key, required in waiting:
            left = max(0.0, deadline - trio.current_time())
            status = await rm.replication.wait_replicated(*key, required, left)
            results[i][key] = status
            if status == ErrorCode.NONE:
                self._tell_observers(key, markers[i])
        return results

    def _tell_observers(self, key: TopicPartition, marker: TxnMarker) -> None:
        for observer in self.replicas.marker_observers:
            try:
                observer(key[0], key[1], marker.producer_id, marker.commit)
            except Exception:  # an observer's bug must not fail the marker
                log.exception("marker observer failed for %s-%d", *key)
