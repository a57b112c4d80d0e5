"""The socket server: per listener an acceptor, a pool of processors, and their connections.

Owns: ``ListenerSpec`` (what to bind), ``ListenerRuntime`` (one bound listener: its
acceptor loops, processors, connections, counters), ``RequestChannel`` (one bounded channel
of requests per plane) and ``SocketServer``, which binds every listener, resizes processor
pools live, and shuts down gracefully.

Nursery layout of one listener (outer to inner)::

    processors' response tasks          (live until every connection has finished)
      connections, acceptor loops,      (drained at shutdown, under a deadline)
      processors' new-connection tasks

The control-plane listener (``control.plane.listener.name``) gets one processor and its own
request channel of capacity 20, served by its own handler, so control requests never wait
behind data requests.
"""

from __future__ import annotations

import errno
import itertools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from ..protocol.errors import RemoteProtocolError
from ..protocol.schema import VersionRange
from .authentication import AuthCounters, ListenerSecurity
from .connection import Connection
from .connection_quotas import UNLIMITED, ConnectionLimits, ConnectionQuotas
from .memory_pool import MemoryPool
from .processor import Processor
from .request import Request

log = logging.getLogger("trio_broker.network")

CONTROL_PLANE_QUEUE = 20
_ACCEPT_RETRY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"
    plane: str = "data"  # or "control"
    # TLS and SASL (see network.authentication); the default is PLAINTEXT
    security: ListenerSecurity = field(default_factory=ListenerSecurity)


class RequestChannel:
    """One bounded channel of requests (``queued.max.requests``) shared by a plane."""

    def __init__(self, plane: str, capacity: int) -> None:
        self.plane = plane
        self.capacity = capacity
        self._tx, self.receiver = trio.open_memory_channel[Request](capacity)

    async def send(self, request: Request) -> None:
        await self._tx.send(request)

    @property
    def size(self) -> int:
        return self._tx.statistics().current_buffer_used

    def close(self) -> None:
        self._tx.close()


@dataclass
class NetworkCounters:
    connections_opened: int = 0
    connections_closed: int = 0
    connections_reaped: int = 0
    request_read_timeouts: int = 0
    connections_rejected: int = 0
    connections_evicted: int = 0
    bad_requests: dict[str, int] = field(default_factory=dict)


