"""The error the records layer raises for record data it cannot accept.

Owns: ``RecordsError``, which carries the Kafka error code a produce response reports for
the partition (CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT, MESSAGE_TOO_LARGE,
INVALID_RECORD ...). It must not know about requests, partitions or the log.
"""

from __future__ import annotations

from trio_broker.protocol.errors import ErrorCode


class RecordsError(Exception):
    """Record data that cannot be accepted; ``error_code`` is what the client is told."""

    def __init__(
        self,
        error_code: ErrorCode,
        message: str,
        record_errors: list[tuple[int, str | None]] | None = None,
    ) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        # (index of the record in its batch, why): Produce's per-record errors (KIP-467).
        self.record_errors = record_errors or []

    def __repr__(self) -> str:
        return f"RecordsError({self.error_code.name}, {self.message!r})"
