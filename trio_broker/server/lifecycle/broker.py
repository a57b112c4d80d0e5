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

    admin HTTP server (admin.listeners)        starts first, stops last (admin_adapter)
    handler pools (data, control)              end when their request channel closes
      socket server: listeners, processors,    ends after shutdown() and the drain
      connections, acceptors
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import trio

from ...apis.context import Deferred
from ...apis.fetch_sessions import FetchSessionCache
from ...apis.services import BrokerEndpoint, Deferrable, TopicInfo
from ...apis.table import API_TABLE, SINGLE_BROKER_TABLE, ZOOKEEPER_ONLY, ApiTable
from ...apis.topic_names import OFFSETS_TOPIC, TXN_STATE_TOPIC
from ...log.dir_lock import LogDirLock
from ...network.socket_server import ListenerSpec, SocketServer
from ..access import (
    AccessControl,
    AclStore,
    Authorization,
    ScramStore,
    peer_listeners,
    security_by_listener,
)
from ..common import GIL_SWITCH_INTERVAL_S, HANDLERS_PER_IO_THREAD, IoPool, Purgatory
from ..config import (
    BrokerConfig,
    ConfigAdmin,
    ConfigEntry,
    DynamicConfigStore,
    UpdateConfig,
    config_doc,
    config_type_name,
    effective_topic_config,
)
from ..coordination import ControllerRequests, Registration, ZkMembership, claim_block, join_cluster
from ..datadir import (
    local_cluster_id,
    new_cluster_id,
    remove_listeners_file,
    write_listeners_file,
    write_meta_properties,
)
from ..groups import (
    OFFSETS,
    CoordinatorConfig,
    CoordinatorLocator,
    GroupCoordinator,
    LogOffsetsTopic,
)
from ..handlers import DelayedResponse, FaultInjector, HandlerPool, RequestHandler
from ..metrics import BrokerMetrics, MetricsReport
from ..quotas import QuotaManager, QuotaStore, Throttler, connection_limits_from
from ..replication import (
    ClusterState,
    ControlPlane,
    OffsetQueries,
    ReplicaFetchers,
    ReplicaManager,
    TxnMarkerWriter,
)
from ..telemetry import ClientTelemetry
from ..topics import TopicAdmin, TopicCatalog, TopicCreation, side_by_side
from ..transactions import BLOCK_SIZE, ProducerIdManager, TransactionService
from . import config_apply
from .cluster_report import cluster_figures, partition_figures

# Runs the admin API around the body; yields its URL (None: no admin API configured).
AdminServer = Callable[["Broker"], AbstractAsyncContextManager[str | None]]

log = logging.getLogger("trio_broker")


