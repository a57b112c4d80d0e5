"""Errors of the log layer, each carrying the Kafka error code a response reports.

Owns: ``LogError`` and its kinds. It must not decide what a handler does with them
(retry, close, report): handlers read ``error_code``.
"""

from __future__ import annotations

from trio_broker.protocol.errors import ErrorCode


class LogError(Exception):
    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR


class LogStorageError(LogError):
    """The disk failed (ENOSPC, EIO, EFBIG ...); the log was left consistent."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRange(LogError):
    """An offset below the log start offset or above the log end offset."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class LogClosed(LogError):
    """The log was closed or deleted (e.g. its topic is being deleted)."""

    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class CorruptIndex(LogError):
    """An index file that fails its sanity check; the loader rebuilds it."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class ReplicaGap(LogError):
    """A follower was given batches that start above its log end (offsets are missing)."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, first_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"the batches start at offset {first_offset}, above the log end {log_end_offset}"
        )
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class ReplicaOverlap(LogError):
    """A follower was given a batch that starts below its log end and ends above it: the
    replica's batches do not line up with the leader's."""

    def __init__(self, first_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"the batch at offset {first_offset} straddles the log end {log_end_offset}"
        )
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset
