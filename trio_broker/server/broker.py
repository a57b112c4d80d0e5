"""The composition root: one broker inside one ``trio.run``.

Owns: ``Broker``, which builds the parts from a ``BrokerConfig`` (socket server, handler
pools, request handler, topic catalog), runs them in nurseries ordered so that shutdown
unwinds cleanly, implements the ``BrokerView`` that API handlers see, and writes
``listeners.json`` once every listener accepts. Shutdown: stop accepting, let requests in
flight finish within ``shutdown.timeout.ms``, close the request channels (handlers drain and
end), then close the stores.

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
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from ..apis.services import BrokerEndpoint, TopicError, TopicInfo
from ..apis.table import API_TABLE, ApiTable
from ..apis.topic_names import topic_name_error
from ..network.socket_server import ListenerSpec, SocketServer
from ..protocol.errors import ErrorCode
from .admin_view import admin_server
from .config import BrokerConfig
from .handler_pool import HandlerPool
from .quotas import QuotaStore
from .request_handler import RequestHandler
from .topics import TopicCatalog, write_atomically

log = logging.getLogger("trio_broker")


class Broker:
    """A running broker: its config, its stores, its network and its handlers."""

    def __init__(self, config: BrokerConfig, *, api_table: ApiTable = API_TABLE) -> None:
        self.config = config
        self.broker_id: int = config["broker.id"]
        self.cluster_id = ""
        self.api_table = api_table
        self.data_dir = config.log_dirs[0]
        self.started_at = time.time()
        self.started_ns = time.monotonic_ns()
        self.ready = False
        self.stopped = trio.Event()
        self.topics_catalog = TopicCatalog(self.data_dir, self.broker_id)
        self.quotas = QuotaStore(self.data_dir)
        self._admin_url: str | None = None
        self._topic_lock = trio.Lock()
        control = config.control_plane_listener_name
        specs = [
            ListenerSpec(
                name=lc.name,
                host=lc.host,
                port=lc.port,
                security_protocol=lc.security_protocol,
                plane="control" if lc.name == control else "data",
            )
            for lc in config.listeners
        ]
        self.socket_server = SocketServer(
            specs,
            num_network_threads=config["num.network.threads"],
            queued_max_requests=config["queued.max.requests"],
            max_request_size=config["socket.request.max.bytes"],
            idle_timeout_ms=config["connections.max.idle.ms"],
            api_versions={
                "data": api_table.versions("data"),
                "control": api_table.versions("control"),
            },
        )
        self.request_handler = RequestHandler(api_table, self)
        self.data_pool = HandlerPool(
            "data",
            self.socket_server.data_requests.receiver,
            self.request_handler.handle,
            config["num.io.threads"],
        )
        self.control_pool: HandlerPool | None = None
        if self.socket_server.control_requests is not None:
            self.control_pool = HandlerPool(
                "control",
                self.socket_server.control_requests.receiver,
                self.request_handler.handle,
                1,
            )
        self.io_limiter = trio.CapacityLimiter(config["num.io.threads"])

    # --------------------------------------------------------------- life cycle

    async def run(self, *, task_status: trio.TaskStatus[Broker] = trio.TASK_STATUS_IGNORED) -> None:
        await trio.to_thread.run_sync(self._load_stores)
        # The admin API starts before the Kafka listeners and stops after them: its
        # readiness answers 503 while they start and while they drain.
        async with admin_server(self) as admin_url:
            self._admin_url = admin_url
            await self._run_kafka(task_status)
        log.info("trio-broker %s stopped", self.broker_id)
        self.stopped.set()

    async def _run_kafka(self, task_status: trio.TaskStatus[Broker]) -> None:
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
        await trio.to_thread.run_sync(self._close_stores)

    def shutdown(self) -> None:
        """Begin a graceful shutdown (idempotent)."""
        if self.ready:
            log.info("trio-broker %s shutting down", self.broker_id)
        self.ready = False
        self.socket_server.shutdown(self.config["shutdown.timeout.ms"] / 1000)

    def _load_stores(self) -> None:
        for d in self.config.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_or_create_meta()
        self.topics_catalog.load()
        self.quotas.load()

    def _close_stores(self) -> None:
        pass

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
                write_atomically(
                    meta, f"version=1\ncluster.id={cluster_id}\nnode.id={self.broker_id}\n"
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
        write_atomically(self.data_dir / "listeners.json", json.dumps(data, indent=1))

    # ------------------------------------------------------------------ metrics

    def metrics_snapshot(self) -> dict[str, Any]:
        """The JSON metrics snapshot (schema ``trio-broker.metrics/1``; the metrics issue
        fills it in)."""
        return {
            "schema": "trio-broker.metrics/1",
            "broker_id": self.broker_id,
            "uptime_s": (time.monotonic_ns() - self.started_ns) / 1e9,
        }

    def prometheus_text(self) -> bytes:
        """The same figures in Prometheus' text format (the metrics issue fills it in)."""
        return b""

    # ----------------------------------------------------------- BrokerView

    @property
    def controller_id(self) -> int:
        return self.broker_id

    def config_value(self, key: str) -> Any:
        return self.config[key]

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]:
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
        return [(k, v.lo, v.hi) for k, v in self.api_table.versions(plane).items()]

    def topic(self, name: str) -> TopicInfo | None:
        return self.topics_catalog.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self.topics_catalog.get_by_id(topic_id)

    def topics(self) -> Sequence[TopicInfo]:
        return self.topics_catalog.all()

    async def create_topic(
        self, name: str, num_partitions: int, configs: Mapping[str, str | None]
    ) -> TopicInfo:
        problem = topic_name_error(name)
        if problem is not None:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if num_partitions < 1:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, "a topic needs at least 1 partition")
        async with self._topic_lock:
            existing = self.topics_catalog.get(name)
            if existing is not None:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            clean = {k: v for k, v in configs.items() if v is not None}
            info = await trio.to_thread.run_sync(
                self.topics_catalog.create, name, num_partitions, clean
            )
        log.info("created topic %s with %d partitions", name, num_partitions)
        return info


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