class ListenerRuntime:
    """One bound listener and everything that serves it."""

    def __init__(
        self,
        spec: ListenerSpec,
        server: SocketServer,
        request_channel: RequestChannel,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.plane = spec.plane
        self.server = server
        self.request_channel = request_channel
        self.max_request_size = server.max_request_size
        self.idle_timeout_ns = server.idle_timeout_ns
        self.request_read_timeout_ns = server.request_read_timeout_ns
        self.api_versions = server.api_versions[spec.plane]
        # Control requests are small and must pass when data requests used the memory up.
        self.memory_pool = server.memory_pool if spec.plane == "data" else None
        self.quotas = server.quotas
        self.security = spec.security
        self.auth_counters = server.auth_counters
        self.processors: list[Processor] = []
        self.connections: set[Connection] = set()
        self.counters = server.counters
        self.bound: list[tuple[str, int]] = []
        self.connection_nursery: trio.Nursery
        self._processor_nursery: trio.Nursery
        self._rr = 0
        self._conn_index = itertools.count()
        self._acceptor_scope = trio.CancelScope()
        self._rejected_logged: set[str] = set()

    @property
    def host(self) -> str:
        return self.bound[0][0] if self.bound else self.spec.host

    @property
    def port(self) -> int:
        return self.bound[0][1] if self.bound else self.spec.port

    # ---------------------------------------------------------------- processors

    def pick_processor(self) -> Processor:
        """Round robin over the current processors."""
        procs = self.processors
        self._rr = (self._rr + 1) % len(procs)
        return procs[self._rr]

    def _add_processor(self) -> Processor:
        proc = Processor(self.server.next_processor_id(), self)
        self.processors.append(proc)
        self._processor_nursery.start_soon(proc.run_responses, name=f"processor {proc.id}")
        self.connection_nursery.start_soon(
            proc.run_new_connections, name=f"processor {proc.id} accept"
        )
        return proc

    def resize(self, size: int) -> None:
        if size < 1:
            raise ValueError("a listener needs at least one processor")
        while len(self.processors) < size:
            self._add_processor()
        if len(self.processors) > size:
            removed = self.processors[size:]
            del self.processors[size:]
            self._rr = 0
            for proc in removed:
                proc.retire(self.processors)

    def next_connection_id(self, local: tuple, remote: tuple) -> str:
        return f"{local[0]}:{local[1]}-{remote[0]}:{remote[1]}-{next(self._conn_index)}"

    # ----------------------------------------------------------------- counters

    def connection_opened(self, conn: Connection) -> None:
        self.connections.add(conn)
        self.counters.connections_opened += 1
        control = self.plane == "control"
        self.quotas.opened(self.name, conn.remote[0], control=control)
        excess = self.quotas.excess(self.name, control=control)
        if excess:
            self.evict(excess, newcomer=conn)

    def evict(self, count: int, newcomer: Connection | None) -> None:
        """Close the least recently active data-plane connections (Kafka's
        closeExcessConnections): a listener over its own limit loses its own, a broker
        over max.connections loses them wherever they are. Connections that have not
        sent a request yet go first: in a flood of new connections, those are the flood,
        and clients already being served keep their connections."""
        over_listener = self.quotas.per_listener[self.name] > self.quotas.limits.per_listener.get(
            self.name, UNLIMITED
        )
        pool = self.connections if over_listener else self.server.data_plane_connections()
        candidates = sorted(
            (c for c in pool if c is not newcomer and not c.closed and not c.close_reason),
            key=lambda c: (c.requests > 0, c.last_active_ns),
        )
        for victim in candidates[:count]:
            victim.close("closed to stay within max.connections (least recently used)")
            self.quotas.evicted += 1
            self.counters.connections_evicted += 1

    def connection_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.counters.connections_closed += 1
        self.quotas.closed(self.name, conn.remote[0], control=self.plane == "control")
        log.debug("connection %s closed: %s", conn.id, conn.close_reason)

    def connection_reaped(self, conn: Connection) -> None:
        self.counters.connections_reaped += 1

    def request_read_timed_out(self, conn: Connection, have: int) -> None:
        """A request did not arrive whole within request.read.timeout.ms: its connection
        is closed (counted, logged once with the peer)."""
        self.counters.request_read_timeouts += 1
        log.warning(
            "closing %s (listener %s, client %s): request not complete after %d ms "
            "(%d bytes of it received; request.read.timeout.ms)",
            conn.remote_str,
            self.name,
            conn.client_id,
            self.request_read_timeout_ns // 1_000_000,
            have,
        )

    def bad_request(self, conn: Connection, exc: RemoteProtocolError) -> None:
        kind = type(exc).__name__
        self.counters.bad_requests[kind] = self.counters.bad_requests.get(kind, 0) + 1
        log.warning(
            "closing connection %s from %s on listener %s: %s (%s)",
            conn.id,
            conn.remote_str,
            self.name,
            exc,
            kind,
        )

    def internal_error(self, conn: Connection) -> None:
        """Called from inside the ``except`` of a connection task that met an unexpected
        exception (a broker bug): logged with its traceback, counted as ``InternalError``."""
        kind = "InternalError"
        self.counters.bad_requests[kind] = self.counters.bad_requests.get(kind, 0) + 1
        log.exception(
            "closing connection %s from %s on listener %s after a broker error",
            conn.id,
            conn.remote_str,
            self.name,
        )

    def request_completed(self, request: Request) -> None:
        """A request ended: its response was sent, it needed none, or its connection closed
        first (then ``request.times.send_complete_ns`` is 0)."""
        observer = self.server.on_request_complete
        if observer is not None:
            observer(request)

    # -------------------------------------------------------------------- tasks

    async def run(
        self, num_processors: int, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(self.spec.port, host=self.spec.host or None)
        for lst in listeners:
            addr = lst.socket.getsockname()
            self.bound.append((addr[0], addr[1]))
        try:
            async with trio.open_nursery() as processor_nursery:
                self._processor_nursery = processor_nursery
                async with trio.open_nursery() as conn_nursery:
                    self.connection_nursery = conn_nursery
                    for _ in range(num_processors):
                        self._add_processor()
                    conn_nursery.start_soon(self._accept_all, listeners)
                    task_status.started()
                    await self.server.shutdown_started.wait()
                    self._acceptor_scope.cancel()
                    for proc in self.processors:
                        proc.new_connections.close()
                    for conn in list(self.connections):
                        conn.drain()
                    conn_nursery.cancel_scope.deadline = self.server.shutdown_deadline
                for proc in self.processors:
                    proc.close()
        finally:
            for lst in listeners:
                await trio.aclose_forcefully(lst)  # in case start-up failed half way

    async def _accept_all(self, listeners: list[trio.SocketListener]) -> None:
        try:
            with self._acceptor_scope:
                async with trio.open_nursery() as nursery:
                    for lst in listeners:
                        nursery.start_soon(self._accept_loop, lst)
        finally:
            # Stop accepting means closing the listening sockets at once: the kernel
            # would otherwise complete handshakes into the backlog.
            for lst in listeners:
                await trio.aclose_forcefully(lst)

    async def _accept_loop(self, listener: trio.SocketListener) -> None:
        control = self.plane == "control"
        while True:
            await self.quotas.wait_for_creation_slot(self.name, control=control)
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno in _ACCEPT_RETRY_ERRNOS:
                    log.error("accept on %s failed: %s; retrying in 100 ms", self.name, exc)
                    await trio.sleep(0.1)
                    continue
                raise
            try:
                ip = stream.socket.getpeername()[0]
            except OSError:
                await trio.aclose_forcefully(stream)
                continue
            if not control and not self.quotas.admit(ip):
                self.counters.connections_rejected += 1
                if ip not in self._rejected_logged:
                    self._rejected_logged.add(ip)
                    log.warning(
                        "refusing connections from %s on %s: over max.connections.per.ip (%d)",
                        ip,
                        self.name,
                        self.quotas.ip_limit(ip),
                    )
                await trio.aclose_forcefully(stream)
                continue
            await self._hand_over(stream)

    async def _hand_over(self, stream: trio.SocketStream) -> None:
        while True:
            proc = self.pick_processor()
            try:
                await proc.new_connections.send(stream)
                return
            except trio.ClosedResourceError:
                if self.server.shutdown_started.is_set():
                    await trio.aclose_forcefully(stream)
                    return
                # that processor retired while we waited: try the next one


class SocketServer:
    """Binds every listener and runs them until ``shutdown``.

    ``api_versions`` maps a plane ("data", "control") to the api keys its listeners serve
    and their versions; a request for anything else closes its connection.
    """

    def __init__(
        self,
        listeners: list[ListenerSpec],
        *,
        num_network_threads: int,
        queued_max_requests: int,
        max_request_size: int,
        api_versions: dict[str, dict[int, VersionRange]],
        idle_timeout_ms: int = 0,
        request_read_timeout_ms: int = 0,
        limits: ConnectionLimits | None = None,
        queued_max_request_bytes: int = -1,
        on_request_complete: Callable[[Request], None] | None = None,
    ) -> None:
        self.specs = listeners
        self.num_network_threads = num_network_threads
        self.max_request_size = max_request_size
        self.idle_timeout_ns = idle_timeout_ms * 1_000_000
        self.request_read_timeout_ns = request_read_timeout_ms * 1_000_000
        self.api_versions = api_versions
        self.quotas = ConnectionQuotas(limits or ConnectionLimits())
        self.memory_pool = MemoryPool(queued_max_request_bytes)
        self.on_request_complete = on_request_complete
        self.counters = NetworkCounters()
        self.auth_counters = AuthCounters()
        self.data_requests = RequestChannel("data", queued_max_requests)
        self.control_requests: RequestChannel | None = None
        if any(spec.plane == "control" for spec in listeners):
            self.control_requests = RequestChannel("control", CONTROL_PLANE_QUEUE)
        self.listeners: dict[str, ListenerRuntime] = {}
        for spec in listeners:
            channel = self.control_requests if spec.plane == "control" else self.data_requests
            assert channel is not None
            self.listeners[spec.name] = ListenerRuntime(spec, self, channel)
        self.shutdown_started = trio.Event()
        self.shutdown_deadline = math.inf
        self._processor_ids = itertools.count()
        self.started_ns = time.monotonic_ns()

    def next_processor_id(self) -> int:
        return next(self._processor_ids)

    def listener(self, name: str) -> ListenerRuntime:
        return self.listeners[name]

    def bound_addresses(self) -> dict[str, tuple[str, int]]:
        return {name: (lr.host, lr.port) for name, lr in self.listeners.items()}

    def all_connections(self) -> list[Connection]:
        return [c for lr in self.listeners.values() for c in lr.connections]

    def data_plane_connections(self) -> list[Connection]:
        return [c for lr in self.listeners.values() if lr.plane == "data" for c in lr.connections]

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Bind all listeners; ``started`` once every one of them accepts."""
        async with trio.open_nursery() as nursery:
            for lr in self.listeners.values():
                size = 1 if lr.plane == "control" else self.num_network_threads
                await nursery.start(lr.run, size)
            task_status.started()
        self.data_requests.close()
        if self.control_requests is not None:
            self.control_requests.close()

    def update_limits(self, limits: ConnectionLimits) -> None:
        """New connection limits (a dynamic config change): connections over a lowered
        limit are closed at once, least recently used first."""
        self.quotas.update(limits)
        for lr in self.listeners.values():
            excess = self.quotas.excess(lr.name, control=lr.plane == "control")
            if excess:
                lr.evict(excess, newcomer=None)

    def resize(self, listener_name: str, size: int) -> None:
        lr = self.listeners[listener_name]
        if lr.plane == "control":
            raise ValueError("the control-plane listener has exactly one processor")
        lr.resize(size)

    def shutdown(self, timeout_s: float) -> None:
        """Stop accepting; let in-flight requests finish within ``timeout_s``."""
        if not self.shutdown_started.is_set():
            self.shutdown_deadline = trio.current_time() + timeout_s
            self.shutdown_started.set()
