"""What a handler knows about the request it answers, and how it defers its answer.

Owns: ``RequestContext`` (plain data about the request and its connection, plus the
``BrokerView`` handlers work through). The markers a handler may return instead of a
response, ``Deferred`` and ``CloseConnection``, live in ``outcomes`` (a leaf that
``services`` uses too) and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .outcomes import CloseConnection, Deferred

if TYPE_CHECKING:
    from .services import BrokerView

__all__ = ["CloseConnection", "Deferred", "RequestContext"]


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
    client_port: int = 0
    connection_id: str = ""  # the network layer's id of the connection it came on
    # the client's software name and version from its ApiVersions (KIP-511), if it said
    client_software: tuple[str | None, str | None] = (None, None)
    # The version the response is encoded with; a handler may lower it (ApiVersions
    # answers an unsupported version with v0, KIP-511).
    response_version: int = -1
    # Throttle time the quota manager decided for this request, copied into responses.
    throttle_time_ms: int = 0
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.response_version < 0:
            self.response_version = self.api_version
