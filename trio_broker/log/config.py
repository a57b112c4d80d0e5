"""Per-partition log settings, named after Kafka's topic configs.

Owns: ``LogConfig``, an immutable value the log reads on every decision (roll, index,
flush, retention, timestamps, compaction). It must not parse broker property files or hold topic
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
    cleanup_policy: tuple[str, ...] = ("delete",)  # cleanup.policy: delete and/or compact
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = 2**63 - 1  # max.compaction.lag.ms
    delete_retention_ms: int = DAY_MS  # delete.retention.ms (tombstones' grace)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def roll_ms(self) -> int:
        """Kafka's ``maxSegmentMs``: a compacted log also rolls by ``max.compaction.lag.ms``,
        so a dirty active segment becomes cleanable in time."""
        return min(self.segment_ms, self.max_compaction_lag_ms) if self.compact else self.segment_ms

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
        if not set(self.cleanup_policy) <= {"delete", "compact"}:
            raise ValueError(f"unknown cleanup_policy {self.cleanup_policy!r}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min_cleanable_dirty_ratio must be within [0, 1]")
        if self.min_compaction_lag_ms < 0 or self.max_compaction_lag_ms < 1:
            raise ValueError("compaction lags must be positive")
