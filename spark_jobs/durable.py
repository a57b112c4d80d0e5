"""Writing files so that a crash never leaves a half-written one behind.

Owns: ``write_atomic`` (a whole file: a temporary file beside it, fsync, rename, fsync of
the directory; a reader sees the old file or the new one), ``AppendLog`` (JSON Lines
appended one whole line per ``write`` call and fsynced before it returns; a torn last line
left by a crash is sealed off with a newline before anything else is appended, so it costs
that one fragment, which a reader counts as one corrupt line, and never the next line)
and ``make_dirs`` (creates directories and fsyncs their parents).
Standard library only: the scraper runs with no other dependency.
Must not: buffer a line in memory past ``write``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """``mkdir -p`` whose new entries survive a crash (each new one's parent is fsynced)."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        fsync_dir(d.parent)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    make_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_json_atomic(path: Path, value: Any, *, compact: bool = False) -> None:
    text = (
        json.dumps(value, separators=(",", ":"))
        if compact
        else json.dumps(value, indent=1, sort_keys=True)
    )
    write_atomic(path, (text + "\n").encode())


class AppendLog:
    """One JSON Lines file open for durable appends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        make_dirs(path.parent)
        existed = path.exists()
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if not existed:
            fsync_dir(path.parent)
        self.sealed = self._seal_torn_tail()

    def _seal_torn_tail(self) -> bool:
        """True if the file ended in a partial line (now closed with a newline)."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return False
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return False
        self._write_all(b"\n")
        os.fsync(self._fd)
        return True

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def write(self, line: bytes) -> None:
        """Append ``line`` (no newline in it) and fsync; on return it is on disk."""
        if b"\n" in line:
            raise ValueError("a JSON Lines record must be one line")
        self._write_all(line + b"\n")
        os.fsync(self._fd)

    def write_json(self, value: Any) -> None:
        self.write(json.dumps(value, separators=(",", ":")).encode())

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
