"""What a process holds open, read from /proc: the segment files under a log dir."""

from __future__ import annotations

import os
from pathlib import Path

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def segment_fds(root: Path, pid: int | str = "self") -> int:
    """The descriptors process ``pid`` holds now on segment files under ``root``: only
    those, since other threads (a background deletion's directory walk, another test's
    leftovers in a test worker) open and close descriptors of their own at any moment."""
    held = 0
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:  # closed between the listing and the read
            continue
        if target.startswith(str(root)) and target.endswith(SEGMENT_SUFFIXES):
            held += 1
    return held
