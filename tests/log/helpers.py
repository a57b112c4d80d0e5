"""Helpers for the log tests: building appends and reading regions back."""

from __future__ import annotations

import os
from pathlib import Path

from trio_broker.log import LogConfig, PartitionLog, ReadInfo
from trio_broker.records import (
    BatchHeader,
    Record,
    ValidatedRecords,
    build_batch,
    iter_batches,
    validate_batches,
)


def records(
    n: int = 1, *, ts: int | list[int] = 1_000, value: bytes = b"v", key: bytes = b"k"
) -> ValidatedRecords:
    stamps = ts if isinstance(ts, list) else [ts] * n
    batch = build_batch([Record(key, value + b"%d" % i, (), t) for i, t in enumerate(stamps)])
    return validate_batches(memoryview(batch), max_batch_bytes=1 << 24)


def open_log(
    directory: Path, *, recover: bool = False, now_ms: int = 0, **config: object
) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(**config), recover=recover, now_ms=now_ms)  # type: ignore[arg-type]


def region_bytes(info: ReadInfo) -> bytes:
    out = []
    for r in info.regions:
        out.append(os.pread(r.file.fileno(), r.length, r.offset))
    return b"".join(out)


def read_headers(
    log: PartitionLog, offset: int | None = None, max_bytes: int = 1 << 30
) -> list[BatchHeader]:
    """Every batch from ``offset`` (default: log start), read through regions."""
    info = log.read(log.log_start_offset if offset is None else offset, max_bytes)
    try:
        data = region_bytes(info)
    finally:
        info.release()
    return [h for h, _ in iter_batches(data)]


def fill(
    log: PartitionLog,
    batches: int,
    *,
    per_batch: int = 1,
    now_ms: int = 0,
    ts: int = 1_000,
    value: bytes = b"v",
) -> None:
    for _ in range(batches):
        log.append(records(per_batch, ts=ts, value=value), leader_epoch=0, now_ms=now_ms)
