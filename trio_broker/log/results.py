"""What the partition log returns: results of appends and reads.

Owns: ``AppendInfo`` and ``ReadInfo``, plain frozen values the handlers turn into produce
and fetch responses. It must not do I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trio_broker.protocol.primitives import FileRegion


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    # -1 for CreateTime logs, the broker's clock for LogAppendTime logs.
    log_append_time_ms: int
    log_start_offset: int
    record_count: int
    size_bytes: int
    max_timestamp: int
    offset_of_max_timestamp: int
    rolled: bool = False
    # A retried idempotent batch: nothing was written, the offsets are the first write's.
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class ReadInfo:
    """Whole batches as file regions. The caller must ``release()`` every region."""

    regions: list[FileRegion] = field(default_factory=list)
    size_bytes: int = 0
    # The offset a follow-up fetch should ask for (== fetch offset when nothing was read).
    next_fetch_offset: int = 0
    high_watermark: int = 0
    last_stable_offset: int = 0
    log_start_offset: int = 0
    log_end_offset: int = 0
    # A read_committed read: (producer id, first offset) of the aborted transactions
    # overlapping what was read (None for other reads).
    aborted_transactions: list[tuple[int, int]] | None = None

    def release(self) -> None:
        for region in self.regions:
            region.release()
