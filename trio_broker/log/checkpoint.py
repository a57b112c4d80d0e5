"""The per-partition checkpoint: recovery point and log start offset.

Owns: the ``partition.checkpoint`` file in a partition folder. Kafka keeps these two
numbers in per-log-dir files (``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``); keeping them beside the segments makes a partition log
self-contained. The recovery point only ever understates what was fsynced (it is written
after a flush, never before), so recovery may scan more than needed, never less. A missing
or unreadable file reads as None (scan everything). It must not decide when to write.

Format (text)::

    0                      <- version
    recovery_point <n>
    log_start_offset <n>
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .files import atomic_write

CHECKPOINT_FILE = "partition.checkpoint"
_VERSION = "0"


@dataclass(frozen=True, slots=True)
class PartitionCheckpoint:
    recovery_point: int
    log_start_offset: int


def read_checkpoint(directory: Path) -> PartitionCheckpoint | None:
    try:
        lines = (directory / CHECKPOINT_FILE).read_text().split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not lines or lines[0] != _VERSION:
        return None
    values: dict[str, int] = {}
    for line in lines[1:]:
        if not line:
            continue
        key, _, value = line.partition(" ")
        try:
            values[key] = int(value)
        except ValueError:
            return None
    try:
        return PartitionCheckpoint(values["recovery_point"], values["log_start_offset"])
    except KeyError:
        return None


def write_checkpoint(directory: Path, checkpoint: PartitionCheckpoint) -> None:
    text = (
        f"{_VERSION}\n"
        f"recovery_point {checkpoint.recovery_point}\n"
        f"log_start_offset {checkpoint.log_start_offset}\n"
    )
    atomic_write(directory / CHECKPOINT_FILE, text.encode())
