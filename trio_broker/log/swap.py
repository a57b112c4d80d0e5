"""The files of the segments the cleaner replaces, and finishing a replacement after a crash.

Owns: the stages of Kafka's swap protocol for a group of consecutive segments
``<base> .. <last>`` replaced by one cleaned segment at ``<base>`` (a group of one is the
same protocol). The cleaner writes the cleaned copy as ``<base>.log.cleaned`` (with
``.index.cleaned`` and ``.timeindex.cleaned``) and fsyncs it; the log writes the group's
aborted transactions as ``.txnindex.cleaned`` (``write_cleaned_txn_index``);
``commit_cleaned`` renames them to ``.swap``, the log file last, so ``<base>.log.swap``
existing is the point of no return; ``remove_replaced`` deletes the group's other segments
(their records that stay are in the swap); ``install_swap`` renames each ``.swap`` over
its live file (indexes first, log last).

``complete_swaps``, run by the loader before anything else, makes every crash point whole:
``.cleaned`` files are deleted (the originals are intact); for a ``.log.swap`` the live
segments above its base that start below the swap's next offset (the end of its last
batch) are deleted, as Kafka's loader deletes the segments a swap covers, then the swap is
installed (an index swap already gone was installed before the crash: ``commit_cleaned``
renames the log last, so its index swaps all existed); index swaps without their log swap
(a crash inside ``commit_cleaned``) are deleted. A segment of the group that starts at or
after the swap's next offset had all its records removed: left in place, it is a segment
of superseded records the next pass removes again, never a loss nor an overlap. Renames
and deletions go through ``_rename`` and ``_unlink`` (one step each, which the crash tests
interrupt) and the folder is fsynced after each stage. It must not decide what is cleaned
nor touch a live segment's in-memory state.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .files import fsync_dir, write_synced
from .index.transactions import TXN_INDEX_SUFFIX, AbortedTxn, txn_index_path
from .scan import BatchScanner
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def _rename(source: Path, target: Path) -> None:
    os.replace(source, target)


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _files(directory: Path, base_offset: int, suffix: str = "") -> tuple[Path, ...]:
    """Index files first, the log last: the order of every stage."""
    log, index, time_index = LogSegment.paths(directory, base_offset, suffix)
    txn = txn_index_path(directory, base_offset)
    return index, time_index, txn.with_name(txn.name + suffix), log


def discard_cleaned(directory: Path, base_offset: int) -> None:
    """Remove a cleaned copy that will not be swapped in."""
    for path in _files(directory, base_offset, CLEANED_SUFFIX):
        _unlink(path)


def write_cleaned_txn_index(
    directory: Path, base_offset: int, entries: Iterable[AbortedTxn]
) -> None:
    """The cleaned segment's aborted transaction index (none when ``entries`` is empty)."""
    path = _files(directory, base_offset, CLEANED_SUFFIX)[2]
    data = b"".join(e.pack() for e in entries)
    if not data:
        _unlink(path)
        return
    write_synced(path, data)


def commit_cleaned(directory: Path, base_offset: int) -> None:
    """``.cleaned`` -> ``.swap``: from here on the cleaned copy replaces the group."""
    *indexes, log = _files(directory, base_offset, CLEANED_SUFFIX)
    for path in (*(p for p in indexes if p.exists()), log):
        _rename(path, path.with_name(path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX))
    fsync_dir(directory)


def remove_replaced(directory: Path, base_offsets: Iterable[int]) -> None:
    """Delete the files of the group's segments after the first (once committed)."""
    for base in base_offsets:
        for path in _files(directory, base):
            _unlink(path)
    fsync_dir(directory)


def install_swap(directory: Path, base_offset: int) -> None:
    """Put every ``.swap`` file of the segment in place of its live file."""
    live = _files(directory, base_offset)
    swaps = _files(directory, base_offset, SWAP_SUFFIX)
    # An index swap already gone was installed before a crash: the live one is new.
    for swap, target in zip(swaps, live, strict=True):
        if swap.exists():
            _rename(swap, target)
    fsync_dir(directory)


def swap_end(directory: Path, base_offset: int) -> int:
    """The offset after the last batch of ``<base>.log.swap`` (its base when it is empty)."""
    path = LogSegment.paths(directory, base_offset, SWAP_SUFFIX)[0]
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        scanner = BatchScanner(
            fd,
            start=0,
            end=os.fstat(fd).st_size,
            segment_base_offset=base_offset,
            min_offset=base_offset,
            verify_crc=False,
        )
        end = base_offset
        for _, header in scanner:
            end = header.next_offset
        return end
    finally:
        os.close(fd)


def _base_of(name: str, suffix: str) -> int | None:
    stem = name[: -len(suffix)]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def complete_swaps(directory: Path, names: list[str] | None = None) -> int:
    """Finish or undo what a crash left of cleaning passes; returns segments installed.
    ``names``: the folder's listing if the caller has it (else it is listed here); the
    files this removes are taken out of it (after an installation it is stale: list
    again)."""
    installed = 0
    if names is None:
        names = os.listdir(directory)
    log_swaps = {n for n in names if n.endswith(LOG_SUFFIX + SWAP_SUFFIX)}
    removed: list[str] = []
    for name in names:
        if name.endswith(CLEANED_SUFFIX):
            _unlink(directory / name)
            removed.append(name)
        elif name.endswith(SWAP_SUFFIX) and name not in log_swaps:
            stem = name[: -len(SWAP_SUFFIX)]
            for suffix in _INDEX_SUFFIXES:
                if stem.endswith(suffix):
                    stem_base = stem[: -len(suffix)]
                    if stem_base + LOG_SUFFIX + SWAP_SUFFIX not in log_swaps:
                        _unlink(directory / name)
                        removed.append(name)
    for name in removed:
        names.remove(name)
    changed = bool(removed)
    if not log_swaps:  # the common case: no pass was cut short
        if changed:
            fsync_dir(directory)
        return 0
    live = sorted(
        base
        for n in names
        if n.endswith(LOG_SUFFIX) and (base := _base_of(n, LOG_SUFFIX)) is not None
    )
    for name in sorted(log_swaps):
        base = _base_of(name, LOG_SUFFIX + SWAP_SUFFIX)
        if base is None:
            continue
        end = swap_end(directory, base)
        remove_replaced(directory, [b for b in live if base < b < end])
        install_swap(directory, base)
        installed += 1
    if names:
        fsync_dir(directory)
    return installed
