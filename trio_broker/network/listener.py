"""One bound listener: its acceptor, its processors and what they report.

Owns: ``ListenerRuntime``: binding the listener's sockets (``ListenerBindError`` naming
the listener and address when that fails), the acceptor loops (connection
limits checked at accept: per-IP refusals, creation-rate waits), round-robin hand-over of
sockets to the processors, live resizing of the processor pool, eviction of connections
over ``max.connections``, and the ``ConnectionEvents`` its processors report (counted,
logged once with the peer). ``Shared`` holds what every listener of a socket server
shares (quotas, counters, the memory pool, the request and connection-close observers).

Nursery layout of one listener (outer to inner)::

    connections, acceptor loops,      (drained at shutdown, under a deadline)
    processors' new-connection tasks
"""

from __future__ import annotations

import dataclasses
import errno
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import trio

from ..protocol.errors import RemoteProtocolError
from ..protocol.schema import VersionRange
from .authentication import AuthCounters, ListenerSecurity
from .connection import Connection
from .connection_quotas import UNLIMITED, ConnectionQuotas
from .context import ListenerContext, ListenerSpec, NetworkCounters, RequestSender
from .memory_pool import MemoryPool
from .processor import Processor
from .request import Request

log = logging.getLogger("trio_broker.network")
security_log = logging.getLogger("trio_broker.security")

_ACCEPT_RETRY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}


class ListenerBindError(OSError):
    """A listener's address cannot be bound (in use, not local ...): the message names
    the listener and the address, in one line for the user."""


@dataclass(frozen=True, slots=True, eq=False)
class Shared:
    """What all listeners of one socket server share."""

    quotas: ConnectionQuotas
    counters: NetworkCounters
    auth_counters: AuthCounters
    memory_pool: MemoryPool
    processor_ids: Iterator[int]
    data_plane_connections: Callable[[], list[Connection]]
    request_observers: list[Callable[[Request], None]]
    close_observers: list[Callable[[str], None]]
    max_request_size: int
    idle_timeout_ns: int
    request_read_timeout_ns: int
    receive_buffer_bytes: int = -1  # SO_RCVBUF of accepted sockets; -1: the OS's
    send_buffer_bytes: int = -1  # SO_SNDBUF of accepted sockets; -1: the OS's


