"""The log dirs as DescribeLogDirs and the metrics see them.

Owns: ``describe_log_dirs`` (DescribeLogDirs: each dir, its partitions with their sizes
and its volume's total and usable bytes; a dir holding an offline log, or whose volume
cannot be read, is KAFKA_STORAGE_ERROR, as Kafka reports an offline dir) and
``VolumeSurvey``, the metrics' ``log_dirs`` section: each dir's partition bytes, counted
when asked (memory only), beside its volume's total and free bytes from the last
``statvfs`` survey, which ``ReplicaManager`` runs on a worker thread every
``SURVEY_INTERVAL_MS`` (a snapshot never waits for the file system).
Must not: call ``statvfs`` on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...apis.services import LogDirInfo
from ...log.partition_log import PartitionLog
from ...protocol.errors import ErrorCode

SURVEY_INTERVAL_MS = 10_000
Held = Iterable[tuple[tuple[str, int], PartitionLog]]


def volume(d: Path) -> tuple[str, tuple[int, int] | None]:
    """The dir's absolute path (Kafka reports it so) and its volume's (total, usable)
    bytes, None if it cannot be read (blocking: a ``statvfs``)."""
    path = str(d.resolve())
    try:
        st = os.statvfs(d)
    except OSError:
        return path, None
    return path, (st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize)


async def describe_log_dirs(
    dirs: Sequence[Path],
    held: Held,
    wanted: Mapping[str, Sequence[int]] | None,
    run: Callable[[Callable[[], Any]], Awaitable[Any]],
) -> list[LogDirInfo]:
    """DescribeLogDirs over ``held`` (the partitions of ``wanted``, or all); the volumes
    are read in ``run`` (the io pool)."""
    by_dir: dict[Path, list[tuple[str, int, int]]] = {d: [] for d in dirs}
    offline: set[Path] = set()
    for (topic, partition), plog in held:
        parent = plog.directory.parent
        if plog.offline:
            offline.add(parent)
        elif wanted is None or partition in wanted.get(topic, ()):
            by_dir.setdefault(parent, []).append((topic, partition, plog.size_bytes))
    found = await run(lambda: [volume(d) for d in by_dir])
    return [
        LogDirInfo(path, ErrorCode.KAFKA_STORAGE_ERROR, [])
        if d in offline or size is None
        else LogDirInfo(path, ErrorCode.NONE, sorted(parts), *size)
        for (d, parts), (path, size) in zip(by_dir.items(), found, strict=True)
    ]


class VolumeSurvey:
    """The ``log_dirs`` metrics: partition bytes now, volume bytes as last surveyed."""

    def __init__(self) -> None:
        self.dirs: list[Path] = []
        self._volumes: dict[Path, tuple[str, tuple[int, int] | None]] = {}

    def survey(self, dirs: Sequence[Path]) -> None:
        """Read every dir's volume (blocking: call from a thread)."""
        found = {d: volume(d) for d in dirs}
        self.dirs = list(dirs)
        self._volumes = found  # one assignment: a reader sees the old survey or this one

    def figures(self, held: Held) -> list[dict[str, Any]]:
        """Per dir: ``path``, ``size_bytes`` (its partitions' logs), ``total_bytes`` and
        ``free_bytes`` (its volume's, 0 when the survey could not read it)."""
        volumes = self._volumes
        sizes = {d: 0 for d in self.dirs}
        for _, plog in held:
            parent = plog.directory.parent
            sizes[parent] = sizes.get(parent, 0) + plog.size_bytes
        out = []
        for d, size in sizes.items():
            path, space = volumes.get(d, (str(d), None))
            total, free = space if space is not None else (0, 0)
            out.append({"path": path, "size_bytes": size, "total_bytes": total, "free_bytes": free})
        return out
