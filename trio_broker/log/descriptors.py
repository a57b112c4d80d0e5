"""The file descriptors the partition logs hold, against the process's open files limit.

Owns: how many descriptors a log holds as it opens them (``FILES_PER_SEGMENT``: an open
segment holds its ``.log``, ``.index`` and ``.timeindex``: every segment for as long as it
exists, or, with ``log.open.files.max`` (the ``bound``, ``open_files``' LRU), only the
recently used ones, at most the bound together; the ``.txnindex``, checkpoints, snapshots
and the cleaner's copies are opened only while they are written), the soft ``RLIMIT_NOFILE``
(``ulimit -n``), the headroom kept for everything else (``headroom``: client and replica
connections, listeners, the event loop's own descriptors, files opened for a moment,
segments that roll later: a tenth of the limit, at least ``MIN_HEADROOM``), ``FileBudget``
(how many descriptors new logs may still take) and ``segments_on_disk`` (what loading the
log directories will open, counted before any is opened; not needed when the bound fits in
the limit, ``bound_fits``). ``DescriptorLimitError`` is the start-up refusal, one line
naming the limit and the count. It must not open a log nor decide what is refused: the log
manager and the topic creation path do.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

FILES_PER_SEGMENT = 3
MIN_HEADROOM = 128
_UNLIMITED = 1 << 30


class DescriptorLimitError(OSError):
    """The logs need more descriptors than the open files limit allows (one line)."""


def open_files_limit() -> int:
    """The soft ``RLIMIT_NOFILE`` of this process (a very large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _UNLIMITED if soft == resource.RLIM_INFINITY else int(soft)


def headroom(limit: int) -> int:
    """The descriptors kept for what is not a log: a tenth of the limit, at least 128."""
    return max(MIN_HEADROOM, limit // 10)


def logs_will_hold(need: int, bound: int | None) -> int:
    """What segments needing ``need`` descriptors hold at most under ``bound``."""
    return need if bound is None else min(need, bound)


@dataclass(frozen=True, slots=True)
class FileBudget:
    """The logs' descriptors against the limit: ``held`` by the logs now, at most
    ``bound`` (None: no bound, every segment holds its files)."""

    limit: int
    held: int
    bound: int | None = None

    @property
    def headroom(self) -> int:
        return headroom(self.limit)

    @property
    def free(self) -> int:
        """Descriptors new logs may still take (past the bound they close older
        segments' files instead of taking more)."""
        return max(0, self.limit - self.headroom - self.held)

    def refusal(self, new_logs: int) -> str | None:
        """Why ``new_logs`` new partition logs (one segment each) do not fit; None if they
        do. The message names the limit and the counts. Under a bound the logs never hold
        more than the bound, so only a bound above what the limit allows can refuse."""
        need = new_logs * FILES_PER_SEGMENT
        total = logs_will_hold(self.held + need, self.bound)
        if total <= self.limit - self.headroom:
            return None
        bound = "" if self.bound is None else f" (log.open.files.max is {self.bound})"
        return (
            f"{new_logs} new partition logs need {need} file descriptors "
            f"({FILES_PER_SEGMENT} each) and only {self.free} are free: the open files "
            f"limit (RLIMIT_NOFILE) is {self.limit}, the logs hold {self.held}{bound} and "
            f"{self.headroom} are kept for connections and the broker's own files"
        )


def log_segments(directory: Path) -> int:
    """The segments of one partition folder (its ``<20 digits>.log`` files)."""
    count = 0
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if name.endswith(".log") and len(name) == 24 and name[:20].isdigit():
                count += 1
    return max(1, count)  # an empty folder gets its first segment when it is loaded


def segments_on_disk(folders: Iterable[Path]) -> tuple[int, int]:
    """(partition folders, segments) that loading ``folders`` will open."""
    partitions = segments = 0
    for folder in folders:
        partitions += 1
        segments += log_segments(folder)
    return partitions, segments


def bound_fits(bound: int | None, limit: int | None = None) -> bool:
    """Whether logs held to ``bound`` fit in the limit whatever their number (then
    start-up has nothing to count)."""
    limit = open_files_limit() if limit is None else limit
    return bound is not None and bound + headroom(limit) <= limit


def check_start(
    partitions: int, segments: int, limit: int | None = None, *, bound: int | None = None
) -> None:
    """Raise ``DescriptorLimitError`` when loading these logs would pass the limit (with a
    ``bound``, what they hold is at most the bound)."""
    limit = open_files_limit() if limit is None else limit
    need = segments * FILES_PER_SEGMENT
    held = logs_will_hold(need, bound)
    spare = headroom(limit)
    if held + spare > limit:
        what = (
            f"which need {need} file descriptors ({FILES_PER_SEGMENT} each)"
            if held == need
            else f"of which log.open.files.max={bound} keeps {held} file descriptors open"
        )
        raise DescriptorLimitError(
            f"the open files limit (RLIMIT_NOFILE) is {limit}, but the {partitions} partition "
            f"logs in log.dirs hold {segments} segments, {what}, and {spare} are kept for "
            f"connections and the broker's own files: raise it (ulimit -n) to at least "
            f"{held + spare}" + ("" if held == need else " or lower log.open.files.max")
        )
