"""Per-partition log settings, named after Kafka's topic configs.

Owns: ``LogConfig``, an immutable value the log reads on every decision (roll, index,
flush, retention, timestamps). It must not parse broker property files or hold topic
metadata: the server builds configs and hands them over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trio_broker.records.header import HEADER_SIZE

DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30  # segment.bytes
    segment_ms: int = 7 * DAY_MS  # segment.ms
    retention_bytes: int = -1  # retention.bytes (-1: no size limit)
    retention_ms: int = 7 * DAY_MS  # retention.ms (-1: keep forever)
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    flush_interval_messages: int = 2**63 - 1  # flush.messages
    flush_interval_ms: int | None = None  # flush.ms (None: never by time)
    max_message_bytes: int = 1048588  # max.message.bytes
    message_timestamp_type: Literal["CreateTime", "LogAppendTime"] = (
        "CreateTime"  # message.timestamp.type
    )
    # compression.type: "producer" keeps each batch as sent; a codec name ("uncompressed",
    # "gzip", "snappy", "lz4", "zstd") is what stored batches are recompressed into.
    compression_type: str = "producer"
    compression_level: int | None = None  # compression.<codec>.level (None: the default)

    def __post_init__(self) -> None:
        if self.segment_bytes < HEADER_SIZE:
            raise ValueError(f"segment_bytes must be at least {HEADER_SIZE}")
        if self.segment_ms <= 0:
            raise ValueError("segment_ms must be positive")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must not be negative")
        if self.segment_index_bytes < 12:
            raise ValueError("segment_index_bytes must hold at least one entry")
        if self.flush_interval_messages < 1:
            raise ValueError("flush_interval_messages must be at least 1")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise ValueError("flush_interval_ms must not be negative")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"unknown message_timestamp_type {self.message_timestamp_type!r}")
