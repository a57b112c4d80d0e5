"""Each replica's log, read from the broker's own files after the run.

Owns: ``replica_log`` (one partition's records in one broker's log directory, offset ->
value, in Kafka's on-disk format) and ``replica_logs`` (every broker's copy of every
partition of a topic). The files are decoded by kafka-python's record reader, a decoder
independent of the broker's, so a broker bug in writing and reading its own format cannot
hide a difference. Transaction markers (control batches) are skipped. Read only after the
brokers stopped: a live broker may be writing. It must not know about clients or faults.
"""

from __future__ import annotations

from pathlib import Path

from kafka.record import MemoryRecords


def replica_log(log_dir: Path, topic: str, partition: int) -> dict[int, int] | None:
    """``{offset: value}`` of the partition's copy under ``log_dir``; None if it has none."""
    folder = log_dir / f"{topic}-{partition}"
    if not folder.is_dir():
        return None
    records: dict[int, int] = {}
    for segment in sorted(folder.glob("*.log")):
        batches = MemoryRecords(segment.read_bytes())
        while (batch := batches.next_batch()) is not None:
            if batch.is_control_batch:
                continue
            for record in batch:
                if record.value is not None:
                    records[record.offset] = int(record.value)
    return records


def replica_logs(
    log_dirs: dict[int, Path], topic: str, partitions: int
) -> dict[int, dict[int, dict[int, int]]]:
    """partition -> broker id -> that broker's copy (brokers without one left out)."""
    out: dict[int, dict[int, dict[int, int]]] = {}
    for p in range(partitions):
        for broker, log_dir in log_dirs.items():
            copy = replica_log(log_dir, topic, p)
            if copy is not None:
                out.setdefault(p, {})[broker] = copy
    return out
