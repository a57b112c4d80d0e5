"""The log dir's checkpoint files of a clean shutdown: one file per number, all partitions.

Owns: Kafka's per-log-dir ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``replication-offset-checkpoint`` files, in Kafka's
``OffsetCheckpointFile`` text format (a version line ``0``, a count line, then one
``<topic> <partition> <offset>`` line a partition), and reading the three back into each
partition's ``PartitionCheckpoint``. A clean shutdown writes them once per dir (each
atomically, fsynced) before the clean-shutdown marker, instead of one
``partition.checkpoint`` per partition; a start-up reads them only when the marker is
there. A missing, malformed or disagreeing set reads as None (the caller falls back to the
partitions' own files). It must not decide when they are written or trusted: the log
manager does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .checkpoint import PartitionCheckpoint
from .files import atomic_write

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
DIR_CHECKPOINT_FILES = (RECOVERY_POINT_FILE, LOG_START_FILE, HIGH_WATERMARK_FILE)
_VERSION = "0"

TopicPartition = tuple[str, int]


def _format(offsets: Mapping[TopicPartition, int]) -> bytes:
    lines = [_VERSION, str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    return ("\n".join(lines) + "\n").encode()


def _parse(path: Path) -> dict[TopicPartition, int] | None:
    try:
        lines = path.read_text().split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if len(lines) < 2 or lines[0] != _VERSION or not lines[1].isdigit():
        return None
    count = int(lines[1])
    body = [line for line in lines[2:] if line]
    if len(body) != count:
        return None  # torn or hand-edited: not trusted
    out: dict[TopicPartition, int] = {}
    for line in body:
        parts = line.split(" ")
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            return None
    return out


def write_dir_checkpoints(
    log_dir: Path, entries: Mapping[TopicPartition, PartitionCheckpoint]
) -> None:
    """Write the three files of ``log_dir`` (each replaced atomically, fsynced)."""
    ordered = dict(sorted(entries.items()))
    atomic_write(
        log_dir / RECOVERY_POINT_FILE, _format({tp: c.recovery_point for tp, c in ordered.items()})
    )
    atomic_write(
        log_dir / LOG_START_FILE, _format({tp: c.log_start_offset for tp, c in ordered.items()})
    )
    marks = {tp: c.high_watermark for tp, c in ordered.items() if c.high_watermark is not None}
    atomic_write(log_dir / HIGH_WATERMARK_FILE, _format(marks))


def read_dir_checkpoints(log_dir: Path) -> dict[TopicPartition, PartitionCheckpoint] | None:
    """Each partition's checkpoint from the three files; None unless all three read and
    name the same partitions."""
    recovery = _parse(log_dir / RECOVERY_POINT_FILE)
    start = _parse(log_dir / LOG_START_FILE)
    marks = _parse(log_dir / HIGH_WATERMARK_FILE)
    if recovery is None or start is None or marks is None or recovery.keys() != start.keys():
        return None
    return {
        tp: PartitionCheckpoint(point, start[tp], marks.get(tp)) for tp, point in recovery.items()
    }
