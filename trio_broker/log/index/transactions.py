"""The aborted transaction index: ``<base>.txnindex`` beside each segment, Kafka's format.

Owns: ``AbortedTxn`` (one entry: version int16 0, producer id int64, first offset int64,
last offset int64, last stable offset int64; 34 bytes, big-endian) and ``TxnIndexes``,
every segment's entries of one partition in memory and on disk. An entry is written to the
index of the segment that holds its abort marker (its last offset) when the marker is
appended; the file exists only once it has an entry. Entries go with their segment
(``LogSegment.delete`` unlinks the file), and ``truncate_from`` drops those whose marker
is at or past an offset (a truncation, or a recovery that replays the log from a producer
snapshot and writes them again). ``collect`` answers a read_committed fetch: the aborted
transactions overlapping an offset range. Blocking file I/O; callers hold the log's lock
for changes; the published entries are an immutable tuple. No trio.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..files import atomic_write, fsync_dir

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset
    last_stable_offset: int  # the partition's after the abort

    def pack(self) -> bytes:
        return ENTRY.pack(
            VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset
        )

    @classmethod
    def unpack(cls, data: bytes | memoryview, position: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = ENTRY.unpack_from(data, position)
        if version != VERSION:
            raise ValueError(f"transaction index entry version {version}")
        return cls(pid, first, last, lso)


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


def read_entries(path: Path) -> list[AbortedTxn]:
    """The sound entries of one index file (a torn or damaged tail is left out)."""
    data = path.read_bytes()
    out: list[AbortedTxn] = []
    for position in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        try:
            out.append(AbortedTxn.unpack(data, position))
        except ValueError:
            break
    return out


def write_entries(path: Path, entries: Iterable[AbortedTxn]) -> None:
    """Replace the file with ``entries`` (removed when there are none), durably."""
    data = b"".join(e.pack() for e in entries)
    if not data:
        path.unlink(missing_ok=True)
        return
    atomic_write(path, data)


class TxnIndexes:
    """The aborted transaction indexes of one partition's segments."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._by_segment: dict[int, list[AbortedTxn]] = {}
        self.entries: tuple[AbortedTxn, ...] = ()  # all, by last offset: what readers see

    def load(self, bases: Iterable[int], names: Iterable[str] | None = None) -> None:
        """Read the index of each segment; files of segments not listed are deleted.
        ``names``: the folder's file names if the caller has listed it."""
        wanted = set(bases)
        self._by_segment.clear()
        for name in os.listdir(self.directory) if names is None else names:
            if not name.endswith(TXN_INDEX_SUFFIX):
                continue
            stem = name[: -len(TXN_INDEX_SUFFIX)]
            path = self.directory / name
            if len(stem) != 20 or not stem.isdigit() or int(stem) not in wanted:
                path.unlink(missing_ok=True)
                continue
            entries = read_entries(path)
            if entries:
                self._by_segment[int(stem)] = entries
        self._changed()

    def _changed(self) -> None:
        self.entries = tuple(
            sorted(
                (e for entries in self._by_segment.values() for e in entries),
                key=lambda e: e.last_offset,
            )
        )

    def append(self, segment_base: int, entry: AbortedTxn) -> None:
        """Add an entry to the segment's index (in memory first, then fsynced on disk)."""
        self._by_segment.setdefault(segment_base, []).append(entry)
        self._changed()
        path = txn_index_path(self.directory, segment_base)
        new = not path.exists()
        with open(path, "ab") as f:
            f.write(entry.pack())
            f.flush()
            os.fsync(f.fileno())
        if new:
            fsync_dir(self.directory)

    def truncate_from(self, offset: int) -> None:
        """Drop every entry whose marker is at or after ``offset``."""
        for base, entries in list(self._by_segment.items()):
            kept = [e for e in entries if e.last_offset < offset]
            if len(kept) == len(entries):
                continue
            write_entries(txn_index_path(self.directory, base), kept)
            if kept:
                self._by_segment[base] = kept
            else:
                del self._by_segment[base]
        self._changed()

    def of_segments(self, bases: Iterable[int]) -> list[AbortedTxn]:
        """The entries of the segments ``bases``, by marker offset."""
        found = (e for base in bases for e in self._by_segment.get(base, ()))
        return sorted(found, key=lambda e: e.last_offset)

    def merged(self, bases: Iterable[int], into: int) -> None:
        """The segments ``bases`` became one at ``into`` (the cleaner's swap wrote its
        file): their entries are that segment's from now on."""
        bases = list(bases)
        entries = self.of_segments(bases)
        for base in bases:
            self._by_segment.pop(base, None)
        if entries:
            self._by_segment[into] = entries
        self._changed()

    def forget_below(self, first_base: int) -> None:
        """The segments below ``first_base`` were deleted (their files with them)."""
        for base in [b for b in self._by_segment if b < first_base]:
            del self._by_segment[base]
        self._changed()

    def clear(self) -> None:
        """Every segment went: forget all (``LogSegment.delete`` removed the files)."""
        for base in self._by_segment:
            txn_index_path(self.directory, base).unlink(missing_ok=True)
        self._by_segment.clear()
        self._changed()


def collect(
    entries: tuple[AbortedTxn, ...], fetch_offset: int, upper_bound: int
) -> list[tuple[int, int]]:
    """(producer id, first offset) of the aborted transactions overlapping
    [``fetch_offset``, ``upper_bound``): their marker at or after the fetch offset, their
    first record before the bound (Kafka's collectAbortedTransactions)."""
    return [
        (e.producer_id, e.first_offset)
        for e in entries
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound
    ]
