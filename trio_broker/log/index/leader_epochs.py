"""The leader epoch cache of one partition log: at which offset each leader epoch began.

Owns: the ``leader-epoch-checkpoint`` file in a partition folder (Kafka's name and text
format) and the lookups made on it: OffsetForLeaderEpoch's end offset of an epoch, and the
diverging epoch of a fetch (KIP-279, KIP-320, KIP-595). An entry (epoch, start offset) is
added, and the file rewritten, when a batch is appended with a leader epoch larger than
the last one; the file is written *before* that batch, so after a crash it never lacks an
epoch the log holds (an entry at or beyond the log end is dropped on load). Moving the log
start offset drops the entries wholly below it; truncating the log drops those at or
after its new end (``truncate_from_end``, after the log was cut), and a full truncation
removes the file (``clear``). A missing or unreadable file is rebuilt
from the batch headers (their ``partition_leader_epoch``).

Readers never lock: every change publishes a new tuple of entries. Writers are serialized
by the owning ``PartitionLog``'s lock. It must not know about topics, requests or trio.

Format (text)::

    0            <- version
    2            <- number of entries
    0 0          <- epoch start_offset
    3 1500
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Collection, Iterable
from pathlib import Path

from trio_broker.records.header import BatchHeader

from ..files import atomic_write, read_small

EPOCH_FILE = "leader-epoch-checkpoint"
_VERSION = "0"
UNDEFINED = (-1, -1)  # Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET

Entry = tuple[int, int]  # leader epoch, start offset


class LeaderEpochCache:
    """The (epoch, start offset) entries of one log, oldest first."""

    def __init__(self, directory: Path, entries: Iterable[Entry] = ()) -> None:
        self._directory = directory  # (its file's Path made only to write it)
        self._entries: tuple[Entry, ...] = tuple(entries)

    @classmethod
    def load(
        cls,
        directory: Path,
        headers: Iterable[BatchHeader],
        log_start: int,
        log_end: int,
        *,
        names: Collection[str] | None = None,
    ) -> LeaderEpochCache:
        """The file's entries, checked against the log [``log_start``, ``log_end``);
        rebuilt from ``headers`` (read only then) when the file is missing or damaged.
        ``names``: the folder's file names if the caller has listed it."""
        missing = names is not None and EPOCH_FILE not in names
        entries = None if missing else _read(os.path.join(directory, EPOCH_FILE))
        cache = cls(directory, entries if entries is not None else ())
        if entries is None:
            for header in headers:
                cache._add(header.partition_leader_epoch, header.base_offset)
        found = tuple(entries) if entries is not None else ()
        cache._entries = tuple(e for e in cache._entries if e[1] < log_end)
        cache._trim_start(log_start)
        if cache._entries != found:
            cache._write()
        return cache

    @property
    def entries(self) -> tuple[Entry, ...]:
        return self._entries

    @property
    def latest_epoch(self) -> int:
        entries = self._entries
        return entries[-1][0] if entries else -1

    def assign(self, epoch: int, start_offset: int) -> None:
        """A batch of ``epoch`` is about to be appended at ``start_offset``: a new epoch is
        recorded (durably, before the batch). Raises ``OSError`` if the file cannot be
        written."""
        before = self._entries
        if self._add(epoch, start_offset):
            self._write_or_undo(before)

    def assign_all(self, entries: Iterable[Entry]) -> None:
        """``assign`` for several (epoch, start offset) in order (a follower's batches),
        the file written once."""
        before = self._entries
        added = False
        for epoch, start_offset in entries:
            added = self._add(epoch, start_offset) or added
        if added:
            self._write_or_undo(before)

    def _write_or_undo(self, before: tuple[Entry, ...]) -> None:
        """Write the file; if it cannot be, forget what was added (a retried append must
        try again to record it durably, not find it recorded in memory only)."""
        try:
            self._write()
        except BaseException:
            self._entries = before
            raise

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut to end at ``end_offset``: drop the epochs starting at or after
        it (durably). Raises ``OSError`` if the file cannot be written."""
        kept = tuple(e for e in self._entries if e[1] < end_offset)
        if kept != self._entries:
            self._entries = kept
            self._write()

    def clear(self) -> None:
        """Forget every epoch and remove the file (a missing file is rebuilt from the
        batches on load, and the log holds none now)."""
        self._entries = ()
        (self._directory / EPOCH_FILE).unlink(missing_ok=True)

    def _add(self, epoch: int, start_offset: int) -> bool:
        entries = self._entries
        if epoch < 0 or (entries and epoch <= entries[-1][0]):
            return False
        # An epoch that begins where an earlier one began replaces it (that one holds
        # nothing), as Kafka's cache does.
        kept = tuple(e for e in entries if e[1] < start_offset)
        self._entries = (*kept, (epoch, start_offset))
        return True

    def trim_start(self, log_start: int) -> None:
        """The log start offset moved to ``log_start``: drop what lies wholly below it."""
        if self._trim_start(log_start):
            self._write()

    def _trim_start(self, log_start: int) -> bool:
        entries = self._entries
        below = bisect_right(entries, log_start, key=lambda e: e[1])
        if below == 0 or (below == 1 and entries[0][1] == log_start):
            return False
        # The last epoch starting at or below log_start now starts at log_start.
        self._entries = ((entries[below - 1][0], log_start), *entries[below:])
        return True

    def end_offset_for(self, epoch: int, log_end: int) -> Entry:
        """OffsetForLeaderEpoch: (the largest epoch <= ``epoch``, the start offset of the
        first epoch after it, or ``log_end`` when it is the latest), as Kafka answers;
        ``UNDEFINED`` for an undefined epoch or one newer than any known."""
        entries = self._entries
        if epoch < 0 or not entries:
            return UNDEFINED
        if epoch == entries[-1][0]:
            return epoch, log_end
        higher = bisect_right(entries, epoch, key=lambda e: e[0])
        if higher == len(entries):
            return UNDEFINED
        if higher == 0:  # older than the oldest epoch known: its end is that one's start
            return epoch, entries[0][1]
        return entries[higher - 1][0], entries[higher][1]

    def _write(self) -> None:
        lines = [_VERSION, str(len(self._entries))]
        lines += [f"{epoch} {offset}" for epoch, offset in self._entries]
        atomic_write(self._directory / EPOCH_FILE, ("\n".join(lines) + "\n").encode())


def _read(path: str) -> list[Entry] | None:
    try:
        lines = read_small(path).decode().split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if len(lines) < 2 or lines[0] != _VERSION:
        return None
    try:
        count = int(lines[1])
        entries = [_entry(line) for line in lines[2 : 2 + count]]
    except ValueError:
        return None
    if len(entries) != count or entries != sorted(entries) or len(set(entries)) != count:
        return None
    return entries


def _entry(line: str) -> Entry:
    epoch, offset = line.split(" ")
    return int(epoch), int(offset)
