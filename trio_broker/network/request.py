"""A request in flight and the typed actions that answer it (Kafka's RequestChannel types).

Owns: ``Request`` and ``RequestTimes`` (what a processor parsed, and the time stamps of its
path), the response actions ``SendResponse``, ``NoOpResponse``, ``CloseConnectionResponse``,
``StartThrottling`` and ``EndThrottling``, and ``ResponseSink``, the one thing a handler
knows of the connection a request came from: ``sink.deliver(action)`` hands an action
straight to the connection's owner, which applies the actions in the order received.

A leaf of plain data: it imports only the protocol package, so handlers, metrics and the
network layer can all depend on it without depending on each other.

The stamps are monotonic nanoseconds taken by the task that reaches each point (all on one
Trio thread, one writer per field): start (frame parsed), dequeue (a handler took it),
api-local-complete (handler done), response-complete (action delivered; later than
api-local-complete when the request waited in the purgatory), response-dequeue (the
connection took the action) and send-complete (last byte written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..protocol.api import ApiSpec
from ..protocol.header import RequestHeader
from ..protocol.primitives import Parts


@dataclass(slots=True)
class RequestTimes:
    start_ns: int
    dequeue_ns: int = 0
    api_local_complete_ns: int = 0
    response_complete_ns: int = 0
    response_dequeue_ns: int = 0
    send_complete_ns: int = 0
    throttle_ms: int = 0

    def split_ms(self) -> dict[str, float]:
        """Kafka's time split of a finished request, in milliseconds."""
        ms = 1e-6
        local_end = self.api_local_complete_ns or self.response_complete_ns
        return {
            "queue": (self.dequeue_ns - self.start_ns) * ms,
            "local": (local_end - self.dequeue_ns) * ms,
            "remote": (self.response_complete_ns - local_end) * ms,
            "throttle": float(self.throttle_ms),
            "response_queue": (self.response_dequeue_ns - self.response_complete_ns) * ms,
            "response_send": (self.send_complete_ns - self.response_dequeue_ns) * ms,
            "total": (self.send_complete_ns - self.start_ns) * ms,
        }


class ResponseSink(Protocol):
    """Where the actions answering a request go: its connection, through its owner."""

    def deliver(self, action: ResponseAction) -> None:
        """Queue ``action`` for the connection (never blocks; dropped once it closed)."""


@dataclass(slots=True, eq=False)
class Request:
    """A parsed request on its way through the request channel to a handler and back.

    It carries what handlers may know of its connection as plain values (listener,
    security protocol, client address and software, principal) and the ``sink`` its answer goes to.
    """

    sink: ResponseSink
    connection_id: str
    processor_id: int
    header: RequestHeader
    spec: ApiSpec
    body: Any
    size: int
    times: RequestTimes
    listener: str = ""
    security_protocol: str = "PLAINTEXT"
    client_host: str = ""
    client_port: int = 0
    # ApiVersions v3+'s client_software_name and _version on this connection (KIP-511)
    client_software: tuple[str | None, str | None] = (None, None)
    principal: str = "User:ANONYMOUS"
    plane: str = "data"
    context: dict[str, Any] = field(default_factory=dict)
    # Bytes reserved in the memory pool for this request until it completes.
    memory: int = 0
    # Pipelined requests of the same connection handed over with this one (the processor's
    # ``network.pipelining``): handled after it, in order, their responses sent in order;
    # ``group_index`` is a request's place in its group (0: the one that carries it).
    followers: list[Request] | None = None
    group_index: int = 0

    @property
    def version(self) -> int:
        return self.header.api_version

    def __repr__(self) -> str:
        return (
            f"<Request {self.spec.name} v{self.header.api_version} "
            f"corr={self.header.correlation_id} conn={self.connection_id}>"
        )


@dataclass(frozen=True, slots=True)
class SendResponse:
    """Write ``parts`` (a size-prefixed response frame) to the connection."""

    request: Request
    parts: Parts
    size: int


@dataclass(frozen=True, slots=True)
class NoOpResponse:
    """The request needs no response (a Produce with acks=0): just unmute."""

    request: Request


@dataclass(frozen=True, slots=True)
class CloseConnectionResponse:
    """Close the connection (an error the client must see as a disconnect)."""

    request: Request
    reason: str = ""


@dataclass(frozen=True, slots=True)
class StartThrottling:
    """The client went over a quota: keep the connection muted after its response."""

    request: Request
    throttle_ms: int


@dataclass(frozen=True, slots=True)
class EndThrottling:
    """The throttle time is over: the connection may read its next request."""

    request: Request


ResponseAction = (
    SendResponse | NoOpResponse | CloseConnectionResponse | StartThrottling | EndThrottling
)
