"""All partition logs of the broker, across its log directories.

Owns: the log directories (created at start), the ``<topic>-<partition>`` folder naming,
loading every partition at start-up on ``recovery_threads`` threads a directory (Kafka's
``num.recovery.threads.per.data.dir``; recovering those of a directory without the
``.kafka_cleanshutdown`` marker, else taking their numbers from the directory's checkpoint
files, ``dir_checkpoints``) once it has checked that the open files limit holds what they
will open (``descriptors``: else ``DescriptorLimitError``, one line), creating a partition
in the online directory holding the fewest (a log that cannot be made leaves no folder
behind), a log dir's failure (the first log in it that goes offline takes the others with
it, as Kafka takes a dir offline on an I/O error; ``offline_partitions``), the descriptors
the logs hold (``file_budget``) and the LRU that bounds them (``files``, an
``open_files.OpenFiles`` shared by every segment: ``log.open.files.max``), deleting one (its
files closed and its folder renamed to ``<topic>-<partition>.<id>-delete`` at once; a thread
removes the folder after ``delete`` has returned, close waits for it, a start removes any
left), the periodic entry points the server's timers call (``flush_dirty``,
``apply_retention``, ``checkpoint``) and closing (flush every log on ``recovery_threads``
threads, their producer-state snapshots written unsynced, then per directory one
``os.sync``, one set of checkpoint files and after them the clean-shutdown marker). It must
not keep topic metadata (ids, configs): the server does, and passes configs in.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

from .config import LogConfig
from .descriptors import (
    FileBudget,
    bound_fits,
    check_start,
    open_files_limit,
    segments_on_disk,
)
from .dir_checkpoints import read_dir_checkpoints, write_dir_checkpoints
from .errors import LogError, LogStorageError
from .files import fsync_dir
from .log_core import LogCore
from .open_files import OpenFiles
from .partition_log import PartitionLog
from .partition_metadata import read_partition_metadata, write_partition_metadata

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
REMOVAL_WAIT_S = 30.0  # how long close() waits for deleted logs' folders to go
DELETE_SUFFIX = "-delete"

TopicPartition = tuple[str, int]
_T = TypeVar("_T")


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``<topic>-<partition>`` -> (topic, partition); None for anything else."""
    topic, sep, number = name.rpartition("-")
    if not sep or not topic or not number.isdigit() or "." in number:
        return None
    return topic, int(number)


def _partition_folders(log_dir: Path) -> Iterator[Path]:
    """The partition folders of a log directory (none if it does not exist yet)."""
    try:
        entries = list(os.scandir(log_dir))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LogStorageError(f"{log_dir}: cannot read the log directory: {exc}") from exc
    for entry in entries:
        if (
            entry.is_dir()
            and not entry.name.endswith(DELETE_SUFFIX)
            and parse_partition_dir(entry.name) is not None
        ):
            yield Path(entry.path)


def _bound(max_files: int | None) -> int | None:
    return None if max_files is None or max_files < 0 else max_files


def _now_ms() -> int:
    return int(time.time() * 1000)


