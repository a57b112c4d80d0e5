"""What a listener's processors need to serve connections: plain data and two protocols.

Owns: ``ListenerSpec`` (what to bind), ``ListenerContext`` (one bound listener as its
processors see it: name, plane, limits, the api versions it serves, the send side of its
plane's request channel, the memory pool, TLS and SASL, and the observer of connection
events), ``ConnectionEvents`` (what a processor reports: a connection closed, reaped, too
slow, misbehaving or hit by a broker bug, a request completed), ``RequestSender`` and
``NetworkCounters``. The socket server builds one context per listener; processors get it
and nothing else of the server, so the arrows in this package point one way:
request <- connection <- context <- processor <- listener <- socket_server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..protocol.errors import RemoteProtocolError
from ..protocol.schema import VersionRange
from .authentication import AuthCounters, ListenerSecurity
from .connection import Connection
from .memory_pool import MemoryPool
from .request import Request


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"
    plane: str = "data"  # or "control"
    # TLS and SASL (see network.authentication); the default is PLAINTEXT
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    # processors of this listener (listener.name.<l>.num.network.threads); None: the
    # broker's num.network.threads (a control-plane listener always has one)
    processors: int | None = None


@dataclass
class NetworkCounters:
    connections_opened: int = 0
    connections_closed: int = 0
    connections_reaped: int = 0
    request_read_timeouts: int = 0
    connections_rejected: int = 0
    connections_evicted: int = 0
    bad_requests: dict[str, int] = field(default_factory=dict)

    def count_bad_request(self, kind: str) -> None:
        self.bad_requests[kind] = self.bad_requests.get(kind, 0) + 1


class RequestSender(Protocol):
    """The send side of a plane's request channel (``queued.max.requests``)."""

    async def send(self, request: Request) -> None: ...

    def try_send(self, request: Request) -> bool:
        """Queue ``request`` if the channel has room now (no checkpoint); False if full."""
        ...


class ConnectionEvents(Protocol):
    """What the processors of a listener report about their connections."""

    def connection_closed(self, conn: Connection) -> None: ...

    def connection_reaped(self, conn: Connection) -> None: ...

    def request_read_timed_out(self, conn: Connection, have: int) -> None: ...

    def bad_request(self, conn: Connection, exc: RemoteProtocolError) -> None: ...

    def internal_error(self, conn: Connection) -> None: ...

    def tls_failed(self, conn: Connection, reason: str) -> None: ...

    def request_completed(self, request: Request) -> None: ...


@dataclass(frozen=True, slots=True, eq=False)
class ListenerContext:
    """One listener, as its processors see it."""

    name: str
    plane: str
    security_protocol: str
    security: ListenerSecurity
    auth_counters: AuthCounters
    api_versions: Mapping[int, VersionRange]
    requests: RequestSender
    # Control requests are small and must pass when data requests used the memory up.
    memory_pool: MemoryPool | None
    events: ConnectionEvents
    max_request_size: int
    idle_timeout_ns: int = 0
    request_read_timeout_ns: int = 0
