"""The three open files of a log segment, and the least recently used segments' LRU.

Owns: ``SegmentFiles``, the base of ``LogSegment``: its ``.log`` (a reference-counted
``SharedFile``), ``.index`` and ``.timeindex`` descriptors, and whether they are open now.
Given an ``OpenFiles`` (the log manager's LRU, ``log.open.files.max``), they are open only
while the segment is among the recently used: ``opened`` (and ``with_files`` on a method)
opens them again if the LRU closed them and keeps them open until the block ends; readers
take a reference with ``acquire``, which keeps the log file's descriptor open whatever the
LRU does, and reopens the log file only: the indexes' entries are in memory, so a read
(``find_batch``, a scan) never uses their descriptors, which are reopened when a write, a
rollback, a flush or a truncation needs them (``opened(full=True)``). ``close`` is for good:
the files are never reopened after it, so that a name the cleaner's swap gives to another
file is never opened as this segment's. Without an LRU (the cleaner's copies, logs opened on
their own) the files stay open until ``close``. It must not read nor write the files, nor
decide when they are flushed: ``segment`` does (a closed segment keeps its unflushed state
and reopens to fsync).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar, cast

from .descriptors import FILES_PER_SEGMENT
from .handles import FileHandle, SharedFile
from .index.sparse import OffsetIndex, TimeIndex
from .open_files import OpenFiles

_REOPEN_FLAGS = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)  # never O_CREAT: it must exist


class SegmentClosed(OSError):
    """The segment was closed for good (deleted, replaced): its files cannot be reopened."""


_F = TypeVar("_F", bound=Callable[..., Any])


def with_files(method: _F) -> _F:
    """The method runs with the segment's files open (``LogSegment.opened``)."""

    @functools.wraps(method)
    def wrapper(self: SegmentFiles, *args: Any, **kwargs: Any) -> Any:
        with self.opened():
            return method(self, *args, **kwargs)

    return cast(_F, wrapper)


def with_log_file(method: _F) -> _F:
    """The method runs with the segment's log file open: it only reads (``opened(False)``)."""

    @functools.wraps(method)
    def wrapper(self: SegmentFiles, *args: Any, **kwargs: Any) -> Any:
        with self.opened(full=False):
            return method(self, *args, **kwargs)

    return cast(_F, wrapper)


class SegmentFiles:
    """The files of a segment; opened and closed by ``files``, the LRU, if any."""

    @property
    def log_path(self) -> Path:
        raise NotImplementedError

    def __init__(
        self,
        log: SharedFile,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        files: OpenFiles | None,
    ) -> None:
        self._log = log
        self.offset_index = offset_index
        self.time_index = time_index
        # The LRU that may close the files (None: open until ``close``); whether they are
        # open now, and whether the segment is closed for good.
        self._files = files
        self._is_open = True  # the log file
        self._indexes_open = True
        self._gone = False

    def _join_lru(self) -> None:
        """(Once the segment is whole.) The files count in the LRU from now on."""
        if self._files is not None:
            self._files.add(self, FILES_PER_SEGMENT)

    @property
    def fd(self) -> int:
        """The log file's descriptor: for use inside ``opened`` (or on a segment without
        an LRU), where the LRU cannot close it."""
        if not self._is_open:
            raise SegmentClosed(f"{self.log_path}: the segment's files are closed")
        return self._log.fd

    @property
    def shared_file(self) -> SharedFile:
        return self._log

    @property
    def files_open(self) -> int:
        """The descriptors the segment itself holds now."""
        if self._gone or not self._is_open:
            return 0
        return FILES_PER_SEGMENT if self._indexes_open else 1

    @contextmanager
    def opened(self, full: bool = True) -> Iterator[None]:
        """The files open (reopened if the LRU closed them) and kept open until the end
        of the block; the segment becomes the most recently used. ``full`` False: only
        the log file is sure to be open (reads: the indexes' entries are in memory)."""
        files = self._files
        if files is None:
            yield
            return
        files.pin(self, full)
        try:
            yield
        finally:
            files.unpin(self)

    def acquire(self) -> FileHandle | None:
        """A reference to the log file for reading; None once the segment is gone. The
        reference keeps the descriptor open even if the LRU closes the segment."""
        if self._files is None:
            return self._log.acquire()
        if self._gone:
            return None
        try:
            with self.opened(full=False):
                return self._log.acquire()
        except SegmentClosed:
            return None

    def reopen(self, full: bool) -> int:
        """(``OpenFiles``, under its lock.) Open again the log file if closed and, if
        ``full``, the two indexes if closed; returns the descriptors opened."""
        if self._gone:
            raise SegmentClosed(f"{self.log_path}: the segment is closed")
        opened = 0
        fd = -1
        if not self._is_open:
            fd = os.open(self._log.path, _REOPEN_FLAGS)  # the path it was opened at
            opened = 1
        if full and not self._indexes_open:
            try:
                self.offset_index.reopen()
                self.time_index.reopen()
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                self.offset_index.close()
                raise
            self._indexes_open = True
            opened += FILES_PER_SEGMENT - 1
        if fd >= 0:
            self._log = SharedFile(fd, self._log.path)
            self._is_open = True
        return opened

    def evict(self) -> None:
        """(``OpenFiles``, under its lock.) Close the files: the log file's own reference
        only (regions in flight keep theirs); unflushed state stays."""
        self._is_open = False
        self._indexes_open = False
        with suppress(OSError):  # a close that fails still frees the descriptor (Linux)
            self._close_files()

    def close(self) -> None:
        """Drop the segment's own references, for good; readers' handles keep the log fd
        open."""
        files = self._files
        if files is None:
            self._close_files()
            return
        with files.lock:
            self._gone = True
            files.discard(self)
            if self._is_open:
                self._is_open = False
                self._indexes_open = False
                self._close_files()

    def _close_files(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self._log.retire()
