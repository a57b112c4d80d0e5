"""Loading a partition folder at start-up, with or without recovery.

Owns: turning the files of ``<topic>-<partition>/`` into an ordered list of segments and
the log's start offset and recovery point. A cleaning pass a crash interrupted is first
finished or undone (``swap.complete_swaps``); leftover temporary files are removed. After a
clean shutdown the files are trusted: index files are sanity-checked (rebuilt from the log
when missing or insane), a rolled segment's state comes from its indexes and only the tail
of the active segment is walked. Otherwise every segment
that may hold offsets at or after the checkpointed recovery point is scanned batch by batch
with its CRC-32C; the first torn or corrupt batch is cut off with everything after it
(later segments included) and the scanned segments' indexes are rebuilt. It must not serve
reads or take appends.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import CHECKPOINT_FILE, PartitionCheckpoint, read_checkpoint
from .config import LogConfig
from .files import TMP_SUFFIX
from .open_files import OpenFiles
from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, LogSegment
from .swap import complete_swaps

logger = logging.getLogger(__name__)

_LEFTOVER_SUFFIXES = (TMP_SUFFIX, ".deleted")


@dataclass(slots=True)
class LoadStats:
    """What loading did: the proof that a clean start-up skipped the scan."""

    recovery: bool = False
    segments: int = 0
    segments_scanned: int = 0
    batches_scanned: int = 0
    bytes_truncated: int = 0
    indexes_rebuilt: int = 0
    segments_deleted: int = 0
    swaps_completed: int = 0


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    stats: LoadStats
    # The folder's file names after loading when loading neither made nor removed a file
    # (the rest of the log's loading reads them instead of listing the folder again);
    # None when it did (list again). ``changed``: whether the folder needs an fsync.
    names: frozenset[str] | None
    changed: bool
    # ``partition.checkpoint`` as read here (None: missing or unreadable), or not read.
    own_checkpoint: PartitionCheckpoint | None
    own_checkpoint_read: bool


def _parse_base(name: str, suffix: str) -> int | None:
    stem = name[: -len(suffix)]
    if len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


def _list(directory: Path) -> list[str]:
    """The folder's names (the folder is made if missing: a new log)."""
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        directory.mkdir(parents=True, exist_ok=True)
        return []


def _scan_folder(directory: Path, names: list[str]) -> tuple[list[int], list[str]]:
    """The segments' base offsets, and the leftover files removed (taken out of
    ``names``): temporary files and indexes without their log."""
    bases: set[int] = set()
    index_files: list[tuple[int, str]] = []
    removed: list[str] = []
    for name in names:
        if name.endswith(_LEFTOVER_SUFFIXES):
            removed.append(name)
        elif name.endswith(LOG_SUFFIX):
            base = _parse_base(name, LOG_SUFFIX)
            if base is not None:
                bases.add(base)
        elif name.endswith(INDEX_SUFFIX):
            base = _parse_base(name, INDEX_SUFFIX)
            if base is not None:
                index_files.append((base, name))
        elif name.endswith(TIME_INDEX_SUFFIX):
            base = _parse_base(name, TIME_INDEX_SUFFIX)
            if base is not None:
                index_files.append((base, name))
    removed += [name for base, name in index_files if base not in bases]
    for name in removed:
        (directory / name).unlink(missing_ok=True)
        names.remove(name)
    return sorted(bases), removed


def load_segments(
    directory: Path,
    config: LogConfig,
    *,
    recover: bool,
    now_ms: int,
    checkpoint: PartitionCheckpoint | None = None,
    files: OpenFiles | None = None,
) -> LoadedLog:
    """``checkpoint``: the log dir's clean-shutdown checkpoint of this partition (else the
    partition's own ``partition.checkpoint`` is read). ``files``: the LRU the segments'
    descriptors are in (None: held open)."""
    names = _list(directory)
    listed = len(names)
    stats = LoadStats(recovery=recover)
    stats.swaps_completed = complete_swaps(directory, names)
    if stats.swaps_completed:
        names = os.listdir(directory)
    bases, removed = _scan_folder(directory, names)
    own_read = checkpoint is None
    own: PartitionCheckpoint | None = None
    if own_read and CHECKPOINT_FILE in names:
        own = read_checkpoint(directory)
    if checkpoint is None:
        checkpoint = own
    recovery_point = checkpoint.recovery_point if checkpoint else 0
    log_start = checkpoint.log_start_offset if checkpoint else 0
    segments: list[LogSegment] = []
    rebuilt: set[int] = set()
    created = False
    name_set = frozenset(names)
    try:
        for i, base in enumerate(bases):
            seg, sane = LogSegment.open_existing(directory, base, config, now_ms, files, name_set)
            segments.append(seg)
            stats.segments += 1
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            must_scan = recover and (next_base is None or next_base > recovery_point)
            sound = True
            if must_scan:
                sound = _rebuild(seg, stats, verify_crc=True)
                rebuilt.add(base)
            elif not sane:
                stats.indexes_rebuilt += 1
                rebuilt.add(base)
                if not _rebuild(seg, stats, verify_crc=False):
                    sound = _rebuild(seg, stats, verify_crc=True)
            elif not (seg.load_sealed(next_base) if next_base is not None else seg.load_tail()):
                logger.warning("%s: malformed tail after a clean shutdown", seg.log_path)
                rebuilt.add(base)
                sound = _rebuild(seg, stats, verify_crc=True)
            if not sound:
                for later in bases[i + 1 :]:
                    for path in LogSegment.paths(directory, later):
                        path.unlink(missing_ok=True)
                    stats.segments_deleted += 1
                break
        # Segments wholly below the log start offset were deleted logically already.
        while len(segments) > 1 and segments[1].base_offset <= log_start:
            segments.pop(0).delete()
            stats.segments_deleted += 1
        for seg in segments[:-1]:
            if seg.base_offset in rebuilt:
                seg.seal()
        if not segments:
            segments.append(LogSegment.create(directory, log_start, config, now_ms, files=files))
            created = True
        log_end = segments[-1].next_offset
        if log_start > log_end:
            # The tail that held the log start offset was lost: start afresh there.
            for seg in segments:
                seg.delete()
                stats.segments_deleted += 1
            segments = [LogSegment.create(directory, log_start, config, now_ms, files=files)]
            created = True
            log_end = log_start
        log_start = max(log_start, segments[0].base_offset)
        if rebuilt or not recover:
            for seg in segments:
                seg.flush()
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    if stats.bytes_truncated:
        logger.warning(
            "%s: recovery cut %d bytes; log end offset is now %d",
            directory,
            stats.bytes_truncated,
            log_end,
        )
    # (A recovery syncs the folder whatever it did: what the crash left becomes durable.)
    changed = bool(
        recover
        or created
        or rebuilt
        or removed
        or stats.segments_deleted
        or stats.swaps_completed
        or len(names) != listed
    )
    return LoadedLog(
        segments,
        log_start,
        log_end,
        stats,
        None if changed else name_set,
        changed,
        own,
        own_read,
    )


def _rebuild(seg: LogSegment, stats: LoadStats, *, verify_crc: bool) -> bool:
    sound, cut, batches = seg.rebuild(verify_crc=verify_crc, min_offset=seg.base_offset)
    stats.batches_scanned += batches
    if verify_crc:
        stats.segments_scanned += 1
        stats.bytes_truncated += cut
    return sound