class LogManager:
    """Loads, creates, finds and deletes partition logs in ``log_dirs``."""

    def __init__(
        self,
        log_dirs: list[Path],
        default_config: LogConfig,
        topic_configs: Mapping[str, LogConfig] | None = None,
        *,
        now_ms: int | None = None,
        recovery_threads: int = 1,
        max_files: int | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        if recovery_threads < 1:
            raise ValueError("recovery_threads must be at least 1")
        self.log_dirs = [Path(d) for d in log_dirs]
        # Threads per log dir that load the logs at start and close them at shutdown
        # (Kafka's num.recovery.threads.per.data.dir).
        self.recovery_threads = recovery_threads
        self.default_config = default_config
        # The LRU of open segment files (``log.open.files.max``; None: every segment's
        # files stay open, as Kafka's do).
        self.files = OpenFiles(_bound(max_files))
        self._lock = threading.Lock()
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._held_in: dict[Path, int] = {}  # logs a dir holds (kept as they come and go)
        self._doomed: list[Path] = []  # folders of logs that could not be made, to remove
        # Deleted logs' renamed folders, removed by a thread after ``delete`` has returned
        # (Kafka's asynchronous log deletion); the thread ends when there are none left.
        self._removals: list[Path] = []
        self._removal_cv = threading.Condition()
        self._remover: threading.Thread | None = None
        self.remove_folder: Callable[[Path], None] = shutil.rmtree  # (tests may gate it)
        # Log dirs a log of failed in (an I/O error, not a full disk): offline until restart.
        self.offline_dirs: set[Path] = set()
        self._offline_tps: set[TopicPartition] = set()
        self._offline_lock = threading.Lock()
        self._closed = False
        self.load_report: list[str] = []  # a line a log dir: what loading it took
        # Logs loaded from their dir's checkpoint files, whose own files are older.
        self._loaded_from_dir: list[TopicPartition] = []
        now = _now_ms() if now_ms is None else now_ms
        configs = dict(topic_configs or {})
        # Refused before any log is opened: a broker short of descriptors would otherwise
        # fail part-way through loading, or soon after.
        # (A bound within the limit holds any number: no folder is counted then.)
        if not bound_fits(self.files.max_files):
            check_start(
                *segments_on_disk(f for d in self.log_dirs for f in _partition_folders(d)),
                bound=self.files.max_files,
            )
        try:
            for log_dir in self.log_dirs:
                self._load_dir(log_dir, configs, now)
        except BaseException:
            for log in self._logs.values():
                log.close()
            raise

    # -- start-up ----------------------------------------------------------------------

    def _load_dir(self, log_dir: Path, configs: Mapping[str, LogConfig], now_ms: int) -> None:
        began = time.monotonic()
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            marker = log_dir / CLEAN_SHUTDOWN_FILE
            clean = marker.exists()
            entries = sorted(os.scandir(log_dir), key=lambda e: e.name)
        except OSError as exc:
            raise LogStorageError(f"{log_dir}: cannot read the log directory: {exc}") from exc
        # The dir's checkpoints are trusted only with the marker written after them.
        saved = read_dir_checkpoints(log_dir) if clean else None
        if not clean and any(e.is_dir() for e in entries):  # a new directory has nothing to recover
            logger.info("%s: no clean shutdown marker, recovering its partitions", log_dir)
        folders: list[tuple[TopicPartition, Path]] = []
        for entry in entries:
            if not entry.is_dir():
                continue
            if entry.name.endswith(DELETE_SUFFIX):
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            tp = parse_partition_dir(entry.name)
            if tp is not None:
                folders.append((tp, Path(entry.path)))

        def load(tp: TopicPartition, folder: Path) -> PartitionLog:
            config = configs.get(tp[0], self.default_config)
            checkpoint = saved.get(tp) if saved is not None else None
            return PartitionLog.open(
                folder,
                config,
                recover=not clean,
                now_ms=now_ms,
                checkpoint=checkpoint,
                files=self.files,
            )

        loaded, error = self._in_threads([(tp, partial(load, tp, f)) for tp, f in folders])
        for tp, log in loaded.items():
            if tp in self._logs:
                log.close()
                error = error or LogStorageError(
                    f"partition {tp[0]}-{tp[1]} is in both {self._dir_of[tp]} and {log_dir}"
                )
                continue
            self._adopt(tp, log, log_dir)
            if saved is not None and tp in saved:
                self._loaded_from_dir.append(tp)
        if error is not None:
            raise error
        if loaded:  # told once the broker has started (a failed start stays one line)
            how = "clean shutdown: no recovery" if clean else "recovered"
            self.load_report.append(
                f"{log_dir}: {len(loaded)} partitions loaded in "
                f"{time.monotonic() - began:.2f} s ({how}, {self.recovery_threads} threads)"
            )
        # From now on a crash must be detected: the marker goes until the next close().
        try:
            if clean:
                marker.unlink()
                fsync_dir(log_dir)
        except OSError as exc:
            raise LogStorageError(f"{log_dir}: cannot remove the clean marker: {exc}") from exc

    def _in_threads(
        self, jobs: list[tuple[TopicPartition, Callable[[], _T]]]
    ) -> tuple[dict[TopicPartition, _T], BaseException | None]:
        """Run one job a partition on ``recovery_threads`` threads: what each returned,
        and the first exception raised (the other jobs still run to their end)."""
        results: dict[TopicPartition, _T] = {}
        error: BaseException | None = None
        if self.recovery_threads == 1 or len(jobs) < 2:
            for tp, job in jobs:
                try:
                    results[tp] = job()
                except Exception as exc:
                    error = error or exc
            return results, error
        with ThreadPoolExecutor(self.recovery_threads, thread_name_prefix="log-recovery") as pool:
            futures = [(tp, pool.submit(job)) for tp, job in jobs]
            for tp, future in futures:
                try:
                    results[tp] = future.result()
                except Exception as exc:
                    error = error or exc
        return results, error

    # -- lookup ------------------------------------------------------------------------

    def open_files(self) -> int:
        """The descriptors the logs' segments hold now (``descriptors.FILES_PER_SEGMENT``
        an open segment; with a bound, only the recently used segments are open)."""
        return self.files.held

    def set_open_files_max(self, max_files: int | None) -> None:
        """A new ``log.open.files.max`` (-1 or None: no bound), in force at once."""
        self.files.max_files = _bound(max_files)

    def file_budget(self) -> FileBudget:
        """The logs' descriptors against the open files limit and the bound, now."""
        return FileBudget(open_files_limit(), self.open_files(), self.files.max_files)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def __contains__(self, tp: object) -> bool:
        return tp in self._logs

    def __len__(self) -> int:
        return len(self._logs)

    def partitions(self) -> list[TopicPartition]:
        return list(self._logs)

    def logs(self) -> Iterator[tuple[TopicPartition, PartitionLog]]:
        return iter(list(self._logs.items()))

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    def topic_id_of(self, topic: str, partition: int) -> uuid.UUID | None:
        """The topic id kept in the partition folder's ``partition.metadata``."""
        log = self.get(topic, partition)
        return read_partition_metadata(log.directory) if log is not None else None

    # -- create / delete ---------------------------------------------------------------

    def create(
        self,
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        *,
        topic_id: uuid.UUID | None = None,
        now_ms: int | None = None,
        sync: bool = True,
    ) -> PartitionLog:
        """The log of ``topic``-``partition``, created in the least loaded directory if it
        does not exist yet (an existing log gets ``config`` if one is given). ``sync``
        False leaves the fsync of the log dir (its new entry) to the caller."""
        if partition < 0 or not topic or "/" in topic or topic in (".", ".."):
            raise ValueError(f"bad partition name {topic!r}-{partition}")
        tp = (topic, partition)
        with self._lock:
            if self._closed:
                raise LogStorageError("the log manager is closed")
            existing = self._logs.get(tp)
            if existing is not None:
                if config is not None:
                    existing.reconfigure(config)
                return existing
            online = [d for d in self.log_dirs if d not in self.offline_dirs]
            if not online:
                raise LogStorageError(f"{topic}-{partition}: every log dir is offline")
            log_dir = min(online, key=lambda d: self._held_in.get(d, 0))
            directory = log_dir / partition_dir_name(topic, partition)
            now = _now_ms() if now_ms is None else now_ms
            made = not directory.exists()
            try:
                try:
                    directory.mkdir(parents=True, exist_ok=True)
                    if topic_id is not None:
                        write_partition_metadata(directory, topic_id)
                    if sync:
                        fsync_dir(log_dir)
                except OSError as exc:
                    raise LogStorageError(f"{directory}: cannot create: {exc}") from exc
                log = PartitionLog.open(
                    directory,
                    config or self.default_config,
                    recover=False,
                    now_ms=now,
                    files=self.files,
                )
            except BaseException:
                if made:  # nothing of a log that could not be made stays behind
                    self._remove_folder(directory)
                raise
            self._adopt(tp, log, log_dir)
            return log

    def create_all(
        self,
        topic: str,
        partitions: Iterable[int],
        config: LogConfig | None = None,
        *,
        topic_id: uuid.UUID | None = None,
    ) -> list[PartitionLog]:
        """``create`` for several partitions of one topic as one batch: each log dir they
        land in is fsynced once at the end, not once a partition. A failure part-way
        leaves the logs made so far to the caller (``delete`` undoes them)."""
        now = _now_ms()
        logs = [
            self.create(topic, p, config, topic_id=topic_id, now_ms=now, sync=False)
            for p in partitions
        ]
        for log_dir in {log.directory.parent for log in logs}:
            try:
                fsync_dir(log_dir)
            except OSError as exc:
                raise LogStorageError(f"{log_dir}: cannot sync new partitions: {exc}") from exc
        return logs

    def _adopt(self, tp: TopicPartition, log: PartitionLog, log_dir: Path) -> None:
        self._logs[tp] = log
        self._dir_of[tp] = log_dir
        self._held_in[log_dir] = self._held_in.get(log_dir, 0) + 1
        log.offline_listener = self._log_offline

    def _log_offline(self, log: LogCore) -> None:
        """A log went offline: its log dir does, as Kafka's LogDirFailureChannel takes a
        dir offline on its first I/O error: every other log in it goes offline too (what
        they would write next could be lost the same way), new partitions go to the other
        dirs, and ``offline_partitions`` lists them all."""
        log_dir = log.directory.parent
        tp = parse_partition_dir(log.directory.name)
        if tp is None or self._logs.get(tp) is not log:
            return  # a log being deleted: its folder may be gone meanwhile, by design
        with self._offline_lock:
            self._offline_tps.add(tp)
            if log_dir in self.offline_dirs or log_dir not in self.log_dirs:
                return
            self.offline_dirs.add(log_dir)
        logger.error("%s: the log dir goes offline: its partitions are served no more", log_dir)
        for other_tp, other in self.logs():
            if self._dir_of.get(other_tp) == log_dir:
                other.take_offline(f"log dir {log_dir} is offline")

    def offline_partitions(self) -> frozenset[TopicPartition]:
        """The partitions whose log is offline (held here: deleted ones are not)."""
        with self._offline_lock:
            if not self._offline_tps:
                return frozenset()
            return frozenset(tp for tp in self._offline_tps if tp in self._logs)

    def _remove_folder(self, directory: Path) -> None:
        """Remove a folder no log holds: renamed out of the way first (a rename needs no
        descriptor), then removed, now or, when the process is short of descriptors, after
        the next deletion frees some (or at the next start)."""
        target = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
        try:
            os.rename(directory, target)
        except OSError as exc:
            logger.warning("%s: rename before delete failed: %s", directory, exc)
            target = directory
        self._doomed.append(target)
        self._remove_doomed()

    def _remove_doomed(self) -> None:
        for folder in list(self._doomed):
            shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                self._doomed.remove(folder)

    def delete(self, topic: str, partition: int) -> bool:
        """Delete the partition's log and folder; False if there was none. Regions still
        being sent keep their files open until released."""
        tp = (topic, partition)
        with self._lock:
            log = self._logs.pop(tp, None)
            held_in = self._dir_of.pop(tp, None)
            if held_in is not None:
                self._held_in[held_in] -= 1
        if log is None:
            return False
        target = log.directory.with_name(f"{log.directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
        try:
            os.rename(log.directory, target)
            log.directory = target
        except OSError as exc:  # under its own name: removed now, before it can be re-made
            logger.warning("%s: rename before delete failed: %s", log.directory, exc)
            log.delete()
        else:
            log.delete(remove=False)  # its descriptors are free from here
            self._remove_later(target)
        with self._lock:
            self._remove_doomed()
        return True

    def _remove_later(self, folder: Path) -> None:
        with self._removal_cv:
            self._removals.append(folder)
            if self._remover is None:
                self._remover = threading.Thread(
                    target=self._remove_in_background, name="log-delete", daemon=True
                )
                self._remover.start()

    def _remove_in_background(self) -> None:
        while True:
            with self._removal_cv:
                if not self._removals:
                    self._remover = None
                    self._removal_cv.notify_all()
                    return
                folder = self._removals[0]
            try:
                self.remove_folder(folder)
            except OSError as exc:  # tried again after the next deletion, or at a start
                logger.warning("%s: removal failed: %s", folder, exc)
                with self._lock:
                    self._doomed.append(folder)
            with self._removal_cv:
                self._removals.pop(0)

    def wait_removed(self, timeout: float | None = None) -> bool:
        """Wait until every deleted log's folder is removed; False on ``timeout``."""
        with self._removal_cv:
            return self._removal_cv.wait_for(lambda: self._remover is None, timeout)

    # -- periodic work -----------------------------------------------------------------

    def _each(
        self, what: str, action: Callable[[PartitionLog], object]
    ) -> dict[TopicPartition, object]:
        results: dict[TopicPartition, object] = {}
        for tp, log in self.logs():
            try:
                results[tp] = action(log)
            except LogError as exc:
                logger.error("%s-%d: %s failed: %s", tp[0], tp[1], what, exc)
        return results

    def flush_dirty(self, now_ms: int) -> int:
        """Flush logs whose ``flush.ms`` elapsed, then checkpoint recovery points.
        Returns how many logs were flushed."""
        flushed = self._each("flush", lambda log: log.flush_if_due(now_ms))
        self.checkpoint()
        return sum(1 for v in flushed.values() if v)

    def checkpoint(self) -> None:
        """Persist every log's recovery point and log start offset that changed."""
        self._each("checkpoint", lambda log: log.checkpoint())

    def checkpoint_loaded(self) -> None:
        """Write the own checkpoint files of the logs loaded from their dir's files (a
        clean start leaves them as they were); once, then a no-op. Until it runs, a crash
        recovers those logs from their older, lower numbers: a longer scan, never less."""
        with self._lock:
            todo, self._loaded_from_dir = self._loaded_from_dir, []
        for tp in todo:
            log = self._logs.get(tp)
            if log is None or log.closed:
                continue
            try:
                log.checkpoint()
            except LogError as exc:
                logger.error("%s-%d: checkpoint failed: %s", tp[0], tp[1], exc)

    def apply_retention(self, now_ms: int) -> int:
        """Roll logs older than ``segment.ms`` and delete expired segments. Returns how
        many segments were deleted."""
        self._each("roll", lambda log: log.maybe_roll(now_ms))
        deleted = self._each("retention", lambda log: log.apply_retention(now_ms))
        return sum(v for v in deleted.values() if isinstance(v, int))

    # -- shutdown ----------------------------------------------------------------------

    def close(self) -> None:
        """Flush and close every log (``recovery_threads`` at a time in each dir), then,
        in each directory all of whose logs closed cleanly, write the dir's checkpoint files
        (one set for all its partitions: ``dir_checkpoints``) and after them the clean
        shutdown marker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            logs = list(self._logs.items())
        if not self.wait_removed(REMOVAL_WAIT_S):
            logger.warning("deleted logs' folders not all removed: the next start removes them")
        for log_dir in self.log_dirs:
            began = time.monotonic()
            mine = [(tp, log) for tp, log in logs if self._dir_of.get(tp) == log_dir]
            closed, _ = self._in_threads([(tp, partial(_close_one, tp, log)) for tp, log in mine])
            if len(closed) < len(mine) or not all(closed.values()):
                continue  # no marker: the next start recovers this dir
            entries = {tp: log.checkpoint_values() for tp, log in mine}
            try:
                # The logs' producer-state snapshots, written unsynced: one sync for all
                # (of every filesystem: Python has no syncfs), before the marker.
                os.sync()
                write_dir_checkpoints(log_dir, entries)
                (log_dir / CLEAN_SHUTDOWN_FILE).touch()
                fsync_dir(log_dir)
            except OSError as exc:
                logger.error("%s: cannot write the clean shutdown checkpoints: %s", log_dir, exc)
                continue
            logger.info(
                "%s: %d partitions closed in %.2f s", log_dir, len(mine), time.monotonic() - began
            )


def _close_one(tp: TopicPartition, log: PartitionLog) -> bool:
    """Close a log without its own checkpoint file; False if it failed or is offline."""
    try:
        log.close(checkpoint=False, sync_snapshot=False)
    except LogError as exc:
        logger.error("%s-%d: close failed: %s", tp[0], tp[1], exc)
        return False
    return not log.offline
