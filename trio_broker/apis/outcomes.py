"""What a handler may return instead of a response (a leaf: imports nothing of the broker).

Owns: ``Deferred`` (a delayed operation in a purgatory will send the response later) and
``CloseConnection`` (the client must see a disconnect instead of a response).
"""

from __future__ import annotations

from typing import Any


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
