"""The least recently used segments keep their files open; the others are closed.

Owns: ``OpenFiles``, the LRU of the segments whose files are open, bounded by ``max_files``
(the broker's ``log.open.files.max``, our key: Kafka keeps every segment open) counted in
the descriptors their owners hold (``descriptors.FILES_PER_SEGMENT`` a segment). A segment
is opened (``pin``) when an append, a flush, a truncation or a read needs it and becomes the
most recently used (``full`` False, a read: only the files a read uses are opened, the
others when a later pin asks for them); while pinned (a thread is using its descriptors) it
is never closed. When the segments hold more than ``max_files``, the least recently used
unpinned ones are closed (``Openable.evict``): a segment's log file is a reference-counted
``SharedFile``, so closing it only drops the segment's own reference and a region still
being sent keeps its descriptor until released. The bound is therefore on what the segments
own, not on the process: pinned segments past the bound (one a thread using a segment now)
and the files of regions in flight come on top.

One lock for all: opening and closing a segment's files happen under it (system calls of
microseconds; never an fsync), so io, recovery and cleaner threads may touch the LRU at
once. It must not know what a segment's files are nor when they are flushed: the segment
does (a closed segment keeps its unflushed state and reopens to fsync).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol


class Openable(Protocol):
    """What the LRU asks of a segment; called with the LRU's lock held."""

    def reopen(self, full: bool) -> int:
        """Open those of its files that are closed: all of them if ``full``, else only
        those a read uses; returns how many descriptors that took (0: none were closed)."""
        ...

    def evict(self) -> None:
        """Close the files (the segment's own references)."""
        ...


class OpenFiles:
    """The LRU of open segments; ``max_files`` None: no bound (nothing is closed)."""

    def __init__(self, max_files: int | None = None) -> None:
        if max_files is not None and max_files < 1:
            raise ValueError("max_files must be at least 1 (or None: no bound)")
        self._max = max_files
        self.lock = threading.Lock()
        # Open segments, least recently used first -> (descriptors held, pins).
        self._open: OrderedDict[Openable, list[int]] = OrderedDict()
        self._held = 0
        self.evictions = 0  # segments closed by the bound since start
        self.reopens = 0  # segments opened again after being closed by the bound

    @property
    def max_files(self) -> int | None:
        return self._max

    @max_files.setter
    def max_files(self, value: int | None) -> None:
        """A new bound, applied at once (segments past it are closed now)."""
        if value is not None and value < 1:
            raise ValueError("max_files must be at least 1 (or None: no bound)")
        with self.lock:
            self._max = value
            self._shrink()

    @property
    def held(self) -> int:
        """The descriptors the open segments hold now (their owners' references)."""
        return self._held

    @property
    def segments_open(self) -> int:
        return len(self._open)

    def figures(self) -> dict[str, int | None]:
        """The metrics' ``log.open_files``: descriptors held now against the bound (None:
        no bound), the segments open now, and closings by the bound and reopenings since
        start."""
        with self.lock:
            return {
                "held": self._held,
                "max": self._max,
                "segments_open": len(self._open),
                "evictions": self.evictions,
                "reopens": self.reopens,
            }

    def add(self, item: Openable, files: int) -> None:
        """A segment that has just opened its ``files`` descriptors itself (created or
        loaded): the most recently used (a method that uses them pins it)."""
        with self.lock:
            self._open[item] = [files, 0]
            self._held += files
            self._shrink()

    def pin(self, item: Openable, full: bool = True) -> None:
        """Open ``item`` if it is closed (all its files if ``full``, else those a read
        uses), make it the most recently used and keep it open until ``unpin``. Raises
        what opening raises (OSError), leaving closed what was closed."""
        with self.lock:
            entry = self._open.get(item)
            if entry is None:
                files = item.reopen(full)
                self.reopens += 1
                self._open[item] = [files, 1]
                self._held += files
            else:
                if full:
                    more = item.reopen(True)
                    entry[0] += more
                    self._held += more
                entry[1] += 1
                self._open.move_to_end(item)
            self._shrink()

    def unpin(self, item: Openable) -> None:
        with self.lock:
            entry = self._open.get(item)
            if entry is not None:
                entry[1] -= 1
                if self._max is not None and self._held > self._max:
                    self._shrink()

    def discard(self, item: Openable) -> None:
        """``item`` closed its files itself (deleted, closed for good): forget it. Call
        with ``lock`` held, together with the closing."""
        entry = self._open.pop(item, None)
        if entry is not None:
            self._held -= entry[0]

    def _shrink(self) -> None:
        """Close the least recently used unpinned segments until within the bound."""
        if self._max is None or self._held <= self._max:
            return
        victims = []
        for item, (files, pins) in self._open.items():
            if self._held <= self._max:
                break
            if pins == 0:
                victims.append(item)
                self._held -= files
        for item in victims:
            del self._open[item]
            self.evictions += 1
            item.evict()
