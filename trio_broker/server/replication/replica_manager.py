"""The partitions this broker holds, their logs, and the data path's I/O (Kafka's
ReplicaManager; the followers' and leaders' replication is ``leader``'s).

Owns: ``ReplicaManager``: opening the log manager at start-up (recovering what a crash
left), creating and deleting partition logs with their topic's configuration, appending
validated record batches, reading batches as file regions (offset questions are
``offset_queries``'), the replication throttles' state (``ReplicationQuotas``: the leader
holds a throttled partition back from a follower out of the ISR here), and the periodic
flush, retention and compaction (``LogCleaner``). A request's storage work, appends and
reads alike, is one job of the io pool (``num.io.threads``). After each append the fetch
purgatory is told: parked fetches complete once their bytes exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import trio

from ...apis.services import (
    ActiveProducer,
    LogDirInfo,
    ReadItem,
    ReadResult,
    TopicInfo,
    WriteResult,
)
from ...log.errors import LogError, LogStorageError, OffsetOutOfRange
from ...log.manager import LogManager
from ...log.partition_log import PartitionLog
from ...log.producer_state import ProducerStateError
from ...log.results import AppendInfo, ReadInfo
from ...protocol.errors import ErrorCode
from ...records.errors import RecordsError
from ..common import IoPool, Purgatory
from ..config import NO_FLUSH_MS, BrokerConfig, effective_topic_config, log_config_for
from . import log_io
from .cluster_state import ClusterState
from .leader import Replication
from .log_cleaner import LogCleaner
from .log_dirs import SURVEY_INTERVAL_MS, VolumeSurvey, describe_log_dirs
from .throttles import ReplicationQuotas

log = logging.getLogger("trio_broker.server")

ProduceItem = tuple[str, int, memoryview | None]  # topic, partition, records


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        io: IoPool,
        fetch_purgatory: Purgatory,
        cluster: ClusterState,
        metrics: Any = None,
        produce_purgatory: Purgatory | None = None,
    ) -> None:
        produce_purgatory = produce_purgatory or Purgatory("produce")
        # The threads of the scheduled log jobs (background.threads: see ``config``).
        self.background = trio.CapacityLimiter(config["background.threads"])
        self.config = config
        self.cluster = cluster
        self.io = io
        self.fetch_purgatory = fetch_purgatory
        self.metrics = metrics
        self.logs: LogManager | None = None
        # The event loop's token, so worker threads can hand figures back to it.
        self.trio_token: trio.lowlevel.TrioToken | None = None
        self.duplicate_batches = 0  # retried idempotent batches answered from the cache
        # Told (topic, partition, producer id, commit) once a transaction marker is
        # appended here as the leader and the ISR holds it (``txn_markers``): the group
        # coordinator's hook.
        self.marker_observers: list[Callable[[str, int, int, bool], None]] = []

        self._min_insync: dict[str, int] = {}
        # The leader's side of replication (its purgatory for acks=all is the broker's).
        self.replication = Replication(
            config.broker_id,
            self.partition,
            fetch_purgatory,
            produce_purgatory,
            lambda: self.config["replica.lag.time.max.ms"],
            self.min_insync,
        )
        # Replication throttles (KIP-73): this broker's sides of them, per topic as its
        # configs come into force (``_note_topic_configs``).
        self.throttles = ReplicationQuotas(
            config.broker_id,
            lambda: self.config,
            samples=config["replication.quota.window.num"],
            window_s=config["replication.quota.window.size.seconds"],
        )
        # Partitions whose last append failed on the disk: a full disk is logged once when
        # it starts failing and once when appends work again, not once per produce.
        self.storage_failing: set[tuple[str, int]] = set()
        # Compaction of the logs whose cleanup.policy has compact (its own threads).
        self.cleaner = LogCleaner(lambda: self.config, self._all_logs)
        self.volumes = VolumeSurvey()  # the log dirs' volumes, for the metrics

    def _all_logs(self) -> Iterator[tuple[tuple[str, int], PartitionLog]]:
        return self.logs.logs() if self.logs is not None else iter(())

    @property
    def config(self) -> BrokerConfig:
        return self._config

    @config.setter
    def config(self, new: BrokerConfig) -> None:
        """The running config; a changed ``background.threads`` or ``log.open.files.max``
        applies at once."""
        self._config = new
        self.background.total_tokens = new["background.threads"]
        logs: LogManager | None = getattr(self, "logs", None)  # (None in __init__)
        if logs is not None:
            logs.set_open_files_max(new["log.open.files.max"])

    # ------------------------------------------------------------- life cycle

    def open(self, topics: list[TopicInfo]) -> None:
        """Load every partition log (blocking: call from a thread) and create missing ones."""
        configs = {t.name: log_config_for(self.config, t.configs) for t in topics}
        dirs, default = list(self.config.log_dirs), log_config_for(self.config, {})
        threads = self.config["num.recovery.threads.per.data.dir"]
        files = self.config["log.open.files.max"]
        self.logs = LogManager(dirs, default, configs, recovery_threads=threads, max_files=files)
        if self.metrics is not None:  # (log.open_files in the metrics)
            self.metrics.set_open_files(self.logs.files.figures)
        for t in topics:
            if self.cluster.authoritative:  # the controller says which logs are held here
                self._note_topic_configs(t)
            else:
                self.create_logs(t)
        for _, plog in self.logs.logs():
            self._observe(plog)
        self._survey_volumes()
        # A log that may have followers keeps its high watermark as checkpointed (the
        # ISR's), not its end: in a ZooKeeper cluster every log until the controller's
        # LeaderAndIsr says how many replicas it has.
        for (topic, index), held in self.logs.logs():
            state = self.cluster.leadership.get((topic, index))
            if self.cluster.authoritative or (state is not None and len(state.replicas) > 1):
                held.replicated = True

    def _observe(self, plog: PartitionLog) -> None:
        """Report the log's fsync times to the metrics, from whatever thread flushes it."""
        plog.roll_listener = self.cleaner.rolled  # a compacted log's roll wakes the cleaner
        metrics, token = self.metrics, self.trio_token
        if metrics is None or token is None:
            return

        def flushed(ms: float) -> None:
            token.run_sync_soon(metrics.record_log_flush, ms)  # thread-safe, never blocks

        plog.flush_listener = flushed

    def close(self) -> None:
        if self.logs is not None:
            self.logs.close()

    def create_logs(self, topic: TopicInfo, only: int | None = None) -> None:
        """Create the logs of every partition of ``topic`` (or of partition ``only``)
        that has none (blocking)."""
        assert self.logs is not None
        config = log_config_for(self.config, topic.configs)
        self._note_topic_configs(topic)
        wanted = [p.index for p in topic.partitions if only is None or p.index == only]
        missing = [i for i in wanted if self.logs.get(topic.name, i) is None]
        for plog in self.logs.create_all(topic.name, missing, config, topic_id=topic.topic_id):
            self._observe(plog)

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
        self.throttles.forget_topic(topic.name)

    def _note_topic_configs(self, topic: TopicInfo) -> None:
        """The topic's configs read on the data path: min.insync.replicas and the
        replication throttles' lists (called as they come into force, on any thread)."""
        entry = effective_topic_config(self.config, topic.configs)["min.insync.replicas"]
        self._min_insync[topic.name] = int(entry.value)
        self.throttles.note_topic(topic.name, topic.configs)

    def min_insync(self, topic: str) -> int:
        return self._min_insync.get(topic, 1)

    def reconfigure(self, topic: TopicInfo) -> None:
        assert self.logs is not None
        config = log_config_for(self.config, topic.configs)
        self._note_topic_configs(topic)
        for p in topic.partitions:
            plog = self.logs.get(topic.name, p.index)
            if plog is not None:
                plog.reconfigure(config)
        if self.trio_token is not None:  # a cleanup.policy may have changed: look now
            self.trio_token.run_sync_soon(self.cleaner.wake)

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get(topic, partition) if self.logs is not None else None

    # ------------------------------------------------------------- data path
    #
    # Each request's storage work is one job on the io pool: the checks that read only
    # the broker's state run on the event loop, then every partition's append, read,
    # lookup or deletion runs in one call on an io thread, then the results are counted
    # and parked fetches told, on the loop again. One thread hop per request.

    async def produce_many(self, items: Sequence[ProduceItem], acks: int) -> list[WriteResult]:
        """Append each item's batches (validated by header and CRC on the io thread)."""
        results: list[WriteResult | None] = [None] * len(items)
        jobs: list[tuple[int, PartitionLog, memoryview, int]] = []
        for i, (topic, partition, records) in enumerate(items):
            plog = self.partition(topic, partition)
            if plog is None:
                results[i] = self._failed(
                    topic,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"this broker has no partition {partition} of topic {topic!r}",
                )
            elif not self.cluster.leads(topic, partition):
                results[i] = self._failed(
                    topic, ErrorCode.NOT_LEADER_OR_FOLLOWER, self._not_leader(topic, partition)
                )
            elif records is None or len(records) == 0:
                results[i] = self._failed(
                    topic,
                    ErrorCode.INVALID_RECORD,
                    "a produce request must hold one record batch per partition; it has none",
                )
            elif acks == -1 and not self.replication.enough_replicas(
                topic, partition, self.min_insync(topic)
            ):
                results[i] = self._failed(
                    topic,
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"min.insync.replicas={self.min_insync(topic)} but the ISR of "
                    f"{topic}-{partition} has {self.replication.isr_size(topic, partition)}",
                )
            else:
                jobs.append((i, plog, records, self.cluster.leader_epoch(topic, partition)))
        if jobs:
            outcomes = await self.io.run(
                lambda: [log_io.append(plog, r, e, one_batch=True) for _, plog, r, e in jobs]
            )
            for (i, _, _, _), outcome in zip(jobs, outcomes, strict=True):
                topic, partition, _ = items[i]
                results[i] = self._write_result(topic, partition, outcome)
        return [r for r in results if r is not None]

    def _write_result(
        self, topic: str, partition: int, outcome: AppendInfo | Exception
    ) -> WriteResult:
        if isinstance(outcome, LogStorageError):
            self._storage_failed(topic, partition, outcome)
            return self._failed(topic, ErrorCode.KAFKA_STORAGE_ERROR, str(outcome))
        if isinstance(outcome, RecordsError):
            return self._failed(topic, outcome.error_code, str(outcome), outcome.record_errors)
        if isinstance(outcome, ProducerStateError):
            return self._failed(topic, outcome.error_code, str(outcome))
        if isinstance(outcome, LogError):  # the log was closed or deleted meanwhile
            return self._failed(topic, ErrorCode.NOT_LEADER_OR_FOLLOWER, str(outcome))
        if isinstance(outcome, Exception):
            raise outcome
        info = outcome
        if info.duplicate:  # a retry of a batch already stored: same answer as the first
            self.duplicate_batches += 1
            return WriteResult(
                error_code=ErrorCode.NONE,
                base_offset=info.first_offset,
                log_start_offset=info.log_start_offset,
                required_offset=info.last_offset + 1,
            )
        if self.storage_failing:
            self._storage_works(topic, partition)
        if self.metrics is not None:
            self.metrics.record_produce(topic, partition, info.size_bytes, info.record_count)
        self.fetch_purgatory.check((topic, partition))
        self.replication.appended(topic, partition)
        return WriteResult(
            error_code=ErrorCode.NONE,
            base_offset=info.first_offset,
            log_append_time_ms=info.log_append_time_ms,
            log_start_offset=info.log_start_offset,
            required_offset=info.last_offset + 1,
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

    def lso_lags(self) -> dict[str, int]:
        """``topic-partition`` -> high watermark minus last stable offset, for the
        partitions this broker leads where an open transaction holds the LSO back."""
        out: dict[str, int] = {}
        for (topic, partition), plog in self._all_logs():
            lag = plog.high_watermark - plog.last_stable_offset
            if lag > 0 and self.cluster.leads(topic, partition):
                out[f"{topic}-{partition}"] = lag
        return out

    async def describe_producers(
        self, topic: str, partition: int
    ) -> tuple[int, list[ActiveProducer]]:
        """DescribeProducers for one partition this broker leads (read on an io thread:
        the log's lock may be held by an append)."""
        plog = self.partition(topic, partition)
        if plog is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []
        if not self.cluster.leads(topic, partition):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, []
        rows = await self.io.run(plog.active_producers)
        return ErrorCode.NONE, [ActiveProducer(*row) for row in rows]

    async def append_internal(self, topic: str, partition: int, batch: bytes) -> WriteResult:
        """Append a batch the broker built itself (the group coordinator's records in
        ``__consumer_offsets``): checked like a producer's, appended on an io thread
        under the flush policy, parked fetches told. Not counted as produce traffic."""
        plog = self.partition(topic, partition)
        if plog is None:
            return WriteResult(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        epoch = self.cluster.leader_epoch(topic, partition)
        outcome = await self.io.run(lambda: log_io.append(plog, memoryview(batch), epoch))
        if isinstance(outcome, (RecordsError, LogError, ProducerStateError)):
            return WriteResult(error_code=outcome.error_code, error_message=str(outcome))
        if isinstance(outcome, Exception):
            raise outcome
        self.fetch_purgatory.check((topic, partition))
        self.replication.appended(topic, partition)
        return WriteResult(
            error_code=ErrorCode.NONE,
            base_offset=outcome.first_offset,
            required_offset=outcome.last_offset + 1,
        )

    def _failed(
        self,
        topic: str,
        code: int,
        message: str,
        record_errors: list[tuple[int, str | None]] | None = None,
    ) -> WriteResult:
        if self.metrics is not None:
            self.metrics.record_produce_failure(topic)
        return WriteResult(
            error_code=code, error_message=message, record_errors=record_errors or []
        )

    async def read_many(
        self,
        items: Sequence[ReadItem],
        max_bytes: int,
        *,
        committed_only: bool,
        replica_id: int = -1,
    ) -> list[ReadResult]:
        """Read each item in order within ``max_bytes`` in all; the first batch found is
        returned even if larger. The record data comes back resident in the page cache,
        as file regions. As Kafka's leader: a current leader epoch that is not this one's
        is refused, and a last fetched epoch the log does not hold up to the fetch offset
        is answered with the diverging epoch (its end in this log) and no records. A
        follower (``replica_id`` >= 0) reads past the high watermark, and its fetch offset
        is its progress (``Replication.follower_fetched``); a partition the leader's
        replication throttle holds back comes back ``held``, without records."""
        results: list[ReadResult | None] = [None] * len(items)
        jobs: list[tuple[int, PartitionLog, int, int]] = []
        for i, (topic, partition, offset, limit, current, last_fetched) in enumerate(items):
            plog = self.partition(topic, partition)
            if plog is None:
                results[i] = ReadResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif not self.cluster.leads(topic, partition):
                results[i] = ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            elif error := self.cluster.epoch_error(topic, partition, current):
                results[i] = ReadResult(error)
            elif last_fetched >= 0 and (diverged := log_io.diverging(plog, last_fetched, offset)):
                results[i] = ReadResult(
                    ErrorCode.NONE,
                    plog.high_watermark,
                    plog.last_stable_offset,
                    plog.log_start_offset,
                    b"",
                    diverging_epoch=diverged,
                )
            else:
                if replica_id >= 0:
                    self.replication.follower_fetched(topic, partition, replica_id, offset)
                    if held := self._held(topic, partition, replica_id, plog, offset):
                        results[i] = held
                        continue
                jobs.append((i, plog, offset, limit))
        follower = replica_id >= 0
        if jobs:

            def read_all() -> list[ReadInfo | Exception]:
                out: list[ReadInfo | Exception] = []
                remaining = max_bytes
                got_data = False
                for _, plog, offset, limit in jobs:
                    outcome = log_io.read(
                        plog,
                        offset,
                        max(0, min(limit, remaining)),
                        not got_data,
                        None if follower else committed_only,
                    )
                    if isinstance(outcome, ReadInfo):
                        remaining -= outcome.size_bytes
                        got_data = got_data or outcome.size_bytes > 0
                    out.append(outcome)
                return out

            for (i, plog, _, _), outcome in zip(jobs, await self.io.run(read_all), strict=True):
                results[i] = self._read_result(items[i][0], items[i][1], plog, outcome, follower)
        return [r for r in results if r is not None]

    def _held(
        self, topic: str, partition: int, replica: int, plog: PartitionLog, at: int
    ) -> ReadResult | None:
        """The answer, without records, to a follower's read the leader's replication
        throttle holds back (Kafka's shouldLeaderThrottle), or None to read it (an offset
        out of range is read, to be answered as such)."""
        if not plog.log_start_offset <= at <= plog.log_end_offset:
            return None
        state = self.replication.leaders.get((topic, partition))
        in_sync = state is not None and replica in state.isr
        if not self.throttles.leader.holds(topic, partition, in_sync):
            return None
        hw, lso, start = plog.high_watermark, plog.last_stable_offset, plog.log_start_offset
        return ReadResult(ErrorCode.NONE, hw, lso, start, b"", held=True)

    def _read_result(
        self,
        topic: str,
        partition: int,
        plog: PartitionLog,
        outcome: ReadInfo | Exception,
        follower: bool,
    ) -> ReadResult:
        if isinstance(outcome, OffsetOutOfRange):
            if self.metrics is not None and not follower:
                self.metrics.record_fetch_failure(topic)
            return ReadResult(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                high_watermark=plog.high_watermark,
                last_stable_offset=plog.last_stable_offset,
                log_start_offset=plog.log_start_offset,
            )
        if isinstance(outcome, LogStorageError):
            log.error("read of %s-%d failed: %s", topic, partition, outcome)
            return ReadResult(ErrorCode.KAFKA_STORAGE_ERROR)
        if isinstance(outcome, LogError):
            return ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if isinstance(outcome, Exception):
            raise outcome
        info = outcome
        return ReadResult(
            error_code=ErrorCode.NONE,
            high_watermark=info.high_watermark,
            last_stable_offset=info.last_stable_offset,
            log_start_offset=info.log_start_offset,
            records=info.regions if info.regions else b"",
            size=info.size_bytes,
            aborted_transactions=info.aborted_transactions,
        )

    def consumer_fetched(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A consumer's Fetch response went out with these (topic, partition, bytes):
        counted (its bytes out, a fetch request per partition)."""
        if self.metrics is not None:
            self.metrics.record_fetched(sizes)

    def replication_sent(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A follower's Fetch response went out with these: the leader's throttle and the
        partitions' replication bytes count them."""
        self.throttles.leader.record_sent(sizes)
        if self.metrics is not None:
            self.metrics.record_replication_sent(sizes)

    def log_size(self, topic: str, partition: int) -> int:
        """The partition's size in bytes (-1 if it has no log here): cheap, for the
        readiness checks of parked fetches."""
        plog = self.partition(topic, partition)
        return -1 if plog is None else plog.size_bytes

    def consumer_horizon(
        self, topic: str, partition: int, committed_only: bool = False
    ) -> int | None:
        """The high watermark of a replicated partition, its last stable offset for
        read_committed (a parked consumer fetch waits for it to move, not for the log to
        grow); None for a single replica, unless a transaction holds its last stable
        offset below the log end."""
        plog = self.partition(topic, partition)
        if plog is None:
            return None
        if committed_only:
            lso = plog.last_stable_offset
            return lso if plog.replicated or lso < plog.log_end_offset else None
        return plog.high_watermark if plog.replicated else None

    async def log_dirs(self, wanted: Mapping[str, Sequence[int]] | None) -> list[LogDirInfo]:
        """DescribeLogDirs (``log_dirs.describe_log_dirs``; the volumes read on the io pool)."""
        assert self.logs is not None
        return await describe_log_dirs(self.logs.log_dirs, self._all_logs(), wanted, self.io.run)

    def log_dir_figures(self) -> list[dict[str, Any]]:
        """The metrics' ``log_dirs`` section (volumes as last surveyed)."""
        return self.volumes.figures(self._all_logs())

    def _survey_volumes(self) -> None:
        if self.logs is not None:
            self.volumes.survey(self.logs.log_dirs)

    # ------------------------------------------------------------- maintenance

    async def run_maintenance(
        self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Flush by time, apply retention and clean compacted logs, on Kafka's schedules,
        until cancelled."""
        flush_every = self.config["log.flush.scheduler.interval.ms"]
        retention_every = self.config["log.retention.check.interval.ms"]
        task_status.started()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.cleaner.run)
            if flush_every < NO_FLUSH_MS:
                nursery.start_soon(self._every, flush_every, self._flush_dirty)
            nursery.start_soon(self._every, retention_every, self._retention)
            hw_every = self.config["replica.high.watermark.checkpoint.interval.ms"]
            nursery.start_soon(self._every, hw_every, self._checkpoint_replicated)
            nursery.start_soon(self._every, SURVEY_INTERVAL_MS, self._survey_volumes)

    async def _every(self, interval_ms: int, job: Any) -> None:
        """Run ``job`` on a worker thread every ``interval_ms``, at most
        ``background.threads`` of them at once."""
        while True:
            await trio.sleep(interval_ms / 1000)
            try:
                await trio.to_thread.run_sync(job, limiter=self.background)
            except LogError as exc:
                log.error("log maintenance failed: %s", exc)

    def _flush_dirty(self) -> None:
        assert self.logs is not None
        self.logs.flush_dirty(now_ms())

    def _checkpoint_replicated(self) -> None:
        """Persist the high watermarks of replicated logs (Kafka's
        replication-offset-checkpoint), so a restart does not begin far behind; and those
        of the logs a clean start loaded from the log dirs' files (``checkpoint_loaded``)."""
        if self.logs is not None:
            self.logs.checkpoint_loaded()
        for _, plog in self._all_logs():
            if plog.replicated and not plog.closed:
                plog.checkpoint()

    def _retention(self) -> None:
        assert self.logs is not None
        now = now_ms()
        deleted = self.logs.apply_retention(now)
        if deleted:
            log.info("retention deleted %d segments", deleted)
        expiration = self.config["producer.id.expiration.ms"]
        for _, plog in self.logs.logs():
            plog.expire_producers(now, expiration)
