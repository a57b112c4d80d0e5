"""The composition root: one broker inside one ``trio.run``.

Owns: ``Broker``, which builds the parts from a ``BrokerConfig`` (socket server, handler
pools, request handler, topic catalog), runs them in nurseries ordered so that shutdown
unwinds cleanly, implements the ``BrokerView`` that API handlers see, and writes
``listeners.json`` once every listener accepts. Before anything in a log directory is read
or written, every one is locked (``log.dir_lock``: a second broker on the same directories
stops there, having touched nothing); the locks are held until the broker has stopped.
Shutdown: stop accepting, let requests in flight finish within ``shutdown.timeout.ms``,
close the request channels (handlers drain and end), close the stores, remove
``listeners.json`` (its ports are no longer served), then release the locks.

Nursery layout::

    admin HTTP server (admin.listeners)        starts first, stops last (admin_view)
    handler pools (data, control)              end when their request channel closes
      socket server: listeners, processors,    ends after shutdown() and the drain
      connections, acceptors
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import trio

from ..apis.context import Deferred, RequestContext
from ..apis.services import (
    BrokerEndpoint,
    ClusterBroker,
    PartitionAssignment,
    PartitionInfo,
    ReadResult,
    TopicError,
    TopicInfo,
    WriteResult,
)
from ..apis.table import API_TABLE, ApiTable
from ..apis.topic_names import topic_name_error
from ..log.dir_lock import LogDirLock
from ..log.files import atomic_write
from ..network.connection_quotas import ConnectionLimits
from ..network.socket_server import ListenerSpec, SocketServer
from ..protocol.errors import ErrorCode
from ..protocol.schema import ZERO_UUID
from ..security.acl import AclBinding, AclFilter, AclOperation, ResourceType
from ..security.scram import ScramCredential
from .acl_store import AclStore, Authorization
from .admin_view import admin_server
from .cluster_state import ClusterState
from .config import BROKER_CONFIG_DEF, BrokerConfig, ConfigError
from .configdef import ConfigEntry
from .delayed import DelayedResponse
from .groups import CoordinatorConfig, GroupCoordinator, LogOffsetsTopic
from .handler_pool import HandlerPool
from .io_pool import GIL_SWITCH_INTERVAL_S, HANDLERS_PER_IO_THREAD, IoPool
from .listener_security import listener_security
from .metrics import BrokerMetrics
from .producer_ids import ProducerIdManager
from .purgatory import Purgatory
from .quota_manager import QuotaManager
from .quotas import QuotaEntity, QuotaError, QuotaStore
from .replica_manager import ReplicaManager
from .request_handler import RequestHandler
from .scram_store import ScramStore
from .throttling import Throttler
from .topic_config import TOPIC_CONFIG_DEF, effective_topic_config, validate_topic_configs
from .topics import TopicCatalog

log = logging.getLogger("trio_broker")

LISTENERS_FILE = "listeners.json"  # the bound addresses, for scripts and the admin CLI


class Broker:
    """A running broker: its config, its stores, its network and its handlers."""

    def __init__(self, config: BrokerConfig, *, api_table: ApiTable = API_TABLE) -> None:
        self.config = config
        self.broker_id: int = config["broker.id"]
        self.cluster_id = ""
        self.api_table = api_table
        self.data_dir = config.log_dirs[0]
        self.dir_lock = LogDirLock(config.log_dirs)
        self.started_at = time.time()
        self.started_ns = time.monotonic_ns()
        self.ready = False
        self.stopped = trio.Event()
        self.topics_catalog = TopicCatalog(self.data_dir, self.broker_id)
        self.producer_ids = ProducerIdManager(self.data_dir)
        self.cluster = ClusterState(self.data_dir, self.broker_id)
        self.quotas = QuotaStore(self.data_dir)
        self.acls = AclStore(
            self.data_dir,
            super_users=config.super_users,
            allow_if_no_acl=config["allow.everyone.if.no.acl.found"],
        )
        self.authorization = Authorization(self.acls, enabled=config.authorization_enabled)
        self._acl_lock = trio.Lock()
        self.scram = ScramStore(self.data_dir)
        self._admin_url: str | None = None
        self._api_versions: dict[str, list[tuple[int, int, int]]] = {}
        self._topic_lock = trio.Lock()
        control = config.control_plane_listener_name
        # Without a control-plane listener, control requests come in on the data plane
        # (and wait behind data requests there: what KIP-291 set out to avoid).
        self._plane_versions = {
            "data": api_table.versions("data" if control else "control"),
            "control": api_table.versions("control"),
        }
        security = listener_security(config, self.scram.lookup)
        specs = [
            ListenerSpec(
                name=lc.name,
                host=lc.host,
                port=lc.port,
                security_protocol=lc.security_protocol,
                plane="control" if lc.name == control else "data",
                security=security[lc.name],
            )
            for lc in config.listeners
        ]
        self.socket_server = SocketServer(
            specs,
            num_network_threads=config["num.network.threads"],
            queued_max_requests=config["queued.max.requests"],
            max_request_size=config["socket.request.max.bytes"],
            idle_timeout_ms=config["connections.max.idle.ms"],
            request_read_timeout_ms=config["request.read.timeout.ms"],
            limits=connection_limits(config),
            queued_max_request_bytes=config["queued.max.request.bytes"],
            api_versions=self._plane_versions,
        )
        self.request_handler = RequestHandler(api_table, self)
        self.data_pool = HandlerPool(
            "data",
            self.socket_server.data_requests.receiver,
            self.request_handler.handle,
            HANDLERS_PER_IO_THREAD * config["num.io.threads"],
        )
        self.control_pool: HandlerPool | None = None
        if self.socket_server.control_requests is not None:
            self.control_pool = HandlerPool(
                "control",
                self.socket_server.control_requests.receiver,
                self.request_handler.handle,
                1,
            )
        self.io_pool = IoPool(config["num.io.threads"])
        self.fetch_purgatory = Purgatory("fetch")
        self.purgatories: dict[str, Purgatory] = {
            "fetch": self.fetch_purgatory,
            "throttle": Purgatory("throttle"),
        }
        self.metrics = BrokerMetrics.for_broker(self)
        self.quota_manager = QuotaManager(
            self.quotas,
            samples=config["quota.window.num"],
            window_s=config["quota.window.size.seconds"],
            clock=trio.current_time,
        )
        throttler = Throttler(self.quota_manager, self.purgatories["throttle"])
        self.request_handler.throttler = throttler
        self.socket_server.request_observers.append(throttler.record_network_time)
        self.metrics.set_authorization(self.authorization.figures)
        pool = self.socket_server.memory_pool
        if pool.bounded:
            self.metrics.set_memory_pool(lambda: (pool.available, pool.used))
        self.replica_manager = ReplicaManager(
            config, self.io_pool, self.fetch_purgatory, self.cluster, self.metrics
        )
        # Parked JoinGroup / SyncGroup requests wait here for the group coordinator.
        self.purgatories["rebalance"] = Purgatory("rebalance")
        self.group_coordinator = GroupCoordinator(
            CoordinatorConfig.from_broker(config),
            LogOffsetsTopic(config, self.topics_catalog, self.replica_manager),
            notify=self.purgatories["rebalance"].check,
        )

    # --------------------------------------------------------------- life cycle

    async def run(self, *, task_status: trio.TaskStatus[Broker] = trio.TASK_STATUS_IGNORED) -> None:
        self.replica_manager.trio_token = trio.lowlevel.current_trio_token()
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # io threads get the GIL back soon
        # First of all: no other broker may use these directories while this one runs.
        await trio.to_thread.run_sync(self.dir_lock.acquire)
        try:
            await trio.to_thread.run_sync(self._load_stores)
            # The admin API starts before the Kafka listeners and stops after them: its
            # readiness answers 503 while they start and while they drain.
            async with admin_server(self) as admin_url:
                self._admin_url = admin_url
                await self._run_kafka(task_status)
            await trio.to_thread.run_sync(self._close_stores)
            await trio.to_thread.run_sync(self._remove_listeners_file)
        finally:
            self.io_pool.close()
            self.dir_lock.release()
        log.info("trio-broker %s stopped", self.broker_id)
        self.stopped.set()

    async def _run_kafka(self, task_status: trio.TaskStatus[Broker]) -> None:
        async with trio.open_nursery() as services:
            for purgatory in self.purgatories.values():
                await services.start(purgatory.run)
            maintenance = trio.CancelScope()
            services.start_soon(self._run_maintenance, maintenance)
            services.start_soon(self.metrics.run)  # samples pool busy times
            await services.start(self.group_coordinator.run)  # replays __consumer_offsets
            async with trio.open_nursery() as handlers:
                await handlers.start(self.data_pool.run)
                if self.control_pool is not None:
                    await handlers.start(self.control_pool.run)
                async with trio.open_nursery() as network:
                    await network.start(self.socket_server.run)
                    await trio.to_thread.run_sync(self._write_listeners_file)
                    self.ready = True
                    log.info("trio-broker %s started: %s", self.broker_id, self._listeners_line())
                    task_status.started(self)
                # The socket server has ended: request channels are closed, handlers drain.
                handlers.cancel_scope.deadline = self.socket_server.shutdown_deadline + 1.0
            self.metrics.stop()
            for purgatory in self.purgatories.values():
                purgatory.stop()
            self.group_coordinator.stop()
            maintenance.cancel()

    async def _run_maintenance(self, scope: trio.CancelScope) -> None:
        with scope:
            await self.replica_manager.run_maintenance()

    def shutdown(self) -> None:
        """Begin a graceful shutdown (idempotent): parked requests are answered now."""
        if self.ready:
            log.info("trio-broker %s shutting down", self.broker_id)
        self.ready = False
        for purgatory in self.purgatories.values():
            purgatory.shutdown()
        self.socket_server.shutdown(self.config["shutdown.timeout.ms"] / 1000)

    def _load_stores(self) -> None:
        self.cluster_id = self._load_or_create_meta()
        self.topics_catalog.load()
        self.producer_ids.load()
        self.cluster.load()
        self.replica_manager.open(self.topics_catalog.all())
        self.quotas.load()
        self.acls.load()
        self.scram.load()

    def _close_stores(self) -> None:
        self.replica_manager.close()

    def _load_or_create_meta(self) -> str:
        """Kafka's meta.properties: the cluster id, generated once and kept in every dir."""
        cluster_id = self.config["cluster.id"] or None
        for d in self.config.log_dirs:
            meta = d / "meta.properties"
            if meta.exists():
                props = dict(
                    line.split("=", 1)
                    for line in meta.read_text().splitlines()
                    if "=" in line and not line.startswith("#")
                )
                found = props.get("cluster.id")
                if cluster_id is not None and found and found != cluster_id:
                    raise RuntimeError(
                        f"{meta} belongs to cluster {found}, not to cluster.id={cluster_id}"
                    )
                cluster_id = cluster_id or found
        if cluster_id is None:
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for d in self.config.log_dirs:
            meta = d / "meta.properties"
            if not meta.exists():
                atomic_write(
                    meta, f"version=1\ncluster.id={cluster_id}\nnode.id={self.broker_id}\n".encode()
                )
        return cluster_id

    # -------------------------------------------------------------- listeners

    def bound_listeners(self) -> dict[str, tuple[str, int]]:
        return self.socket_server.bound_addresses()

    @property
    def admin_url(self) -> str | None:
        return self._admin_url

    def _listeners_line(self) -> str:
        parts = [f"{name}={host}:{port}" for name, (host, port) in self.bound_listeners().items()]
        if self.admin_url:
            parts.append(f"admin={self.admin_url}")
        return " ".join(parts)

    def _write_listeners_file(self) -> None:
        data: dict[str, Any] = {
            "broker_id": self.broker_id,
            "listeners": {
                name: _host_port(host, port)
                for name, (host, port) in self.bound_listeners().items()
            },
        }
        if self.admin_url:
            data["admin"] = self.admin_url
        atomic_write(self.data_dir / LISTENERS_FILE, json.dumps(data, indent=1).encode())

    def _remove_listeners_file(self) -> None:
        """After a clean shutdown: the ports written there are no longer served."""
        (self.data_dir / LISTENERS_FILE).unlink(missing_ok=True)

    # ------------------------------------------------------- run-time config

    _CONNECTION_KEYS = frozenset(
        {
            "max.connections",
            "max.connections.per.ip",
            "max.connections.per.ip.overrides",
            "max.connection.creation.rate",
        }
    )

    def apply_config(self, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
        """Make ``new`` (dynamic changes already validated) the running config: pools
        resize, connection limits apply at once, topics take new log.* defaults."""
        self.config = new
        self.replica_manager.config = new
        if "num.io.threads" in changed:
            io = new["num.io.threads"]
            self.data_pool.resize(HANDLERS_PER_IO_THREAD * io)
            self.io_pool.resize(io)
        if "num.network.threads" in changed:
            for name, lr in self.socket_server.listeners.items():
                if lr.plane == "data":
                    self.socket_server.resize(name, new["num.network.threads"])
        if any(k in self._CONNECTION_KEYS or k.startswith("listener.name.") for k in changed):
            self.socket_server.update_limits(connection_limits(new))
        if any(k.startswith(("log.", "message.max.bytes")) for k in changed):
            for topic in self.topics_catalog.all():
                self.replica_manager.reconfigure(topic)

    # ------------------------------------------------------------------ metrics

    def metrics_snapshot(self) -> dict[str, Any]:
        """The JSON metrics snapshot, schema ``trio-broker.metrics/1`` (docs/metrics.md)."""
        return self.metrics.snapshot()

    def prometheus_text(self) -> bytes:
        """The same figures in Prometheus' text format."""
        return self.metrics.prometheus_text()

    # ----------------------------------------------------------- BrokerView

    @property
    def controller_id(self) -> int:
        cache = self.cluster.cache
        return cache.controller_id if cache.from_controller else self.broker_id

    def config_value(self, key: str) -> Any:
        return self.config[key]

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]:
        cache = self.cluster.cache
        if cache.from_controller:
            known = cache.endpoints(listener)
            if any(e.node_id == self.broker_id for e in known):
                return known
        # advertised.listeners (or, when unset, listeners) with port 0 or no host filled
        # in from the address actually bound.
        adv = self.config.advertised_listener(listener)
        bound_host, bound_port = self.socket_server.listener(listener).bound[0]
        if bound_host in ("0.0.0.0", "::"):
            bound_host = socket.gethostname()
        host = adv.host if adv is not None and adv.host else bound_host
        port = adv.port if adv is not None and adv.port else bound_port
        return [BrokerEndpoint(self.broker_id, host, port)]

    def api_versions(self, plane: str) -> Sequence[tuple[int, int, int]]:
        cached = self._api_versions.get(plane)
        if cached is None:
            cached = [(k, v.lo, v.hi) for k, v in self._plane_versions[plane].items()]
            self._api_versions[plane] = cached
        return cached

    def topic(self, name: str) -> TopicInfo | None:
        info = self.topics_catalog.get(name)
        if info is not None:
            return self._cluster_view(info)
        return self._cached_topic(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        info = self.topics_catalog.get_by_id(topic_id)
        if info is not None:
            return self._cluster_view(info)
        cache = self.cluster.cache
        name = next((t for t, i in cache.topic_ids.items() if i == topic_id), None)
        return None if name is None else self._cached_topic(name)

    def topics(self) -> Sequence[TopicInfo]:
        local = [self._cluster_view(t) for t in self.topics_catalog.all()]
        names = {t.name for t in local}
        remote = [
            info
            for name in sorted(self.cluster.cache.partitions)
            if name not in names and (info := self._cached_topic(name)) is not None
        ]
        return local + remote

    def _cluster_view(self, info: TopicInfo) -> TopicInfo:
        """A local topic with leaders as the control plane set them."""
        if not self.cluster.leadership and not self.cluster.cache.from_controller:
            return info
        parts = tuple(self.cluster.partition_info(info.name, p.index) for p in info.partitions)
        return replace(info, partitions=parts)

    def _cached_topic(self, name: str) -> TopicInfo | None:
        """A topic this broker holds no partition of, as the controller described it."""
        cache = self.cluster.cache
        parts = cache.partitions_of(name)
        if not parts:
            return None
        topic_id = cache.topic_ids.get(name, ZERO_UUID)
        return TopicInfo(name, topic_id, tuple(parts[i] for i in sorted(parts)))

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str | None],
        *,
        validate_only: bool = False,
    ) -> TopicInfo:
        problem = topic_name_error(name)
        if problem is not None:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if num_partitions < 1:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, "a topic needs at least 1 partition")
        try:
            validate_topic_configs(configs)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        clean = {k: v for k, v in configs.items() if v is not None}
        async with self._topic_lock:
            if self.topics_catalog.get(name) is not None:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            if validate_only:
                return TopicInfo(name, ZERO_UUID, ())
            info = await trio.to_thread.run_sync(
                self._create_topic_blocking, name, num_partitions, clean
            )
        log.info("created topic %s with %d partitions", name, num_partitions)
        return info

    def _create_topic_blocking(
        self, name: str, num_partitions: int, configs: Mapping[str, str]
    ) -> TopicInfo:
        info = self.topics_catalog.create(name, num_partitions, configs)
        self.replica_manager.create_logs(info)
        return info

    async def delete_topic(self, name: str) -> None:
        if not self.config["delete.topic.enable"]:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        async with self._topic_lock:
            info = self.topics_catalog.get(name)
            if info is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            if info.internal:
                raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is an internal topic")
            await trio.to_thread.run_sync(self._delete_topic_blocking, info)
        for p in info.partitions:
            self.fetch_purgatory.complete_all((name, p.index))
        self.metrics.forget_topic(name)
        self.cluster.forget_topic(name)
        self.group_coordinator.forget_topic(name)  # its committed offsets
        log.info("deleted topic %s", name)

    def _delete_topic_blocking(self, info: TopicInfo) -> None:
        self.topics_catalog.delete(info.name)
        self.replica_manager.delete_logs(info)

    async def create_partitions(self, name: str, count: int, *, validate_only: bool) -> None:
        async with self._topic_lock:
            info = self.topics_catalog.get(name)
            if info is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            if info.internal:  # the group coordinator's partitioning depends on its size
                raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is an internal topic")
            if count <= len(info.partitions):
                raise TopicError(
                    ErrorCode.INVALID_PARTITIONS,
                    f"topic {name!r} has {len(info.partitions)} partitions; "
                    f"the new count {count} must be larger",
                )
            if validate_only:
                return
            await trio.to_thread.run_sync(self._grow_topic_blocking, info, count)
        log.info("topic %s now has %d partitions", name, count)

    def _grow_topic_blocking(self, info: TopicInfo, count: int) -> None:
        grown = self.topics_catalog.with_partitions(info, count)
        self.topics_catalog.replace(grown)
        self.replica_manager.create_logs(grown)

    def topic_config_entries(
        self, name: str, overrides: Mapping[str, str | None] | None = None
    ) -> dict[str, ConfigEntry]:
        if overrides is None:
            info = self.topics_catalog.get(name)
            overrides = dict(info.configs) if info is not None else {}
        return effective_topic_config(self.config, overrides)

    def broker_config_entries(self) -> dict[str, ConfigEntry]:
        return self.config.describe()

    def config_type_name(self, name: str, resource_type: int) -> str:
        key = (TOPIC_CONFIG_DEF if resource_type == 2 else BROKER_CONFIG_DEF).get(name)
        return key.type.value if key is not None else ""

    def config_doc(self, name: str, resource_type: int) -> str | None:
        key = (TOPIC_CONFIG_DEF if resource_type == 2 else BROKER_CONFIG_DEF).get(name)
        return key.doc if key is not None else None

    # data path: see ReplicaManager

    async def produce_many(
        self, items: Sequence[tuple[str, int, memoryview | None]], acks: int
    ) -> list[WriteResult]:
        return await self.replica_manager.produce_many(items, acks)

    async def read_many(
        self, items: Sequence[tuple[str, int, int, int]], max_bytes: int, *, committed_only: bool
    ) -> list[ReadResult]:
        return await self.replica_manager.read_many(items, max_bytes, committed_only=committed_only)

    def log_size(self, topic: str, partition: int) -> int:
        return self.replica_manager.log_size(topic, partition)

    async def list_offsets_many(
        self, items: Sequence[tuple[str, int, int]], *, committed_only: bool
    ) -> list[tuple[int, int, int, int]]:
        return await self.replica_manager.list_offsets_many(items, committed_only=committed_only)

    # client quotas: see QuotaStore (the admin API shares it)

    def client_quotas(self) -> list[tuple[dict[str, str | None], dict[str, float]]]:
        return [(e.as_dict(), dict(v)) for e, v in self.quotas.entries()]

    async def alter_client_quota(
        self,
        entity: dict[str, str | None],
        changes: dict[str, float | None],
        *,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        try:
            quota_entity = QuotaEntity.of(entity)
            if validate_only:
                self.quotas.validate(quota_entity, changes)
            else:
                await trio.to_thread.run_sync(self.quotas.alter, quota_entity, changes)
        except QuotaError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc)
        return ErrorCode.NONE, None

    # authorization: see AclStore (the admin API shares it)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        *,
        log_denied: bool = True,
    ) -> bool:
        return self.authorization.authorize(
            principal, host, operation, resource_type, name, log_denied=log_denied
        )

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        return self.authorization.authorize_any(principal, host, operation, resource_type)

    def find_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        return self.acls.find(acl_filter)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        async with self._acl_lock:
            await trio.to_thread.run_sync(self.acls.add, list(bindings))
        log.info("ACLs added: %s", ", ".join(_acl_text(b) for b in bindings))

    async def delete_acls(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        async with self._acl_lock:
            matched = await trio.to_thread.run_sync(self.acls.remove, list(filters))
        gone = {b for group in matched for b in group}
        if gone:
            log.info("ACLs removed: %s", ", ".join(_acl_text(b) for b in gone))
        return matched

    # SCRAM credentials: see ScramStore (SASL and the admin API share it)

    def scram_credentials(self) -> Mapping[str, Mapping[str, ScramCredential]]:
        return self.scram.users()

    async def alter_scram_credentials(
        self,
        upserts: Sequence[tuple[str, ScramCredential]],
        deletions: Sequence[tuple[str, str]],
    ) -> None:
        await trio.to_thread.run_sync(self.scram.apply, upserts, deletions)
        for user, _ in upserts:
            log.info("SCRAM credentials of user %r changed", user)
        for user, mechanism in deletions:
            log.info("SCRAM credential %s of user %r deleted", mechanism, user)

    # control plane: see ClusterState

    async def leader_and_isr(
        self, controller_epoch: int, assignments: Sequence[PartitionAssignment]
    ) -> list[int]:
        """Apply LeaderAndIsr partition states; an error code for each."""
        if not self.cluster.check_controller(controller_epoch):
            return [int(ErrorCode.STALE_CONTROLLER_EPOCH)] * len(assignments)
        errors: list[int] = []
        for a in assignments:
            error = self.cluster.assign(a)
            if error == ErrorCode.NONE:
                await self._ensure_partition(a.topic, a.topic_id, a.partition)
                if a.leader != self.broker_id:
                    self.fetch_purgatory.complete_all((a.topic, a.partition))
            errors.append(error)
        await trio.to_thread.run_sync(self.cluster.save)
        return errors

    async def _ensure_partition(self, topic: str, topic_id: uuid.UUID | None, index: int) -> None:
        """Make sure this broker has ``topic`` with partition ``index`` and its log."""
        async with self._topic_lock:
            info = self.topics_catalog.get(topic)

            def make() -> None:
                if info is None:
                    new = self.topics_catalog.create(
                        topic, index + 1, {}, topic_id=topic_id if topic_id != ZERO_UUID else None
                    )
                elif index >= len(info.partitions):
                    new = self.topics_catalog.with_partitions(info, index + 1)
                    self.topics_catalog.replace(new)
                else:
                    new = info
                self.replica_manager.create_logs(new)

            await trio.to_thread.run_sync(make)

    async def stop_replicas(
        self, controller_epoch: int, partitions: Sequence[tuple[str, int, bool]]
    ) -> list[int]:
        """Apply StopReplica: stop serving, and delete the log when asked."""
        if not self.cluster.check_controller(controller_epoch):
            return [int(ErrorCode.STALE_CONTROLLER_EPOCH)] * len(partitions)
        errors: list[int] = []
        for topic, index, delete in partitions:
            self.cluster.stop(topic, index)
            self.fetch_purgatory.complete_all((topic, index))
            if delete and self.replica_manager.partition(topic, index) is not None:
                await trio.to_thread.run_sync(
                    self.replica_manager.delete_partition_log, topic, index
                )
            errors.append(ErrorCode.NONE)
        await trio.to_thread.run_sync(self.cluster.save)
        return errors

    async def update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: list[ClusterBroker],
        partitions: dict[str, dict[int, PartitionInfo]],
        topic_ids: dict[str, uuid.UUID],
    ) -> int:
        if not self.cluster.check_controller(controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.cluster.update_metadata(
            controller_id, controller_epoch, brokers, partitions, topic_ids
        )
        await trio.to_thread.run_sync(self.cluster.save)
        return ErrorCode.NONE

    async def new_producer_id(self) -> int:
        if self.producer_ids.needs_new_block:
            return await trio.to_thread.run_sync(self.producer_ids.next_id)
        return self.producer_ids.next_id()

    async def delete_records_many(
        self, items: Sequence[tuple[str, int, int]]
    ) -> list[tuple[int, int]]:
        return await self.replica_manager.delete_records_many(items)

    def defer(
        self,
        ctx: RequestContext,
        *,
        keys: Sequence[Hashable],
        timeout_ms: int,
        ready: Callable[[], bool],
        complete: Callable[[bool], Awaitable[Any]],
        purgatory: str = "fetch",
    ) -> Deferred:
        """Park the request of ``ctx`` until ``ready()`` or ``timeout_ms`` passes."""
        request = ctx.extras["request"]
        deadline = trio.current_time() + timeout_ms / 1000
        op = DelayedResponse(deadline, request, self.request_handler, ready, complete)
        self.purgatories[purgatory].park(op, keys)
        return Deferred(op)


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    """The network layer's connection limits from the broker's config."""

    def per_listener(key: str) -> dict[str, int]:
        out = {}
        for lc in config.listeners:
            value = config.listener_setting(lc.name, key)
            if value is not None:
                out[lc.name] = int(value)
        return out

    return ConnectionLimits(
        max_connections=config["max.connections"],
        per_listener=per_listener("max.connections"),
        max_per_ip=config["max.connections.per.ip"],
        per_ip_overrides=config.max_connections_per_ip_overrides,
        max_creation_rate=config["max.connection.creation.rate"],
        per_listener_rate=per_listener("max.connection.creation.rate"),
    )


def _acl_text(b: AclBinding) -> str:
    return (
        f"{b.permission.name} {b.principal}@{b.host} {b.operation.name} "
        f"{b.resource_type.name}:{b.pattern_type.name}:{b.resource_name}"
    )


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
