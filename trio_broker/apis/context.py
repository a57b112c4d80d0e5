"""What a handler knows about the request it answers, and how it defers its answer.

Owns: ``RequestContext`` (plain data about the request and its connection, plus the
``BrokerView`` handlers work through) and ``Deferred`` (the marker a handler returns when a
delayed operation in the purgatory will send the response later).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .services import BrokerView


@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    listener: str
    security_protocol: str
    principal: str
    plane: str
    broker: BrokerView
    # The version the response is encoded with; a handler may lower it (ApiVersions
    # answers an unsupported version with v0, KIP-511).
    response_version: int = -1
    # Throttle time the quota manager decided for this request, copied into responses.
    throttle_time_ms: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.response_version < 0:
            self.response_version = self.api_version


class CloseConnection:
    """Returned by a handler whose client must see a disconnect instead of a response
    (a Produce with acks=0 that failed: the client reads no responses, so Kafka closes)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Deferred:
    """Returned by a handler whose response a delayed operation will send later."""

    __slots__ = ("operation",)

    def __init__(self, operation: Any) -> None:
        self.operation = operation

    def __repr__(self) -> str:
        return f"Deferred({self.operation!r})"
