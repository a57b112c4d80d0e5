"""The per-partition checkpoints: recovery point, log start offset and high watermark; and
the cleaner's first dirty offset.

Owns: the ``partition.checkpoint`` file in a partition folder, written as the numbers
change while the broker runs (truncation, segment removal, the periodic checkpoints) and
read when a start must recover. Kafka keeps these numbers in per-log-dir files only; here
those (``dir_checkpoints``) are what a clean shutdown writes, and this file keeps a partition
log self-contained in between. The recovery point only ever understates what was fsynced
(it is written after a flush, never before), so recovery may scan more than needed, never
less; the high watermark is clamped to the log end on load. A missing or unreadable file
reads as None (scan everything); a version 0 file (no high watermark) reads with ``high_watermark``
None. Also owns ``cleaner-offset-checkpoint`` (the offset the last cleaning pass reached,
Kafka's per-partition entry), which the cleaner moves forward and truncation clamps. It
must not decide when to write.

Format (text)::

    1                      <- version (0: the first two lines only)
    recovery_point <n>
    log_start_offset <n>
    high_watermark <n>
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .files import atomic_write, read_small

CHECKPOINT_FILE = "partition.checkpoint"
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
_VERSION = "1"
_READABLE = ("0", "1")


@dataclass(frozen=True, slots=True)
class PartitionCheckpoint:
    recovery_point: int
    log_start_offset: int
    # None: not known (a version 0 file).
    high_watermark: int | None = None


def read_checkpoint(directory: Path) -> PartitionCheckpoint | None:
    try:
        lines = read_small(os.path.join(directory, CHECKPOINT_FILE)).decode().split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not lines or lines[0] not in _READABLE:
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
        return PartitionCheckpoint(
            values["recovery_point"], values["log_start_offset"], values.get("high_watermark")
        )
    except KeyError:
        return None


def write_checkpoint(directory: Path, checkpoint: PartitionCheckpoint) -> None:
    text = (
        f"{_VERSION}\n"
        f"recovery_point {checkpoint.recovery_point}\n"
        f"log_start_offset {checkpoint.log_start_offset}\n"
    )
    if checkpoint.high_watermark is not None:
        text += f"high_watermark {checkpoint.high_watermark}\n"
    atomic_write(directory / CHECKPOINT_FILE, text.encode())


def read_first_dirty(directory: Path) -> int | None:
    """The offset the last cleaning pass cleaned up to, None if the log was never cleaned."""
    try:
        return int((directory / CLEANER_CHECKPOINT_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def write_first_dirty(directory: Path, offset: int) -> None:
    atomic_write(directory / CLEANER_CHECKPOINT_FILE, f"{offset}\n".encode())
