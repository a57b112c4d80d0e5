"""Which old segments retention deletes (Kafka's time, size and log-start rules).

Owns: ``segments_to_delete``: how many of the oldest segments go, never the active one.
By ``retention.ms`` (a segment's largest timestamp older than that) and
``retention.bytes`` (the log larger than that) only when ``cleanup.policy`` has
``delete``; always those wholly below the log start offset (DeleteRecords). Pure: the
partition log deletes, holding its lock.
"""

from __future__ import annotations

from collections.abc import Sequence

from .config import LogConfig
from .segment import LogSegment


def segments_to_delete(
    segments: Sequence[LogSegment], config: LogConfig, now_ms: int, log_start: int
) -> int:
    last = len(segments) - 1
    by_time = by_size = 0
    if config.delete and config.retention_ms >= 0:
        while by_time < last and now_ms - segments[by_time].largest_timestamp > config.retention_ms:
            by_time += 1
    if config.delete and config.retention_bytes >= 0:
        excess = sum(s.size for s in segments) - config.retention_bytes
        while by_size < last and excess - segments[by_size].size >= 0:
            excess -= segments[by_size].size
            by_size += 1
    by_start = 0
    while by_start < last and segments[by_start + 1].base_offset <= log_start:
        by_start += 1
    return max(by_time, by_size, by_start)
