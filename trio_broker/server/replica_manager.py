"""The partitions this broker leads, their logs, and the data path's I/O (Kafka's
ReplicaManager, for one broker with one replica per partition).

Owns: ``ReplicaManager``: opening the log manager at start-up (recovering what a crash
left), creating and deleting partition logs with their topic's configuration, appending
validated record batches, reading batches as file regions, offsets by time, DeleteRecords,
and the periodic flush and retention. Appends that may wait for the disk (an fsync by the
flush policy, a segment roll, or a large batch) run in worker threads bounded by the io
limiter (``num.io.threads``); small ones that only write to the page cache run inline, as
do reads (index lookups and a few ``pread`` calls on the page cache). After each append
the fetch purgatory is told, so parked fetches complete as soon as their bytes exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import trio

from ..apis.services import ReadResult, TopicInfo, WriteResult
from ..log.config import LogConfig
from ..log.errors import LogError, LogStorageError, OffsetOutOfRange
from ..log.manager import LogManager
from ..log.partition_log import PartitionLog
from ..log.producer_state import ProducerStateError
from ..protocol.errors import ErrorCode
from ..records.errors import RecordsError
from ..records.validation import validate_batches
from .cluster_state import ClusterState
from .config import BrokerConfig
from .purgatory import Purgatory
from .topic_config import effective_topic_config

log = logging.getLogger("trio_broker.server")

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_NO_FLUSH_MS = 2**63 - 1
QUICK_APPEND_BYTES = 64 * 1024


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def log_config_for(config: BrokerConfig, overrides: Mapping[str, str | None]) -> LogConfig:
    """A topic's LogConfig: its own overrides over the broker's log.* defaults."""
    e = {k: v.value for k, v in effective_topic_config(config, overrides).items()}
    flush_ms = e["flush.ms"]
    return LogConfig(
        segment_bytes=e["segment.bytes"],
        segment_ms=e["segment.ms"],
        retention_bytes=e["retention.bytes"],
        retention_ms=e["retention.ms"],
        index_interval_bytes=e["index.interval.bytes"],
        segment_index_bytes=e["segment.index.bytes"],
        flush_interval_messages=e["flush.messages"],
        flush_interval_ms=None if flush_ms >= _NO_FLUSH_MS else flush_ms,
        max_message_bytes=e["max.message.bytes"],
        message_timestamp_type=e["message.timestamp.type"],
    )


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        io_limiter: trio.CapacityLimiter,
        fetch_purgatory: Purgatory,
        cluster: ClusterState,
        metrics: Any = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.io_limiter = io_limiter
        self.fetch_purgatory = fetch_purgatory
        self.metrics = metrics
        self.logs: LogManager | None = None
        # The event loop's token, so worker threads can hand figures back to it.
        self.trio_token: trio.lowlevel.TrioToken | None = None
        self.duplicate_batches = 0  # retried idempotent batches answered from the cache
        self._min_insync: dict[str, int] = {}
        # Partitions whose last append failed on the disk: a full disk is logged once when
        # it starts failing and once when appends work again, not once per produce.
        self.storage_failing: set[tuple[str, int]] = set()

    # ------------------------------------------------------------- life cycle

    def open(self, topics: list[TopicInfo]) -> None:
        """Load every partition log (blocking: call from a thread) and create missing ones."""
        configs = {t.name: log_config_for(self.config, t.configs) for t in topics}
        self.logs = LogManager(
            list(self.config.log_dirs), log_config_for(self.config, {}), topic_configs=configs
        )
        for t in topics:
            self.create_logs(t)
        for _, plog in self.logs.logs():
            self._observe(plog)

    def _observe(self, plog: PartitionLog) -> None:
        """Report the log's fsync times to the metrics, from whatever thread flushes it."""
        metrics, token = self.metrics, self.trio_token
        if metrics is None or token is None:
            return

        def flushed(ms: float) -> None:
            token.run_sync_soon(metrics.record_log_flush, ms)  # thread-safe, never blocks

        plog.flush_listener = flushed

    def close(self) -> None:
        if self.logs is not None:
            self.logs.close()

    def create_logs(self, topic: TopicInfo) -> None:
        """Create the logs of every partition of ``topic`` that has none (blocking)."""
        assert self.logs is not None
        config = log_config_for(self.config, topic.configs)
        self._min_insync[topic.name] = int(
            effective_topic_config(self.config, topic.configs)["min.insync.replicas"].value
        )
        for p in topic.partitions:
            if self.logs.get(topic.name, p.index) is None:
                self._observe(
                    self.logs.create(topic.name, p.index, config, topic_id=topic.topic_id)
                )

    def delete_partition_log(self, topic: str, partition: int) -> None:
        """StopReplica with deletion: this partition's log goes (blocking)."""
        assert self.logs is not None
        self.logs.delete(topic, partition)

    def delete_logs(self, topic: TopicInfo) -> None:
        """Delete every partition log of ``topic`` (blocking)."""
        assert self.logs is not None
        for p in topic.partitions:
            self.logs.delete(topic.name, p.index)
        self._min_insync.pop(topic.name, None)

    def reconfigure(self, topic: TopicInfo) -> None:
        assert self.logs is not None
        config = log_config_for(self.config, topic.configs)
        for p in topic.partitions:
            plog = self.logs.get(topic.name, p.index)
            if plog is not None:
                plog.reconfigure(config)

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get(topic, partition) if self.logs is not None else None

    # ------------------------------------------------------------- data path

    async def produce(
        self, topic: str, partition: int, records: memoryview | None, acks: int
    ) -> WriteResult:
        plog = self.partition(topic, partition)
        metrics = self.metrics
        if plog is None:
            return self._failed(
                topic,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"this broker has no partition {partition} of topic {topic!r}",
            )
        if not self.cluster.leads(topic, partition):
            return self._failed(
                topic, ErrorCode.NOT_LEADER_OR_FOLLOWER, self._not_leader(topic, partition)
            )
        if records is None or len(records) == 0:
            return self._failed(topic, ErrorCode.CORRUPT_MESSAGE, "the request has no records")
        if acks == -1 and self._min_insync.get(topic, 1) > 1:
            return self._failed(
                topic,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"min.insync.replicas={self._min_insync[topic]} but this broker is the only "
                "replica",
            )
        try:
            validated = validate_batches(records, max_batch_bytes=plog.config.max_message_bytes)
        except RecordsError as exc:
            return self._failed(topic, exc.error_code, str(exc))
        epoch = self.cluster.leader_epoch(topic, partition)
        try:
            # A small append that neither fsyncs nor rolls is a write() to the page cache:
            # cheaper on the event loop than a round trip to a worker thread.
            info = None
            if validated.size <= QUICK_APPEND_BYTES:
                info = plog.try_append_quick(validated, leader_epoch=epoch, now_ms=now_ms())
            if info is None:
                info = await trio.to_thread.run_sync(
                    lambda: plog.append(validated, leader_epoch=epoch, now_ms=now_ms()),
                    limiter=self.io_limiter,
                )
        except ProducerStateError as exc:
            return self._failed(topic, exc.error_code, str(exc))
        except LogStorageError as exc:
            self._storage_failed(topic, partition, exc)
            return self._failed(topic, ErrorCode.KAFKA_STORAGE_ERROR, str(exc))
        except LogError as exc:  # the log was closed or deleted meanwhile
            return self._failed(topic, ErrorCode.NOT_LEADER_OR_FOLLOWER, str(exc))
        if info.duplicate:  # a retry of a batch already stored: same answer as the first
            self.duplicate_batches += 1
            return WriteResult(
                error_code=ErrorCode.NONE,
                base_offset=info.first_offset,
                log_start_offset=info.log_start_offset,
            )
        if self.storage_failing:
            self._storage_works(topic, partition)
        if metrics is not None:
            metrics.record_produce(topic, info.size_bytes, info.record_count)
        self.fetch_purgatory.check((topic, partition))
        return WriteResult(
            error_code=ErrorCode.NONE,
            base_offset=info.first_offset,
            log_append_time_ms=info.log_append_time_ms,
            log_start_offset=info.log_start_offset,
        )

    def _storage_failed(self, topic: str, partition: int, exc: LogStorageError) -> None:
        key = (topic, partition)
        if key in self.storage_failing:
            log.debug("append to %s-%d failed again: %s", topic, partition, exc)
        else:
            self.storage_failing.add(key)
            log.error(
                "append to %s-%d failed: %s (producers get KAFKA_STORAGE_ERROR until an "
                "append succeeds; logged once)",
                topic,
                partition,
                exc,
            )

    def _storage_works(self, topic: str, partition: int) -> None:
        key = (topic, partition)
        if key in self.storage_failing:
            self.storage_failing.discard(key)
            log.warning("append to %s-%d works again", topic, partition)

    def _not_leader(self, topic: str, partition: int) -> str:
        leader = self.cluster.leader_of(topic, partition)
        return f"broker {self.cluster.broker_id} does not lead {topic}-{partition}" + (
            f" (broker {leader} does)" if leader >= 0 else ""
        )

    async def append_internal(self, topic: str, partition: int, batch: bytes) -> WriteResult:
        """Append a batch the broker built itself (the group coordinator's records in
        ``__consumer_offsets``): checked like a producer's, appended in a worker thread
        under the flush policy, parked fetches told. Not counted as produce traffic."""
        plog = self.partition(topic, partition)
        if plog is None:
            return WriteResult(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        epoch = self.cluster.leader_epoch(topic, partition)
        try:
            validated = validate_batches(
                memoryview(batch), max_batch_bytes=plog.config.max_message_bytes
            )
            info = await trio.to_thread.run_sync(
                lambda: plog.append(validated, leader_epoch=epoch, now_ms=now_ms()),
                limiter=self.io_limiter,
            )
        except (RecordsError, LogError) as exc:
            return WriteResult(error_code=exc.error_code, error_message=str(exc))
        self.fetch_purgatory.check((topic, partition))
        return WriteResult(error_code=ErrorCode.NONE, base_offset=info.first_offset)

    def _failed(self, topic: str, code: int, message: str) -> WriteResult:
        if self.metrics is not None:
            self.metrics.record_produce_failure(topic)
        return WriteResult(error_code=code, error_message=message)

    async def read(
        self,
        topic: str,
        partition: int,
        fetch_offset: int,
        max_bytes: int,
        *,
        min_one: bool,
        committed_only: bool,
    ) -> ReadResult:
        plog = self.partition(topic, partition)
        if plog is None:
            return ReadResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not self.cluster.leads(topic, partition):
            return ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        try:
            info = plog.read(
                fetch_offset,
                max_bytes,
                min_one_batch=min_one,
                max_offset=plog.last_stable_offset if committed_only else plog.high_watermark,
            )
        except OffsetOutOfRange:
            if self.metrics is not None:
                self.metrics.record_fetch_failure(topic)
            return ReadResult(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                high_watermark=plog.high_watermark,
                last_stable_offset=plog.last_stable_offset,
                log_start_offset=plog.log_start_offset,
            )
        except LogStorageError as exc:
            log.error("read of %s-%d failed: %s", topic, partition, exc)
            return ReadResult(ErrorCode.KAFKA_STORAGE_ERROR)
        except LogError:
            return ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if self.metrics is not None and info.size_bytes:
            self.metrics.record_fetch(topic, info.size_bytes)
        return ReadResult(
            error_code=ErrorCode.NONE,
            high_watermark=info.high_watermark,
            last_stable_offset=info.last_stable_offset,
            log_start_offset=info.log_start_offset,
            records=info.regions if info.regions else b"",
            size=info.size_bytes,
        )

    def log_size(self, topic: str, partition: int) -> int:
        """The partition's size in bytes (-1 if it has no log here): cheap, for the
        readiness checks of parked fetches."""
        plog = self.partition(topic, partition)
        return -1 if plog is None else plog.size_bytes

    async def list_offset(
        self, topic: str, partition: int, timestamp: int, *, committed_only: bool
    ) -> tuple[int, int, int, int]:
        """(error, offset, timestamp, leader epoch) for ListOffsets."""
        plog = self.partition(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1
        if not self.cluster.leads(topic, partition):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1
        epoch = self.cluster.leader_epoch(topic, partition)
        if timestamp == EARLIEST:
            return ErrorCode.NONE, plog.log_start_offset, -1, epoch
        if timestamp == LATEST:
            end = plog.last_stable_offset if committed_only else plog.high_watermark
            return ErrorCode.NONE, end, -1, epoch
        try:
            if timestamp == MAX_TIMESTAMP:
                found = plog.max_timestamp_offset()
            elif timestamp < 0:
                return ErrorCode.INVALID_REQUEST, -1, -1, -1
            else:
                found = plog.offset_for_timestamp(timestamp)
        except LogStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR, -1, -1, -1
        if found is None:
            return ErrorCode.NONE, -1, -1, -1
        offset, ts = found
        return ErrorCode.NONE, offset, ts, epoch

    async def delete_records(self, topic: str, partition: int, offset: int) -> tuple[int, int]:
        """(error, low watermark) for DeleteRecords; offset -1 means the high watermark."""
        plog = self.partition(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        if not self.cluster.leads(topic, partition):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
        hw = plog.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        try:
            low = await trio.to_thread.run_sync(
                plog.delete_records_before, target, limiter=self.io_limiter
            )
        except LogStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR, -1
        return ErrorCode.NONE, low

    # ------------------------------------------------------------- maintenance

    async def run_maintenance(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Flush by time and apply retention, on Kafka's schedules, until cancelled."""
        flush_every = self.config["log.flush.scheduler.interval.ms"]
        retention_every = self.config["log.retention.check.interval.ms"]
        task_status.started()
        async with trio.open_nursery() as nursery:
            if flush_every < _NO_FLUSH_MS:
                nursery.start_soon(self._every, flush_every, self._flush_dirty)
            nursery.start_soon(self._every, retention_every, self._retention)

    async def _every(self, interval_ms: int, job: Any) -> None:
        while True:
            await trio.sleep(interval_ms / 1000)
            try:
                await trio.to_thread.run_sync(job, limiter=self.io_limiter)
            except LogError as exc:
                log.error("log maintenance failed: %s", exc)

    def _flush_dirty(self) -> None:
        assert self.logs is not None
        self.logs.flush_dirty(now_ms())

    def _retention(self) -> None:
        assert self.logs is not None
        now = now_ms()
        deleted = self.logs.apply_retention(now)
        if deleted:
            log.info("retention deleted %d segments", deleted)
        expiration = self.config["producer.id.expiration.ms"]
        for _, plog in self.logs.logs():
            plog.expire_producers(now, expiration)
