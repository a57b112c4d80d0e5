"""Small durable-file helpers shared by the log's checkpoint and metadata files.

Owns: reading a small file whole, writing a file whole and synced (or left to the caller
to sync), writing one atomically (temporary file, fsync, rename, fsync of the folder) and
fsync of a folder. It must not know what the files mean.
"""

from __future__ import annotations

import os
from pathlib import Path

TMP_SUFFIX = ".tmp"


def read_small(path: Path | str) -> bytes:
    """The whole of a small file (a checkpoint, a snapshot) in plain reads: cheaper than
    a Python file object, which loading pays once a file a partition."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        parts: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(parts)
            parts.append(chunk)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` as the whole of ``path`` and fsync it (no rename: the caller's
    protocol says when the file counts)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_unsynced(path: Path, data: bytes) -> None:
    """``write_synced`` without the fsync: the caller syncs (e.g. one ``os.sync``)."""
    write_synced(path, data, sync=False)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves the old or the new file, whole."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    write_synced(tmp, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)