class ListenerRuntime:
    """One bound listener and everything that serves it (its ``ConnectionEvents``)."""

    def __init__(
        self,
        spec: ListenerSpec,
        shared: Shared,
        requests: RequestSender,
        api_versions: dict[int, VersionRange],
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.plane = spec.plane
        self.shared = shared
        self.quotas = shared.quotas
        self.counters = shared.counters
        self.context = ListenerContext(
            name=spec.name,
            plane=spec.plane,
            security_protocol=spec.security_protocol,
            security=spec.security,
            auth_counters=shared.auth_counters,
            api_versions=api_versions,
            requests=requests,
            memory_pool=shared.memory_pool if spec.plane == "data" else None,
            events=self,
            max_request_size=shared.max_request_size,
            idle_timeout_ns=shared.idle_timeout_ns,
            request_read_timeout_ns=shared.request_read_timeout_ns,
        )
        self.processors: list[Processor] = []
        self.connections: set[Connection] = set()
        self.bound: list[tuple[str, int]] = []
        self.connection_nursery: trio.Nursery
        self._rr = 0
        self._conn_ids: Iterator[int] = iter(range(2**62))
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
        proc = Processor(
            next(self.shared.processor_ids), self.context, self.connection_nursery, self._conn_ids
        )
        proc.successor = self.pick_processor
        self.processors.append(proc)
        self.connection_nursery.start_soon(
            proc.run_new_connections, self.connection_opened, name=f"processor {proc.id} accept"
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

    def update_security(self, security: ListenerSecurity) -> None:
        """New TLS and SASL settings (a reloaded key store): for connections from now on."""
        self.context = dataclasses.replace(self.context, security=security)
        for proc in self.processors:
            proc.context = self.context

    # ---------------------------------------------------------------- connections

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
        pool = self.connections if over_listener else self.shared.data_plane_connections()
        candidates = sorted(
            (c for c in pool if c is not newcomer and not c.closed and not c.close_reason),
            key=lambda c: (c.requests > 0, c.last_active_ns),
        )
        for victim in candidates[:count]:
            victim.close("closed to stay within max.connections (least recently used)")
            self.quotas.evicted += 1
            self.counters.connections_evicted += 1

    # ------------------------------------------------------- ConnectionEvents

    def connection_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.counters.connections_closed += 1
        self.quotas.closed(self.name, conn.remote[0], control=self.plane == "control")
        log.debug("connection %s closed: %s", conn.id, conn.close_reason)
        for observer in self.shared.close_observers:
            try:
                observer(conn.id)
            except Exception:  # an observer's bug must not stop the others
                log.exception("a connection-close observer failed for %s", conn.id)

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
            self.shared.request_read_timeout_ns // 1_000_000,
            have,
        )

    def bad_request(self, conn: Connection, exc: RemoteProtocolError) -> None:
        kind = type(exc).__name__
        self.counters.count_bad_request(kind)
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
        self.counters.count_bad_request("InternalError")
        log.exception(
            "closing connection %s from %s on listener %s after a broker error",
            conn.id,
            conn.remote_str,
            self.name,
        )

    def tls_failed(self, conn: Connection, reason: str) -> None:
        """A TLS handshake failed (no or an untrusted client certificate, a plaintext
        client, the deadline): logged once with the peer and counted."""
        self.shared.auth_counters.tls_handshake_failures += 1
        security_log.warning(
            "TLS handshake with %s on listener %s failed: %s", conn.remote_str, self.name, reason
        )

    def request_completed(self, request: Request) -> None:
        """A request ended: its response was sent, it needed none, or its connection closed
        first (then ``request.times.send_complete_ns`` is 0)."""
        failed: Exception | None = None
        for observer in self.shared.request_observers:
            try:
                observer(request)
            except Exception as exc:  # the others still see the request
                failed = failed or exc
        if failed is not None:
            # The response is out; the connection task that called this closes its
            # connection (as a Kafka processor does) and logs it as an internal error.
            raise failed

    # -------------------------------------------------------------------- tasks

    async def run(
        self,
        num_processors: int,
        shutdown: trio.Event,
        deadline: Callable[[], float],
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        try:
            listeners = await trio.open_tcp_listeners(self.spec.port, host=self.spec.host or None)
        except OSError as exc:
            host = self.spec.host or "0.0.0.0"
            address = f"[{host}]:{self.spec.port}" if ":" in host else f"{host}:{self.spec.port}"
            reason = (exc.strerror or str(exc)).lower()
            raise ListenerBindError(
                f"listener {self.name} cannot bind {address}: {reason}"
            ) from exc
        for lst in listeners:
            # Accepted sockets inherit the listening socket's buffers, and the window
            # scale offered in the SYN-ACK follows the receive buffer: set before any
            # client connects.
            for option, size in (
                (trio.socket.SO_RCVBUF, self.shared.receive_buffer_bytes),
                (trio.socket.SO_SNDBUF, self.shared.send_buffer_bytes),
            ):
                if size > 0:
                    lst.socket.setsockopt(trio.socket.SOL_SOCKET, option, size)
            addr = lst.socket.getsockname()
            self.bound.append((addr[0], addr[1]))
        try:
            async with trio.open_nursery() as conn_nursery:
                self.connection_nursery = conn_nursery
                for _ in range(num_processors):
                    self._add_processor()
                conn_nursery.start_soon(self._accept_all, listeners, shutdown)
                task_status.started()
                await shutdown.wait()
                self._acceptor_scope.cancel()
                for proc in self.processors:
                    proc.close()
                for conn in list(self.connections):
                    conn.drain()
                conn_nursery.cancel_scope.deadline = deadline()
        finally:
            for lst in listeners:
                await trio.aclose_forcefully(lst)  # in case start-up failed half way

    async def _accept_all(self, listeners: list[trio.SocketListener], shutdown: trio.Event) -> None:
        try:
            with self._acceptor_scope:
                async with trio.open_nursery() as nursery:
                    for lst in listeners:
                        nursery.start_soon(self._accept_loop, lst, shutdown)
        finally:
            # Stop accepting means closing the listening sockets at once: the kernel
            # would otherwise complete handshakes into the backlog.
            for lst in listeners:
                await trio.aclose_forcefully(lst)

    async def _accept_loop(self, listener: trio.SocketListener, shutdown: trio.Event) -> None:
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
            await self._hand_over(stream, shutdown)

    async def _hand_over(self, stream: trio.SocketStream, shutdown: trio.Event) -> None:
        while True:
            proc = self.pick_processor()
            try:
                await proc.new_connections.send(stream)
                return
            except trio.ClosedResourceError:
                if shutdown.is_set():
                    await trio.aclose_forcefully(stream)
                    return
                # that processor retired while we waited: try the next one
