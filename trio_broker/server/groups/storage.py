"""Where the coordinator's records go: ``__consumer_offsets``, written in order.

Owns: ``partition_for`` (a group's partition: Java's ``String.hashCode`` of the group id,
made non-negative as Kafka's ``Utils.abs`` does, modulo the partition count), the
``OffsetsTopic`` protocol the coordinator writes and replays through, ``LogOffsetsTopic``
(the real one: the internal topic in the broker's topic catalog and partition logs,
created at start-up, marked internal, compacted, never expired by time or size), and
``OrderedWriter``, the single task that appends.

Ordering: the coordinator changes its state synchronously and calls ``submit`` at once,
so records reach each partition's log in exactly the order of the state changes they
describe. The writer takes everything queued for a partition and appends it as one batch
(several commits share one append and one fsync when the flush policy asks for it), then
runs each submission's ``on_done`` callback, in order, and wakes its waiter. The callback
is where the coordinator applies what was written, so the cache never goes back in time.
A submission with no records appends nothing: it is acknowledged once everything
submitted before it for that partition is (a KIP-848 heartbeat that changed nothing waits
so for the changes it was answered from).
It must not decide what gets written, nor know about groups.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

import trio

from ...apis.services import TopicInfo
from ...apis.topic_names import OFFSETS_TOPIC
from ...log.errors import LogError
from ...log.partition_log import PartitionLog
from ...protocol.errors import ErrorCode
from ...records import Record, build_batch, iter_batches, iter_records
from ..config import BrokerConfig

if TYPE_CHECKING:
    from ..replication import ReplicaManager
    from ..topics import TopicCatalog

log = logging.getLogger("trio_broker.groups")

# The internal topic's own configs, Kafka's: compacted (the coordinator writes tombstones
# for expired offsets and deleted groups), never deleted by time or size.
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "segment.bytes": str(100 * 1024 * 1024),
}
_MAX_RECORDS_PER_BATCH = 2000


@dataclass(frozen=True, slots=True)
class InternalTopicSpec:
    """A coordinator's internal topic: ``__consumer_offsets`` (``OFFSETS``) or the
    transaction coordinator's ``__transaction_state``."""

    name: str
    partitions_key: str  # the broker key of its partition count
    replication_key: str  # ... of its replication factor (in a ZooKeeper cluster)
    configs: Callable[[BrokerConfig], dict[str, str]]  # its topic configs
    timeout_s: Callable[[BrokerConfig], float]  # how long an append waits for the ISR


OFFSETS = InternalTopicSpec(
    OFFSETS_TOPIC,
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    lambda config: dict(OFFSETS_TOPIC_CONFIGS),
    # As Kafka's coordinator writes: acks=all, within offsets.commit.timeout.ms.
    lambda config: float(config["offsets.commit.timeout.ms"]) / 1000,
)
_READ_CHUNK = 1 << 20


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, in int32 arithmetic)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def coordinator_error(code: int) -> int:
    """The error a failed append of coordinator records is reported as (Kafka's mapping)."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return code


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record read back; a transaction's records carry their producer id, and a
    transaction marker comes as a record without key or value whose ``commit`` says
    which (None: not a marker)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    transactional: bool = False
    commit: bool | None = None


# A transactional writer of coordinator records: (producer id, epoch).
Producer = tuple[int, int]


class OffsetsTopic(Protocol):
    """The coordinator's log: opened (blocking) once, read back once, then appended to."""

    partitions: int

    def open(self) -> int:
        """Make sure the topic and its logs exist; returns the partition count (blocking)."""
        ...

    def scan(self) -> Iterator[StoredRecord]:
        """Every record, partition by partition, in log order (blocking, lazily)."""
        ...

    async def append(
        self, partition: int, records: Sequence[Record], producer: Producer | None = None
    ) -> int:
        """Append ``records`` as one batch (a transactional one of ``producer``'s);
        returns an error code (0: written)."""
        ...


