"""The files of a segment the cleaner replaces, and finishing a replacement after a crash.

Owns: the stages of Kafka's swap protocol for one segment ``<base>``. The cleaner writes
the cleaned copy as ``<base>.log.cleaned`` (with ``.index.cleaned`` and
``.timeindex.cleaned``) and fsyncs it; ``commit_cleaned`` renames the three to ``.swap``,
the log file last, so ``<base>.log.swap`` existing is the point of no return;
``install_swap`` renames each ``.swap`` over its live file (indexes first, log last).
``complete_swaps``, run by the loader before anything else, makes every crash point
whole: ``.cleaned`` files are deleted (the originals are intact), a ``.log.swap`` is
installed (an index swap already gone was installed before the crash: ``commit_cleaned``
renames the log last, so its index swaps all existed), and index swaps without their log
swap (a crash inside ``commit_cleaned``) are deleted. Renames are atomic and the folder
is fsynced after each stage. It must not decide what is cleaned nor touch a live
segment's in-memory state.
"""

from __future__ import annotations

import os
from pathlib import Path

from .files import fsync_dir
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


def discard_cleaned(directory: Path, base_offset: int) -> None:
    """Remove a cleaned copy that will not be swapped in."""
    for path in LogSegment.paths(directory, base_offset, CLEANED_SUFFIX):
        path.unlink(missing_ok=True)


def commit_cleaned(directory: Path, base_offset: int) -> None:
    """``.cleaned`` -> ``.swap``: from here on the cleaned copy replaces the segment."""
    log, index, time_index = LogSegment.paths(directory, base_offset, CLEANED_SUFFIX)
    for path in (index, time_index, log):
        os.replace(path, path.with_name(path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX))
    fsync_dir(directory)


def install_swap(directory: Path, base_offset: int) -> None:
    """Put every ``.swap`` file of the segment in place of its live file."""
    live = LogSegment.paths(directory, base_offset)
    swaps = LogSegment.paths(directory, base_offset, SWAP_SUFFIX)
    log_swap = swaps[0]
    # An index swap already gone was installed before a crash: the live one is new.
    for swap, target in zip(swaps[1:], live[1:], strict=True):
        if swap.exists():
            os.replace(swap, target)
    if log_swap.exists():
        os.replace(log_swap, live[0])
    fsync_dir(directory)


def complete_swaps(directory: Path) -> int:
    """Finish or undo what a crash left of cleaning passes; returns segments installed."""
    installed = 0
    names = os.listdir(directory)
    log_swaps = {n for n in names if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)}
    for name in names:
        path = directory / name
        if name.endswith(CLEANED_SUFFIX):
            path.unlink(missing_ok=True)
        elif name.endswith(SWAP_SUFFIX) and name not in log_swaps:
            stem = name[: -len(SWAP_SUFFIX)]
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                if stem.endswith(suffix):
                    base = stem[: -len(suffix)]
                    if base + LOG_SUFFIX + SWAP_SUFFIX not in log_swaps:
                        path.unlink(missing_ok=True)
    for name in sorted(log_swaps):
        base_name = name[: -len(LOG_SUFFIX + SWAP_SUFFIX)]
        if len(base_name) != 20 or not base_name.isdigit():
            continue
        install_swap(directory, int(base_name))
        installed += 1
    if names:
        fsync_dir(directory)
    return installed
