"""A request in flight: what a processor parsed, and the time stamps of its path.

Owns: ``Request`` and ``RequestTimes``. The stamps are monotonic nanoseconds taken by the
task that reaches each point (all on one Trio thread, one writer per field):
start (frame parsed), dequeue (a handler took it), api-local-complete (handler done),
response-complete (response action queued; later than api-local-complete when the request
waited in the purgatory), response-dequeue (the processor took the action) and
send-complete (last byte written). The metrics split follows Kafka's RequestChannel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol.api import ApiSpec
from ..protocol.header import RequestHeader

if TYPE_CHECKING:
    from .connection import Connection


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


@dataclass(slots=True, eq=False)
class Request:
    """A parsed request on its way through the request channel to a handler and back."""

    connection: Connection
    processor_id: int
    header: RequestHeader
    spec: ApiSpec
    body: Any
    size: int
    times: RequestTimes
    plane: str = "data"
    context: dict[str, Any] = field(default_factory=dict)
    # Bytes reserved in the memory pool for this request until it completes.
    memory: int = 0

    @property
    def api_name(self) -> str:
        return self.spec.name

    @property
    def version(self) -> int:
        return self.header.api_version

    def __repr__(self) -> str:
        return (
            f"<Request {self.spec.name} v{self.header.api_version} "
            f"corr={self.header.correlation_id} conn={self.connection.id}>"
        )
