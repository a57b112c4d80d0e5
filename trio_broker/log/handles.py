"""Reference-counted file descriptors, so record data can leave the log without copying.

Owns: ``SharedFile`` (one open descriptor shared by the segment and every ``FileHandle``
handed out) and ``FileHandle`` (one reference: ``fileno()`` and an idempotent ``close()``).
The descriptor is closed when the owner retired it and the last handle was closed, so a
segment deleted by retention stays readable for regions still in flight. It must not know
about segments or batches.
"""

from __future__ import annotations

import os
import threading


class SharedFile:
    """An fd with a reference count; the owner holds one reference until ``retire``."""

    __slots__ = ("_fd", "_lock", "_refs", "_retired", "path")

    def __init__(self, fd: int, path: str) -> None:
        self._fd = fd
        self.path = path
        self._refs = 1  # the owner's
        self._retired = False
        self._lock = threading.Lock()

    @property
    def fd(self) -> int:
        """The descriptor, for the owner's own use while it is not retired."""
        return self._fd

    @property
    def closed(self) -> bool:
        return self._refs == 0

    @property
    def references(self) -> int:
        return self._refs

    def acquire(self) -> FileHandle | None:
        """A new reference, or None when the file is already closed."""
        with self._lock:
            if self._refs == 0:
                return None
            self._refs += 1
        return FileHandle(self)

    def retire(self) -> None:
        """Drop the owner's reference (once); the fd closes when no handle is left."""
        with self._lock:
            if self._retired:
                return
            self._retired = True
        self._release()

    def _release(self) -> None:
        with self._lock:
            self._refs -= 1
            close = self._refs == 0
        if close:
            os.close(self._fd)


class FileHandle:
    """One reference to a ``SharedFile``: what a ``FileRegion`` carries as its ``file``."""

    __slots__ = ("_closed", "_lock", "_shared")

    def __init__(self, shared: SharedFile) -> None:
        self._shared = shared
        self._closed = False
        self._lock = threading.Lock()

    def fileno(self) -> int:
        if self._closed:
            raise ValueError("I/O on a closed file handle")
        return self._shared.fd

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._shared._release()

    def __enter__(self) -> FileHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileHandle({self._shared.path!r}, closed={self._closed})"