class Broker:
    """A running broker: its config, its stores, its network and its handlers."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        api_table: ApiTable = API_TABLE,
        admin: AdminServer | None = None,
    ) -> None:
        """``admin`` runs the admin API around the Kafka listeners (the composition root,
        ``server.node``, passes the admin adapter's; without it there is none)."""
        self.config = config
        self._admin = admin
        self.broker_id: int = config["broker.id"]
        self.cluster_id = ""
        # Followers fetch on the inter-broker listener; ZooKeeper's controller reaches the
        # brokers on the control plane, else there too (with its TLS and SASL: access.inter_broker).
        fetch_on, control_on = peer_listeners(config)
        self.zk = (
            ZkMembership(config, self._registration, control_on)
            if config["zookeeper.connect"]
            else None
        )
        if self.zk is None:  # no controller to ask: a cluster of one (ControllerRequests)
            plain = api_table is API_TABLE
            api_table = SINGLE_BROKER_TABLE if plain else api_table.without(*ZOOKEEPER_ONLY)
        self.api_table = api_table
        self.data_dir = config.log_dirs[0]
        self.dir_lock = LogDirLock(config.log_dirs)
        self.started_at = time.time()
        self.started_ns = time.monotonic_ns()
        self.ready = False
        self.stopped = trio.Event()
        self._stopping = trio.Event()  # shutdown() called
        self.topics_catalog = TopicCatalog(self.data_dir, self.broker_id)
        self.producer_ids = ProducerIdManager(self.data_dir)
        self.dynamic_store = DynamicConfigStore(self.data_dir)
        self._stored_changes: dict[str, str] = {}
        self.cluster = ClusterState(self.data_dir, self.broker_id)
        self.quotas = QuotaStore(self.data_dir)
        self.acls = AclStore(
            self.data_dir,
            super_users=config.super_users,
            allow_if_no_acl=config["allow.everyone.if.no.acl.found"],
        )
        self.authorization = Authorization(self.acls, enabled=config.authorization_enabled)
        self.scram = ScramStore(self.data_dir)
        self.telemetry = ClientTelemetry(self.data_dir, lambda: self.config)  # KIP-714
        self._admin_url: str | None = None
        self._api_versions: dict[str, list[tuple[int, int, int]]] = {}
        control = config.control_plane_listener_name
        # No control-plane listener: control requests wait behind data ones (KIP-291's case).
        self._plane_versions = {
            "data": api_table.versions("data" if control else "control"),
            "control": api_table.versions("control"),
        }
        security = security_by_listener(config, self.scram.lookup)
        specs = [
            ListenerSpec(
                name=lc.name,
                host=lc.host,
                port=lc.port,
                security_protocol=lc.security_protocol,
                plane="control" if lc.name == control else "data",
                security=security[lc.name],
                processors=config.listener_setting(lc.name, "num.network.threads"),
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
            receive_buffer_bytes=config["socket.receive.buffer.bytes"],
            send_buffer_bytes=config["socket.send.buffer.bytes"],
            limits=connection_limits_from(config),
            queued_max_request_bytes=config["queued.max.request.bytes"],
            api_versions=self._plane_versions,
            close_observers=[self.telemetry.instances.connection_closed],  # as Kafka's
        )
        self.request_handler = RequestHandler(api_table, self)
        self.faults: FaultInjector | None = None  # testing.faults.enable (server.node)
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
        pools: dict[str, tuple[str, HandlerPool]] = {"io": ("data", self.data_pool)}
        if self.control_pool is not None:
            pools["control"] = ("control", self.control_pool)
        self.fetch_sessions = FetchSessionCache(
            lambda: self.config["max.incremental.fetch.session.cache.slots"],
            lambda: time.monotonic_ns() // 1_000_000,
        )
        self.metrics = BrokerMetrics(
            broker_id=self.broker_id,
            window_s=config["metrics.window.seconds"],
            enabled=config["metrics.enabled"],
            socket_server=self.socket_server,
            handler_pools=pools,
            request_handler=self.request_handler,
            io_pool=self.io_pool,
            purgatories=lambda: self.purgatories,
            fetch_sessions=self.fetch_sessions,
            started_ns=self.started_ns,
            memory_pool_capacity=config["queued.max.request.bytes"],
            partition_series=lambda: self.config["metrics.partition.prometheus.enable"],
        )
        self.metrics_report = MetricsReport(self.metrics)
        # The JSON snapshot (``trio-broker.metrics/1``, docs/metrics.md) and Prometheus' text.
        self.metrics_snapshot: Callable[[], dict[str, Any]] = self.metrics_report.snapshot
        self.prometheus_text: Callable[[], bytes] = self.metrics_report.prometheus_text
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
        # Parked acks=all produces wait here for the followers (Kafka's DelayedProduce).
        self.purgatories["produce"] = Purgatory("produce")
        self.replica_manager = ReplicaManager(
            config,
            self.io_pool,
            self.fetch_purgatory,
            self.cluster,
            self.metrics,
            produce_purgatory=self.purgatories["produce"],
        )
        self.metrics.set_log_cleaner(self.replica_manager.cleaner.figures)
        self.metrics.set_cluster(lambda: cluster_figures(self))
        self.metrics.set_partitions(lambda: partition_figures(self))
        # Parked JoinGroup / SyncGroup requests wait here for the group coordinator,
        # Metadata and DescribeCluster for the controller to describe the cluster.
        self.purgatories["rebalance"] = Purgatory("rebalance")
        self.purgatories["metadata"] = Purgatory("metadata")
        self.group_coordinator = GroupCoordinator(
            CoordinatorConfig.from_broker(config),
            LogOffsetsTopic(
                config, self.topics_catalog, self.replica_manager, replicated=bool(self.zk)
            ),
            notify=self.purgatories["rebalance"].check,
        )
        self.topic_admin = TopicAdmin(
            self.topics_catalog, self.cluster, self.replica_manager, lambda: self.config
        )
        self.topic_admin.on_deleted.append(self._forget_topic)
        self.access = AccessControl(self.quotas, self.acls, self.authorization, self.scram)
        # (a ZooKeeper cluster's go to ZooKeeper first: ``join_cluster`` below)
        self.alter_scram_credentials = self.access.alter_scram_credentials
        self.alter_client_quota = self.access.alter_client_quota
        self.control = ControlPlane(
            self.broker_id,
            self.cluster,
            self.topic_admin,
            self.replica_manager,
            self.fetch_purgatory,
            self.purgatories["metadata"],
        )
        self.fetchers = ReplicaFetchers(
            self.broker_id,
            self.cluster,
            self.replica_manager.partition,
            self.io_pool,
            lambda: self.config,
            fetch_on,
            lambda: self.control.changed,
        )
        self.control.fetchers = self.fetchers
        self.fetchers.throttle = self.replica_manager.throttles.follower
        self.fetchers.fetched_observers.append(self.metrics.record_replica_fetch)
        # A ZooKeeper cluster's changes go to ZooKeeper first (ZkBrokerConfigs).
        self.update_config: UpdateConfig = self.keep_config
        self.config_admin = ConfigAdmin(
            self.broker_id, lambda: self.config, self.update_config, self.topic_admin, trio.Lock()
        )
        # The BrokerView the APIs work through: these services' own methods.
        topics, access, plane = self.topic_admin, self.access, self.control
        self.replace_configs = self.config_admin.replace_configs
        self.alter_configs_incrementally = self.config_admin.alter_configs_incrementally
        self.config_synonyms = self.config_admin.synonyms
        self.topic = topics.topic
        self.topic_by_id = topics.topic_by_id
        self.topics = topics.topics
        # One creation path; its store is this broker's own, or ZooKeeper's in a cluster.
        self.topic_creation = creation = TopicCreation(
            topics, lambda: self.config, topics.file_budget
        )
        self.create_topic = creation.create_topic
        self.create_partitions = creation.create_partitions
        self.delete_topic = creation.delete_topic
        if self.zk is not None:  # topics are the controller's to place, through ZooKeeper
            join_cluster(self)
        zk_create = self.create_topic if self.zk is not None else None
        groups = CoordinatorLocator(self, zk_create, OFFSETS, self.group_coordinator)
        self.locate_group_coordinator = groups.locate
        self.write_txn_markers = TxnMarkerWriter(self.replica_manager).write
        self.transactions = txns = TransactionService(self, self.write_txn_markers, zk_create)
        self.control.roles[OFFSETS_TOPIC] = self.group_coordinator.role_changed
        self.control.roles[TXN_STATE_TOPIC] = txns.coordinator.role_changed
        self.metrics.set_transactions(txns.figures)
        self.metrics.set_groups(self.group_coordinator.figures)
        self.metrics.set_client_telemetry(self.telemetry.instances.figures, self.telemetry.series)
        self.client_quotas = access.client_quotas
        authorization = access.authorization
        self.authorize, self.authorize_any = authorization.authorize, authorization.authorize_any
        self.find_acls = access.find_acls
        self.create_acls = access.create_acls
        self.delete_acls = access.delete_acls
        self.scram_credentials = access.scram_credentials
        data, offsets = self.replica_manager, OffsetQueries(self.replica_manager)
        self.produce_many = data.produce_many
        self.read_many = data.read_many
        self.replication_sent, self.consumer_fetched = data.replication_sent, data.consumer_fetched
        self.log_size, self.consumer_horizon = data.log_size, data.consumer_horizon
        self.replication_status = data.replication.status
        self.describe_producers = data.describe_producers
        self.log_dirs = data.log_dirs
        self.list_offsets_many = offsets.list_offsets_many
        self.delete_records_many = offsets.delete_records_many
        self.epoch_end_offsets = offsets.epoch_end_offsets
        self.leader_and_isr = plane.leader_and_isr
        self.stop_replicas = plane.stop_replicas
        self.update_metadata = plane.update_metadata
        requests = (
            self.zk.requests
            if self.zk
            else ControllerRequests(None, topics.topics, broker_id=self.broker_id)
        )
        self.controlled_shutdown = requests.controlled_shutdown
        self.elect_leaders = requests.elect_leaders
        self.alter_reassignments = requests.alter_reassignments
        self.list_reassignments = requests.list_reassignments
        self.config_type_name, self.config_doc = config_type_name, config_doc
        self.side_by_side = side_by_side

    def _forget_topic(self, info: TopicInfo) -> None:
        """What a deleted topic leaves outside its logs: parked fetches are answered, its
        figures, cluster state and committed offsets go."""
        for p in info.partitions:
            self.fetch_purgatory.complete_all((info.name, p.index))
        self.metrics.forget_topic(info.name)
        self.cluster.forget_topic(info.name)
        self.group_coordinator.forget_topic(info.name)

    # --------------------------------------------------------------- life cycle

    async def run(self, *, task_status: trio.TaskStatus[Broker] = trio.TASK_STATUS_IGNORED) -> None:
        self.replica_manager.trio_token = trio.lowlevel.current_trio_token()
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # io threads get the GIL back soon
        # First of all: no other broker may use these directories while this one runs.
        await trio.to_thread.run_sync(self.dir_lock.acquire)
        try:
            await self._adopt_stored_dynamic_config()
            if self.zk is not None:  # the cluster's id is ZooKeeper's
                dirs, configured = self.config.log_dirs, self.config["cluster.id"]
                local = await trio.to_thread.run_sync(local_cluster_id, dirs, configured)
                self.cluster_id = await self.zk.join(local)
            await trio.to_thread.run_sync(self._load_stores)
            # The admin API starts before the Kafka listeners and stops after them: its
            # readiness answers 503 while they start and while they drain.
            around = self._admin(self) if self._admin else contextlib.nullcontext(None)
            async with around as admin_url:
                self._admin_url = admin_url
                await self._run_kafka(task_status)
            await trio.to_thread.run_sync(self.replica_manager.close)
            # After a clean shutdown: the ports written there are no longer served.
            await trio.to_thread.run_sync(remove_listeners_file, self.data_dir)
        finally:
            if self.zk is not None:  # the registration goes now, not at session expiry
                with trio.CancelScope(shield=True):
                    await self.zk.close()
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
            replication = trio.CancelScope()
            await services.start(self.control.run_replication, replication)
            services.start_soon(self.metrics.run)  # samples pool busy times
            await services.start(self.group_coordinator.run)  # replays __consumer_offsets
            await services.start(self.transactions.run)  # replays __transaction_state
            async with trio.open_nursery() as handlers:
                await handlers.start(self.data_pool.run)
                if self.control_pool is not None:
                    await handlers.start(self.control_pool.run)
                async with trio.open_nursery() as network:
                    await network.start(self.socket_server.run)
                    if self.zk is not None:  # registered with the endpoints just bound
                        await services.start(self.zk.run)
                    if self._stored_changes:  # pool sizes stored by an earlier run
                        self.apply_config(self.config, self._stored_changes)
                    bound = self.data_dir, self.broker_id, self.bound_listeners(), self.admin_url
                    await trio.to_thread.run_sync(write_listeners_file, *bound)
                    self.ready = True
                    for line in getattr(self.replica_manager.logs, "load_report", ()):
                        log.info("%s", line)
                    log.info("trio-broker %s started: %s", self.broker_id, self._listeners_line())
                    task_status.started(self)
                    network.start_soon(self._stop_when_asked)
                # The socket server has ended: request channels are closed, handlers drain.
                handlers.cancel_scope.deadline = self.socket_server.shutdown_deadline + 1.0
            self.metrics.stop()
            for purgatory in self.purgatories.values():
                purgatory.stop()
            self.group_coordinator.stop()
            self.transactions.stop()
            maintenance.cancel()
            replication.cancel()
            if self.zk is not None:
                self.zk.stop()

    async def _run_maintenance(self, scope: trio.CancelScope) -> None:
        with scope:
            await self.replica_manager.run_maintenance()

    def shutdown(self) -> None:
        """Begin a graceful shutdown (idempotent): in a ZooKeeper cluster the controller
        first moves this broker's leaderships away (controlled shutdown, listeners still
        serving); then parked requests are answered and the listeners stop."""
        if self.ready:
            log.info("trio-broker %s shutting down", self.broker_id)
        self.ready = False
        self._stopping.set()

    async def _stop_when_asked(self) -> None:
        await self._stopping.wait()
        if self.zk is not None:
            await self.zk.controlled_shutdown()
        for purgatory in self.purgatories.values():
            purgatory.shutdown()
        self.socket_server.shutdown(self.config["shutdown.timeout.ms"] / 1000)

    def _load_stores(self) -> None:
        dirs = self.config.log_dirs
        if not self.cluster_id:  # else agreed with ZooKeeper already
            local = local_cluster_id(dirs, self.config["cluster.id"])
            self.cluster_id = local or new_cluster_id()
        write_meta_properties(dirs, self.cluster_id, self.broker_id)
        self.topics_catalog.load()
        self.producer_ids.load()
        self.cluster.load()
        self.replica_manager.open(self.topics_catalog.all())
        self.quotas.load()
        self.acls.load()
        self.scram.load()
        self.telemetry.store.load()

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

    # ------------------------------------------------------- run-time config

    async def keep_config(self, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
        """Make ``new`` (``with_updates`` of the running config, so already validated) the
        running config: first stored in the data dir (so it survives a restart), then
        applied (see ``apply_config``). ``update_config`` is this on one broker."""
        await trio.to_thread.run_sync(self.dynamic_store.save, new.dynamic_raw, new.default_raw)
        self.apply_config(new, changed)

    async def _adopt_stored_dynamic_config(self) -> None:
        """The dynamic changes stored by an earlier run apply over the static config; the
        parts that need running pools (their sizes) apply once those run."""
        found = await config_apply.stored_config(self)
        if found is not None:
            self.config, self._stored_changes = found
            self.replica_manager.config = self.config

    def apply_config(self, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
        """Make ``new`` (dynamic changes already validated) the running config: pools
        resize, connection limits apply at once, topics take new log.* defaults."""
        config_apply.apply_config(self, new, changed)

    # ----------------------------------------------------------- BrokerView

    # A ZooKeeper cluster's brokers and controller are the controller's word alone, as in
    # Kafka's metadata cache: none before its first UpdateMetadata (see apis.metadata).
    @property
    def controller_id(self) -> int:
        cache = self.cluster.cache
        return cache.controller_id if cache.from_controller or self.zk else self.broker_id

    @property
    def cluster_described(self) -> bool:
        return self.zk is None or self.cluster.cache.from_controller

    def config_value(self, key: str) -> Any:
        return self.config[key]

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]:
        known = self.cluster.cache.endpoints(listener)  # none before an UpdateMetadata
        if self.zk is not None or any(e.node_id == self.broker_id for e in known):
            return known
        return [self._own_endpoint(listener)]

    def _own_endpoint(self, listener: str) -> BrokerEndpoint:
        # advertised.listeners (or, when unset, listeners) with port 0 or no host filled
        # in from the address actually bound.
        adv = self.config.advertised_listener(listener)
        bound_host, bound_port = self.socket_server.listener(listener).bound[0]
        if bound_host in ("0.0.0.0", "::"):
            bound_host = socket.gethostname()
        host = adv.host if adv is not None and adv.host else bound_host
        port = adv.port if adv is not None and adv.port else bound_port
        return BrokerEndpoint(self.broker_id, host, port)

    def _registration(self) -> Registration:
        """What ZooKeeper's ``/brokers/ids/<id>`` says of this broker: every listener."""
        own = {lc.name: self._own_endpoint(lc.name) for lc in self.config.listeners}
        return Registration(
            self.broker_id,
            {name: (e.host, e.port) for name, e in own.items()},
            {lc.name: lc.security_protocol.value for lc in self.config.listeners},
            self.config["broker.rack"] or None,
            self.admin_url,
        )

    def api_versions(self, plane: str) -> Sequence[tuple[int, int, int]]:
        cached = self._api_versions.get(plane)
        if cached is None:
            cached = [(k, v.lo, v.hi) for k, v in self._plane_versions[plane].items()]
            self._api_versions[plane] = cached
        return cached

    def topic_config_entries(
        self, name: str, overrides: Mapping[str, str | None] | None = None
    ) -> dict[str, ConfigEntry]:
        if overrides is None:
            overrides = dict(self.config_admin.topics.overrides(name) or {})
        return effective_topic_config(self.config, overrides)

    def broker_config_entries(self, cluster_default: bool = False) -> dict[str, ConfigEntry]:
        return self.config.describe(cluster_default=cluster_default)

    # client quotas: see QuotaStore (the admin API shares it)

    async def new_producer_id(self) -> int:
        if self.producer_ids.needs_new_block and self.zk is not None:
            start = await claim_block(self.zk.session, self.broker_id, BLOCK_SIZE)
            self.producer_ids.adopt_block(start, start + BLOCK_SIZE)
        if self.producer_ids.needs_new_block:
            return await trio.to_thread.run_sync(self.producer_ids.next_id)
        return self.producer_ids.next_id()

    def defer(
        self,
        ctx: Deferrable,
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
