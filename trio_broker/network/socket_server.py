"""The socket server: every listener of the broker, its request channels and shutdown.

Owns: ``RequestChannel`` (one bounded channel of requests per plane,
``queued.max.requests``) and ``SocketServer``, which builds one ``ListenerRuntime`` per
listener (with its ``ListenerContext``), binds them all, resizes processor pools live,
applies new connection limits, and shuts down gracefully: stop accepting, let requests in
flight finish under a deadline, then close the request channels (handlers drain and end).

The control-plane listener (``control.plane.listener.name``) gets one processor and its own
request channel of capacity 20, served by its own handler, so control requests never wait
behind data requests.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable

import trio

from ..protocol.schema import VersionRange
from .authentication import AuthCounters
from .connection import Connection
from .connection_quotas import ConnectionLimits, ConnectionQuotas
from .context import ListenerSpec, NetworkCounters
from .listener import ListenerBindError, ListenerRuntime, Shared
from .memory_pool import MemoryPool
from .request import Request

CONTROL_PLANE_QUEUE = 20

__all__ = [
    "CONTROL_PLANE_QUEUE",
    "ListenerBindError",
    "ListenerSpec",
    "RequestChannel",
    "SocketServer",
]


class RequestChannel:
    """One bounded channel of requests (``queued.max.requests``) shared by a plane."""

    def __init__(self, plane: str, capacity: int) -> None:
        self.plane = plane
        self.capacity = capacity
        self._tx, self.receiver = trio.open_memory_channel[Request](capacity)

    async def send(self, request: Request) -> None:
        await self._tx.send(request)

    def try_send(self, request: Request) -> bool:
        """Queue ``request`` if there is room now: no checkpoint, so the connection task
        goes straight on to wait for its response instead of yielding once more."""
        try:
            self._tx.send_nowait(request)
        except trio.WouldBlock:
            return False
        return True

    @property
    def size(self) -> int:
        return self._tx.statistics().current_buffer_used

    def close(self) -> None:
        self._tx.close()


class SocketServer:
    """Binds every listener and runs them until ``shutdown``.

    ``api_versions`` maps a plane ("data", "control") to the api keys its listeners serve
    and their versions; a request for anything else closes its connection.
    ``request_observers`` are called, in order, with every request that ended;
    ``close_observers`` with the id of every connection that closed (``Request.connection_id``
    of its requests), after the network layer let go of it.
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
        receive_buffer_bytes: int = -1,
        send_buffer_bytes: int = -1,
        limits: ConnectionLimits | None = None,
        queued_max_request_bytes: int = -1,
        request_observers: Iterable[Callable[[Request], None]] = (),
        close_observers: Iterable[Callable[[str], None]] = (),
    ) -> None:
        self.specs = listeners
        self.num_network_threads = num_network_threads
        self.processors_of = {s.name: s.processors for s in listeners if s.processors}
        self.quotas = ConnectionQuotas(limits or ConnectionLimits())
        self.memory_pool = MemoryPool(queued_max_request_bytes)
        self.request_observers: list[Callable[[Request], None]] = list(request_observers)
        self.close_observers: list[Callable[[str], None]] = list(close_observers)
        self.counters = NetworkCounters()
        self.auth_counters = AuthCounters()
        self.data_requests = RequestChannel("data", queued_max_requests)
        self.control_requests: RequestChannel | None = None
        if any(spec.plane == "control" for spec in listeners):
            self.control_requests = RequestChannel("control", CONTROL_PLANE_QUEUE)
        shared = Shared(
            quotas=self.quotas,
            counters=self.counters,
            auth_counters=self.auth_counters,
            memory_pool=self.memory_pool,
            processor_ids=itertools.count(),
            data_plane_connections=self.data_plane_connections,
            request_observers=self.request_observers,
            close_observers=self.close_observers,
            max_request_size=max_request_size,
            idle_timeout_ns=idle_timeout_ms * 1_000_000,
            request_read_timeout_ns=request_read_timeout_ms * 1_000_000,
            receive_buffer_bytes=receive_buffer_bytes,
            send_buffer_bytes=send_buffer_bytes,
        )
        self.listeners: dict[str, ListenerRuntime] = {}
        for spec in listeners:
            channel = self.control_requests if spec.plane == "control" else self.data_requests
            assert channel is not None
            self.listeners[spec.name] = ListenerRuntime(
                spec, shared, channel, api_versions[spec.plane]
            )
        self.shutdown_started = trio.Event()
        self.shutdown_deadline = math.inf
        self.started_ns = time.monotonic_ns()

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
                own = self.processors_of.get(lr.name)
                size = 1 if lr.plane == "control" else own or self.num_network_threads
                await nursery.start(lr.run, size, self.shutdown_started, self._deadline)
            task_status.started()
        self.data_requests.close()
        if self.control_requests is not None:
            self.control_requests.close()

    def _deadline(self) -> float:
        return self.shutdown_deadline

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
