"""The broker's metrics: one object that records, samples and reports every figure.

Owns: ``BrokerMetrics``. It holds the request metrics, the topic and partition metrics,
the log-flush histogram, the event loop's monitor (busy ratio, stalls), the io pool's
thread sampler and storage-job histograms, and one idle-ratio sampler per handler pool and
per listener; it hooks its observers into the request path (``SocketServer.request_observers`` and
``RequestHandler.response_observers``) when ``metrics.enabled`` is true; it runs the sampler task
(``run``, one sample per window slot, ended by ``stop``); and it reports
(``snapshot`` for the JSON snapshot, ``prometheus_text`` for Prometheus, both from the same
figures). The data path and the log call the small recording API: ``record_produce``,
``record_produce_failure``, ``record_fetched``, ``record_fetch_failure``,
``record_replication_sent``, ``record_replica_fetch``, ``forget_topic``,
``record_log_flush``; the memory pool of ``queued.max.request.bytes`` plugs in with
``set_memory_pool``, the authorizer's figures with ``set_authorization``, the state of
the partition replicas and log dirs the broker holds with ``set_partitions``. With
``metrics.enabled=false`` nothing is recorded per request or per batch; gauges (pools,
queues, connections, authorization) are still read when asked.
Must not: keep a figure twice, block, or hold the event loop for long.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import trio

from .event_loop import EventLoopMonitor
from .partitions import PartitionMetrics
from .pools import HandlerSampler, IoSampler, ProcessorSampler
from .requests import RequestMetrics
from .topics import TopicMetrics
from .window import Window, WindowedHistogram

if TYPE_CHECKING:
    from ...apis.fetch_sessions import FetchSessionCache
    from ...network.socket_server import SocketServer
    from ..common import IoPool, Purgatory
    from ..handlers import HandlerPool, RequestHandler

SLOTS = 6
MemoryPoolProbe = Callable[[], tuple[int, int]]
"""Returns (available bytes, used bytes) of the request memory pool."""
AuthorizationProbe = Callable[[], dict[str, Any]]
"""Returns the snapshot's ``authorization`` section."""
PartitionsProbe = Callable[[], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
"""Returns the held replicas' state (one dict each, with ``topic`` and ``partition``) and
the ``log_dirs`` section."""


class BrokerMetrics:
    def __init__(
        self,
        *,
        broker_id: int,
        window_s: float,
        enabled: bool,
        socket_server: SocketServer,
        handler_pools: Mapping[str, tuple[str, HandlerPool]],
        request_handler: RequestHandler | None = None,
        io_pool: IoPool | None = None,
        purgatories: Callable[[], Mapping[str, Purgatory]] = dict,
        fetch_sessions: FetchSessionCache | None = None,
        started_ns: int | None = None,
        memory_pool_capacity: int = -1,
        clock: Callable[[], int] = time.monotonic_ns,
        wall_clock: Callable[[], float] = time.time,
        partition_series: Callable[[], bool] = lambda: True,
    ) -> None:
        """``handler_pools`` maps a pool's name ("io", "control") to (plane, pool);
        ``partition_series`` says whether Prometheus gets the per-partition series
        (``metrics.partition.prometheus.enable``, read at every scrape)."""
        self.broker_id = broker_id
        self.enabled = enabled
        self.window = Window(window_s, SLOTS, clock)
        self.wall_clock = wall_clock
        self.started_ns = clock() if started_ns is None else started_ns
        self.socket_server = socket_server
        self.request_handler = request_handler
        self.fetch_sessions = fetch_sessions
        self.purgatories = purgatories
        self.requests = RequestMetrics(self.window)
        self.topics = TopicMetrics()
        self.partitions = PartitionMetrics()
        self.partition_series = partition_series
        self.log_flush = WindowedHistogram(self.window)
        self.event_loop = EventLoopMonitor(self.window, clock)
        self.io_pool = io_pool
        self.io_sampler = IoSampler(self.window, io_pool) if io_pool is not None else None
        self.storage_queue_time = WindowedHistogram(self.window)  # us waiting for a thread
        self.storage_time = WindowedHistogram(self.window)  # us on the thread
        if io_pool is not None:
            io_pool.observers.append(self.record_storage_job)
        self.memory_pool_capacity = memory_pool_capacity
        self._memory_probe: MemoryPoolProbe | None = None
        self._authorization_probe: AuthorizationProbe | None = None
        self._log_cleaner_probe: Callable[[], dict[str, Any]] | None = None
        self._open_files_probe: Callable[[], dict[str, int | None]] | None = None
        self._cluster_probe: Callable[[], dict[str, Any]] | None = None
        self._transactions_probe: Callable[[], dict[str, Any]] | None = None
        self._groups_probe: Callable[[], dict[str, Any]] | None = None
        self._client_telemetry_probe: Callable[[], dict[str, Any]] | None = None
        # the clients' pushed points for Prometheus (KIP-714): set with the probe above
        self.client_series: Callable[[], list[tuple[str, dict[str, str], float]]] = list
        self._partitions_probe: PartitionsProbe | None = None
        self.pool_planes = {name: plane for name, (plane, _) in handler_pools.items()}
        self.handler_samplers = {
            name: HandlerSampler(self.window, pool) for name, (_, pool) in handler_pools.items()
        }
        self.processor_samplers = {
            name: ProcessorSampler(self.window, lr) for name, lr in socket_server.listeners.items()
        }
        self._scope = trio.CancelScope()
        if enabled:
            socket_server.request_observers.append(self.requests.completed)
            if request_handler is not None:
                request_handler.response_observers.append(self.requests.response)

    # ------------------------------------------------------------ sampler task

    async def run(self) -> None:
        """Watch the event loop and sample the pools' busy times at every slot boundary
        until ``stop``."""
        window = self.window
        trio.lowlevel.add_instrument(self.event_loop)
        try:
            with self._scope:
                while True:
                    now = window.clock()
                    next_boundary = (now // window.slot_ns + 1) * window.slot_ns
                    await trio.sleep((next_boundary - now) / 1e9)
                    self.sample()
        finally:
            trio.lowlevel.remove_instrument(self.event_loop)

    def sample(self, now_ns: int | None = None) -> None:
        now = self.window.clock() if now_ns is None else now_ns
        for h in self.handler_samplers.values():
            h.sample(now)
        for p in self.processor_samplers.values():
            p.sample(now)
        if self.io_sampler is not None:
            self.io_sampler.sample(now)
        self.event_loop.sample(now)

    def stop(self) -> None:
        self._scope.cancel()

    # ------------------------------------------------------- recording (data path)

    def record_produce(self, topic: str, partition: int, nbytes: int, messages: int) -> None:
        """A produce appended ``messages`` records of ``nbytes`` bytes to a partition
        this broker leads."""
        if self.enabled:
            self.topics.record_produce(topic, nbytes, messages)
            self.partitions.produced(topic, partition, nbytes, messages)

    def record_produce_failure(self, topic: str) -> None:
        if self.enabled:
            self.topics.record_produce_failure(topic)

    def record_fetched(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A consumer's Fetch response went out with these (topic, partition, bytes), one
        per partition it asked for that answered without an error."""
        if self.enabled:
            self.partitions.fetched(sizes)
            topics = self.topics
            for topic, _, nbytes in sizes:
                if nbytes:
                    topics.record_fetch(topic, nbytes)

    def record_replication_sent(self, sizes: Sequence[tuple[str, int, int]]) -> None:
        """A follower's Fetch response went out with these (topic, partition, bytes)."""
        if self.enabled:
            self.partitions.replication_sent(sizes)

    def record_replica_fetch(self, topic: str, partition: int, nbytes: int) -> None:
        """As follower, ``nbytes`` fetched from the partition's leader were appended."""
        if self.enabled:
            self.partitions.replication_received(topic, partition, nbytes)

    def record_fetch_failure(self, topic: str) -> None:
        if self.enabled:
            self.topics.record_fetch_failure(topic)

    def forget_topic(self, topic: str) -> None:
        """A deleted topic leaves the per-topic and per-partition figures."""
        self.topics.forget(topic)
        self.partitions.forget_topic(topic)

    def record_log_flush(self, ms: float) -> None:
        """A log flush took ``ms`` milliseconds (Kafka's LogFlushRateAndTimeMs)."""
        if self.enabled:
            now = self.window.clock()
            self.log_flush.record(int(ms * 1000), now // self.window.slot_ns)

    def record_storage_job(self, wait_ms: float, work_ms: float) -> None:
        """One io-pool job waited ``wait_ms`` for a thread and ran ``work_ms`` on it."""
        if self.enabled:
            epoch = self.window.clock() // self.window.slot_ns
            self.storage_queue_time.record(int(wait_ms * 1000), epoch)
            self.storage_time.record(int(work_ms * 1000), epoch)

    def set_memory_pool(self, probe: MemoryPoolProbe | None) -> None:
        """Where MemoryPoolAvailable / MemoryPoolUsed come from (None: no pool)."""
        self._memory_probe = probe

    def set_cluster(self, probe: Callable[[], dict[str, Any]] | None) -> None:
        """Where the ``cluster`` section (controller, brokers, offline partitions) comes
        from."""
        self._cluster_probe = probe

    def cluster(self) -> dict[str, Any] | None:
        return self._cluster_probe() if self._cluster_probe is not None else None

    def set_partitions(self, probe: PartitionsProbe | None) -> None:
        """Where the state of the partition replicas this broker holds (the
        ``partitions`` section without its counters) and its log dirs (``log_dirs``)
        come from."""
        self._partitions_probe = probe

    def partition_figures(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The ``partitions`` section (state and counters) and the ``log_dirs`` one."""
        if self._partitions_probe is None:
            return [], []
        states, dirs = self._partitions_probe()
        return self.partitions.figures(states), dirs

    def set_transactions(self, probe: Callable[[], dict[str, Any]] | None) -> None:
        """Where the ``transactions`` section (the transaction coordinator's figures, the
        LSO lag of led partitions) comes from."""
        self._transactions_probe = probe

    def transactions(self) -> dict[str, Any]:
        if self._transactions_probe is not None:
            return self._transactions_probe()
        return {"coordinator": None, "lso_lag": {}}

    def set_groups(self, probe: Callable[[], dict[str, Any]] | None) -> None:
        """Where the ``groups`` section (the group coordinator's figures) comes from."""
        self._groups_probe = probe

    def groups(self) -> dict[str, Any] | None:
        return self._groups_probe() if self._groups_probe is not None else None

    def set_client_telemetry(
        self,
        probe: Callable[[], dict[str, Any]],
        series: Callable[[], list[tuple[str, dict[str, str], float]]],
    ) -> None:
        """Where the ``client_telemetry`` section (KIP-714's counters) and the clients'
        Prometheus series come from."""
        self._client_telemetry_probe, self.client_series = probe, series

    def client_telemetry(self) -> dict[str, Any] | None:
        probe = self._client_telemetry_probe
        return probe() if probe is not None else None

    def set_log_cleaner(self, probe: Callable[[], dict[str, Any]] | None) -> None:
        """Where the ``log_cleaner`` section (the cleaner's figures) comes from."""
        self._log_cleaner_probe = probe

    def log_cleaner(self) -> dict[str, Any]:
        if self._log_cleaner_probe is not None:
            return self._log_cleaner_probe()
        return {
            "enabled": False,
            "threads": 0,
            "cleaning": 0,
            "passes": 0,
            "failures": 0,
            "uncleanable": 0,
            "bytes_cleaned": 0,
            "last_run_ms": None,
            "last_duration_ms": None,
            "max_dirty_ratio": 0.0,
            "partitions": {},
        }

    def set_open_files(self, probe: Callable[[], dict[str, int | None]] | None) -> None:
        """Where ``log.open_files`` (the LRU of ``log.open.files.max``) comes from."""
        self._open_files_probe = probe

    def open_files(self) -> dict[str, int | None]:
        """Segment descriptors held now against the bound (``max`` None: no bound), the
        segments open now, and segments closed by the bound and reopened since start."""
        if self._open_files_probe is not None:
            return self._open_files_probe()
        return {"held": 0, "max": None, "segments_open": 0, "evictions": 0, "reopens": 0}

    def set_authorization(self, probe: AuthorizationProbe | None) -> None:
        """Where the ``authorization`` section (ACL count, denials) comes from."""
        self._authorization_probe = probe

    def authorization(self) -> dict[str, Any]:
        if self._authorization_probe is None:
            return {"enabled": False, "acls": 0, "denied": 0, "denied_by_resource": {}}
        return self._authorization_probe()

    def memory_pool(self) -> dict[str, int | None]:
        available: int | None = None
        used: int | None = None
        if self._memory_probe is not None:
            available, used = self._memory_probe()
        return {
            "capacity_bytes": self.memory_pool_capacity,
            "available_bytes": available,
            "used_bytes": used,
        }
