"""The log directory lock, as Kafka's ``.lock``: one broker per data directory.

Owns: ``LogDirLock``, an exclusive, non-blocking ``flock`` on ``<dir>/.lock`` (the
holder's pid written into it) taken before anything else in the directory is read or
written and held until ``release``; ``LogDirLockedError`` when another process (or another
broker in this one) holds it, and ``LogDirUnusableError`` when the directory cannot be
created, read or written. The kernel drops the lock when the holder dies, so a crashed
broker never leaves a stale lock behind; the file itself stays.

Must not: create, read or change any other file in the directory, nor change ``.lock``
when the lock is refused.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class LogDirLockedError(OSError):
    """Another broker holds this log directory; the message names it and the pid."""


class LogDirUnusableError(OSError):
    """The log directory cannot be created, read or written; the message says which."""


class LogDirLock:
    """Exclusive locks on every log directory, held together (blocking calls)."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = list(dirs)
        self._fds: list[int] = []

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def acquire(self) -> None:
        """Lock every directory (creating missing ones), in order; all or none.

        Raises ``LogDirLockedError`` or ``LogDirUnusableError``; locks taken before the
        failure are released.
        """
        try:
            for d in self.dirs:
                self._fds.append(_lock(d))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)  # closing the last descriptor drops the flock


def _lock(d: Path) -> int:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LogDirUnusableError(f"log dir {d}: cannot create it: {_reason(exc)}") from None
    if not d.is_dir():
        raise LogDirUnusableError(f"log dir {d}: not a directory")
    if not os.access(d, os.R_OK | os.W_OK | os.X_OK):
        raise LogDirUnusableError(f"log dir {d}: not readable and writable by this user")
    path = d / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise LogDirUnusableError(f"log dir {d}: cannot open {path}: {_reason(exc)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _read_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            who = f"pid {holder}" if holder else "another process"
            raise LogDirLockedError(
                f"log dir {d} is in use by another broker ({who} holds {path})"
            ) from None
        raise LogDirUnusableError(f"log dir {d}: cannot lock {path}: {_reason(exc)}") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        os.close(fd)
        raise LogDirUnusableError(f"log dir {d}: cannot write {path}: {_reason(exc)}") from None
    return fd


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
