"""The questions about offsets a partition's leader answers: ListOffsets, DeleteRecords
and OffsetForLeaderEpoch.

Owns: ``OffsetQueries``, which checks that this broker leads each partition asked about
and that the asker's current leader epoch is this one (FENCED_LEADER_EPOCH when older,
UNKNOWN_LEADER_EPOCH when newer, as Kafka; -1 skips the check), then answers: log ends and
leader epoch lookups on the loop (they read published, immutable state), lookups by time
and deletions on an io thread. It must not parse requests (the APIs do) nor own logs
(``ReplicaManager`` does).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...log.errors import LogStorageError
from ...log.partition_log import PartitionLog
from ...log.storage_hook import before_storage_operation
from ...protocol.errors import ErrorCode
from .replica_manager import ReplicaManager

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
# ListOffsets v8/v9/v11 (KIP-405, KIP-1005, KIP-1023): without tiered storage the local log
# start is the log start, and there is no tiered offset nor one pending upload (Kafka
# answers -1 for both).
EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -4, -5, -6
NO_EPOCH = -1

OffsetAnswer = tuple[int, int, int, int]  # error, offset, timestamp, leader epoch
EpochAnswer = tuple[int, int, int]  # error, leader epoch, end offset


class OffsetQueries:
    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas

    def _led(self, topic: str, partition: int, current_epoch: int) -> PartitionLog | int:
        """The partition's log if this broker leads it at ``current_epoch``; else the
        error code that says why not."""
        replicas = self._replicas
        plog = replicas.partition(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not replicas.cluster.leads(topic, partition):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        error = replicas.cluster.epoch_error(topic, partition, current_epoch)
        return plog if error == ErrorCode.NONE else error

    async def list_offsets_many(
        self, items: Sequence[tuple[str, int, int, int]], *, committed_only: bool
    ) -> list[OffsetAnswer]:
        """(error, offset, timestamp, leader epoch) for each (topic, partition, timestamp,
        current leader epoch) of a client's ListOffsets request.

        As Kafka's ``Partition.fetchOffsetForTimestamp``, nothing at or past the last
        fetchable offset (the high watermark, or the last stable offset for
        ``committed_only``) is answered: a lookup by time that finds a record there
        answers -1. And while this leader's high watermark lags behind the log end its
        epoch began with (KIP-207: a new leader learns it from its followers' fetches),
        "latest" and such a lookup are OFFSET_NOT_AVAILABLE, which clients retry: the
        stale high watermark could be below records the previous leader acknowledged."""
        results: list[OffsetAnswer | None] = [None] * len(items)
        lookups: list[tuple[int, PartitionLog, int, int, int, bool]] = []
        lagging = self._replicas.replication.high_watermark_lagging
        for i, (topic, partition, timestamp, current) in enumerate(items):
            plog = self._led(topic, partition, current)
            if isinstance(plog, int):
                results[i] = (plog, -1, -1, -1)
                continue
            epoch = self._replicas.cluster.leader_epoch(topic, partition)
            if timestamp in (EARLIEST, EARLIEST_LOCAL):
                results[i] = (ErrorCode.NONE, plog.log_start_offset, -1, epoch)
                continue
            if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
                results[i] = (ErrorCode.NONE, -1, -1, -1)
                continue
            if timestamp < 0 and timestamp not in (LATEST, MAX_TIMESTAMP):
                results[i] = (ErrorCode.INVALID_REQUEST, -1, -1, -1)
                continue
            hw = plog.high_watermark
            end = plog.last_stable_offset if committed_only else hw
            behind = lagging(topic, partition, hw)
            if timestamp == LATEST and behind:
                results[i] = (ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)
            elif timestamp == LATEST:
                results[i] = (ErrorCode.NONE, end, -1, epoch)
            else:
                lookups.append((i, plog, timestamp, epoch, end, behind))
        if lookups:
            found = await self._replicas.io.run(
                lambda: [_lookup(plog, ts) for _, plog, ts, *_ in lookups]
            )
            for (i, _, _, epoch, end, behind), answer in zip(lookups, found, strict=True):
                if isinstance(answer, int):
                    results[i] = (answer, -1, -1, -1)
                elif answer is not None and answer[0] < end:
                    results[i] = (ErrorCode.NONE, answer[0], answer[1], epoch)
                elif behind:
                    results[i] = (ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)
                else:
                    results[i] = (ErrorCode.NONE, -1, -1, -1)
        return [r for r in results if r is not None]

    async def delete_records_many(
        self, items: Sequence[tuple[str, int, int]]
    ) -> list[tuple[int, int]]:
        """(error, low watermark) for each (topic, partition, offset) of a DeleteRecords
        request; offset -1 means the high watermark."""
        results: list[tuple[int, int] | None] = [None] * len(items)
        jobs: list[tuple[int, PartitionLog, int]] = []
        for i, (topic, partition, offset) in enumerate(items):
            plog = self._led(topic, partition, NO_EPOCH)
            if isinstance(plog, int):
                results[i] = (plog, -1)
                continue
            hw = plog.high_watermark
            target = hw if offset == -1 else offset
            if target < 0 or target > hw:
                results[i] = (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
            else:
                jobs.append((i, plog, target))
        if jobs:
            lows = await self._replicas.io.run(
                lambda: [_delete_before(plog, t) for _, plog, t in jobs]
            )
            for (i, _, _), low in zip(jobs, lows, strict=True):
                results[i] = (
                    (ErrorCode.KAFKA_STORAGE_ERROR, -1) if low < 0 else (ErrorCode.NONE, low)
                )
        return [r for r in results if r is not None]

    def epoch_end_offsets(self, items: Sequence[tuple[str, int, int, int]]) -> list[EpochAnswer]:
        """(error, epoch, end offset) for each (topic, partition, leader epoch, current
        leader epoch) of an OffsetForLeaderEpoch request: the largest epoch at or below
        the one asked and the offset where it ended (``LeaderEpochCache.end_offset_for``).
        Cheap and lock-free: answered on the loop."""
        answers: list[EpochAnswer] = []
        for topic, partition, epoch, current in items:
            plog = self._led(topic, partition, current)
            if isinstance(plog, int):
                answers.append((plog, -1, -1))
            elif plog.offline:
                answers.append((ErrorCode.KAFKA_STORAGE_ERROR, -1, -1))
            else:
                answers.append((ErrorCode.NONE, *plog.end_offset_for_epoch(epoch)))
        return answers


def _lookup(plog: PartitionLog, timestamp: int) -> tuple[int, int] | int | None:
    """(offset, timestamp) found, None for none, or an error code."""
    before_storage_operation()
    try:
        if timestamp == MAX_TIMESTAMP:
            return plog.max_timestamp_offset()
        return plog.offset_for_timestamp(timestamp)
    except LogStorageError:
        return int(ErrorCode.KAFKA_STORAGE_ERROR)


def _delete_before(plog: PartitionLog, offset: int) -> int:
    """The new log start offset, or -1 if the disk failed."""
    before_storage_operation()
    try:
        return plog.delete_records_before(offset)
    except LogStorageError:
        return -1
