"""The typed actions a handler sends back to the processor that owns a connection.

Owns: ``SendResponse``, ``NoOpResponse``, ``CloseConnectionResponse``,
``StartThrottling`` and ``EndThrottling`` (Kafka's RequestChannel response types). An
action names its request (and through it the connection); the processor hands it to the
connection, which applies it in the order received.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..protocol.primitives import Parts

if TYPE_CHECKING:
    from .request import Request


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