class LogOffsetsTopic:
    """``__consumer_offsets`` (or another ``InternalTopicSpec``'s topic) in the broker's
    own catalog and logs. In a ZooKeeper cluster (``replicated``) the topic is the
    cluster's (created on the first FindCoordinator, placed by the controller): nothing is
    created here, a partition is read back when this broker becomes its leader, and an
    append counts once the ISR has it."""

    def __init__(
        self,
        config: BrokerConfig,
        catalog: TopicCatalog,
        replica_manager: ReplicaManager,
        *,
        replicated: bool = False,
        spec: InternalTopicSpec = OFFSETS,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.config = config
        self.catalog = catalog
        self.replica_manager = replica_manager
        self.replicated = replicated
        self.partitions = 0

    def open(self) -> int:
        spec = self.spec
        if self.replicated:
            self.partitions = self.config[spec.partitions_key]
            return self.partitions
        info: TopicInfo = self.catalog.create(
            spec.name, self.config[spec.partitions_key], spec.configs(self.config), internal=True
        )
        if not info.internal:
            log.warning("%s exists but is not marked internal", spec.name)
        if info.configs.get("cleanup.policy") is None:
            # Created before compaction existed: compact it from now on.
            info = replace(info, configs={**info.configs, "cleanup.policy": "compact"})
            self.catalog.replace(info)
        self.replica_manager.create_logs(info)
        self.partitions = len(info.partitions)
        return self.partitions

    def scan(self) -> Iterator[StoredRecord]:
        if self.replicated:
            return  # each partition is read when this broker comes to lead it
        for p in range(self.partitions):
            yield from self.scan_partition(p)

    def scan_partition(self, partition: int) -> Iterator[StoredRecord]:
        plog = self.replica_manager.partition(self.name, partition)
        if plog is not None:
            yield from _scan_log(partition, plog)

    async def append(
        self, partition: int, records: Sequence[Record], producer: Producer | None = None
    ) -> int:
        rm = self.replica_manager
        if self.replicated and not rm.cluster.leads(self.name, partition):
            return int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if producer is None:
            batch = build_batch(records)
        else:  # a transaction's records (TxnOffsetCommit): no sequence, as Kafka's
            pid, epoch = producer
            batch = build_batch(
                records, producer_id=pid, producer_epoch=epoch, is_transactional=True
            )
        result = await rm.append_internal(self.name, partition, batch)
        if result.error_code or not self.replicated:
            return int(result.error_code)
        timeout_s = self.spec.timeout_s(self.config)
        return await rm.replication.wait_replicated(
            self.name, partition, result.required_offset, timeout_s
        )


def _scan_log(partition: int, plog: PartitionLog) -> Iterator[StoredRecord]:
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        info = plog.read(offset, _READ_CHUNK, min_one_batch=True)
        try:
            if not info.regions:
                break
            for region in info.regions:
                data = os.pread(region.file.fileno(), region.length, region.offset)
                for header, batch in iter_batches(data):
                    pid, txn = header.producer_id, header.is_transactional
                    for r in iter_records(batch):
                        if header.is_control:  # key: version int16, type int16 (1: commit)
                            commit = r.key is not None and r.key[2:4] == b"\x00\x01"
                            yield StoredRecord(partition, r.offset, None, None, pid, txn, commit)
                        else:
                            yield StoredRecord(partition, r.offset, r.key, r.value, pid, txn)
        finally:
            info.release()
        if info.next_fetch_offset <= offset:
            break
        offset = info.next_fetch_offset


@dataclass(eq=False, slots=True)
class Ack:
    """The outcome of one submission, once appended (or failed)."""

    error_code: int | None = None
    _event: trio.Event = field(default_factory=trio.Event)

    @property
    def done(self) -> bool:
        return self.error_code is not None

    async def wait(self) -> int:
        await self._event.wait()
        assert self.error_code is not None
        return self.error_code

    def _set(self, code: int) -> None:
        self.error_code = code
        self._event.set()


@dataclass(eq=False, slots=True)
class _Entry:
    records: list[Record]
    on_done: Callable[[int], None] | None
    ack: Ack
    producer: Producer | None = None  # a transaction's: a batch of its own


class OrderedWriter:
    def __init__(self, topic: OffsetsTopic) -> None:
        self.topic = topic
        self._queues: dict[int, deque[_Entry]] = {}
        self._wakeup = trio.Event()
        self._closed = False
        self.appends = 0

    def submit(
        self,
        partition: int,
        records: Sequence[Record],
        on_done: Callable[[int], None] | None = None,
        producer: Producer | None = None,
    ) -> Ack:
        """Queue ``records`` for ``partition``; ``on_done(error)`` runs once appended.
        A ``producer``'s records go in a transactional batch of their own."""
        ack = Ack()
        entry = _Entry(list(records), on_done, ack, producer)
        if self._closed:
            self._finish(entry, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return ack
        self._queues.setdefault(partition, deque()).append(entry)
        self._wakeup.set()
        return ack

    @property
    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Append what is submitted until cancelled; then fail what is left."""
        task_status.started()
        try:
            while True:
                if not any(self._queues.values()):
                    self._wakeup = trio.Event()
                    await self._wakeup.wait()
                for partition in list(self._queues):
                    await self._drain(partition)
        finally:
            self._closed = True
            for queue in self._queues.values():
                while queue:
                    self._finish(queue.popleft(), ErrorCode.COORDINATOR_NOT_AVAILABLE)

    async def _drain(self, partition: int) -> None:
        queue = self._queues[partition]
        while queue:
            entries = [queue.popleft()]
            count, producer = len(entries[0].records), entries[0].producer
            while (
                producer is None
                and queue
                and queue[0].producer is None
                and count + len(queue[0].records) <= _MAX_RECORDS_PER_BATCH
            ):
                entry = queue.popleft()
                entries.append(entry)
                count += len(entry.records)
            records = [r for e in entries for r in e.records]
            try:
                code = await self.topic.append(partition, records, producer) if records else 0
            except (LogError, OSError) as exc:
                name = getattr(self.topic, "name", OFFSETS_TOPIC)
                log.error("%s-%d: append failed: %s", name, partition, exc)
                code = ErrorCode.KAFKA_STORAGE_ERROR
            except Exception:  # a bug: these writes fail, the broker goes on
                name = getattr(self.topic, "name", OFFSETS_TOPIC)
                log.exception("%s-%d: append failed", name, partition)
                code = ErrorCode.UNKNOWN_SERVER_ERROR
            except BaseException:
                for entry in entries:  # cancelled mid-append: they are not known to be written
                    self._finish(entry, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                raise
            self.appends += 1 if records else 0
            code = coordinator_error(code) if code else 0
            for entry in entries:
                self._finish(entry, code)

    @staticmethod
    def _finish(entry: _Entry, code: int) -> None:
        if entry.on_done is not None:
            try:
                entry.on_done(code)
            except Exception:
                log.exception("coordinator write callback failed")
        entry.ack._set(code)
