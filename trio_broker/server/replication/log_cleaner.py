"""Kafka's LogCleaner for this broker: which compacted logs are cleaned, when, and where.

Owns: ``LogCleaner``: its own pool of ``log.cleaner.threads`` threads (an ``IoPool``
named ``cleaner``, resized when the key changes), so that cleaning never waits behind
requests' storage work nor delays it, and never runs on the event loop. ``run`` (started
in the replica manager's maintenance nursery, so it stops with the other background work
before the logs close) surveys the logs whose ``cleanup.policy`` has ``compact`` on a
cleaner thread, then starts a pass on each due log, filthiest first, while a thread is
free. A log is due when its dirty ratio reaches its ``min.cleanable.dirty.ratio``, when
its dirty part is older than ``max.compaction.lag.ms``, or when a tombstone it keeps
passed its delete horizon (Kafka's ``latestDeleteHorizon``, in memory as there). With
nothing due it sleeps ``log.cleaner.backoff.ms`` or until ``wake`` (a pass ended, a
config changed, or a compacted log sealed a segment: Kafka waits out the backoff there,
which lets a topic of small segments under steady updates pile up a backoff's worth of
them). A log is cleaned by one pass at a time. The figures (per partition:
dirty ratio, bytes, passes, last run; and totals) feed the metrics snapshot and the admin
API. It must not decide what a pass keeps: ``log.cleaner.compaction`` does.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from ...log.cleaner.compaction import CleanResult, DirtyState, clean, dirty_state
from ...log.cleaner.offset_map import slots_for
from ...log.errors import LogError
from ...log.log_core import LogCore
from ...log.partition_log import PartitionLog
from ..common import IoPool
from ..config import BrokerConfig

log = logging.getLogger("trio_broker.cleaner")

TopicPartition = tuple[str, int]
LogSource = Callable[[], Iterable[tuple[TopicPartition, PartitionLog]]]


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class PartitionCleaning:
    """One compacted partition's cleaner figures."""

    dirty_ratio: float = 0.0
    dirty_bytes: int = 0
    clean_bytes: int = 0
    passes: int = 0
    bytes_cleaned: int = 0  # read by passes (Kafka's "bytes cleaned")
    bytes_written: int = 0
    records_removed: int = 0
    last_run_ms: int | None = None  # wall clock, when the last pass ended
    last_duration_ms: float | None = None
    horizon_ms: int | None = None  # the earliest delete horizon of a kept tombstone

    def as_dict(self) -> dict[str, Any]:
        return {
            "dirty_ratio": self.dirty_ratio,
            "dirty_bytes": self.dirty_bytes,
            "clean_bytes": self.clean_bytes,
            "passes": self.passes,
            "bytes_cleaned": self.bytes_cleaned,
            "bytes_written": self.bytes_written,
            "records_removed": self.records_removed,
            "last_run_ms": self.last_run_ms,
            "last_duration_ms": self.last_duration_ms,
        }


_Survey = list[tuple[TopicPartition, PartitionLog, DirtyState]]


class LogCleaner:
    def __init__(
        self,
        config: Callable[[], BrokerConfig],
        logs: LogSource,
        clock: Callable[[], int] = wall_ms,
    ) -> None:
        self._config = config
        self._logs = logs
        self._clock = clock
        self.pool = IoPool(config()["log.cleaner.threads"], name="cleaner")
        self.partitions: dict[TopicPartition, PartitionCleaning] = {}
        self._busy: set[TopicPartition] = set()
        self._wake = trio.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stopping = threading.Event()
        # Logs a pass failed on (a bug or corrupt data): left alone until restart, as
        # Kafka marks them uncleanable.
        self.uncleanable: set[TopicPartition] = set()
        self.passes = 0
        self.failures = 0
        self.bytes_cleaned = 0
        self.last_run_ms: int | None = None
        self.last_duration_ms: float | None = None

    # -- control

    def wake(self) -> None:
        """Look for due logs now (a config changed, a pass ended)."""
        self._wake.set()

    def rolled(self, plog: LogCore) -> None:
        """A log sealed a segment (called on its appending thread, never blocks): if it is
        compacted, look now rather than after ``log.cleaner.backoff.ms``, so that a topic
        of small segments under steady updates does not pile them up between looks."""
        token = self._token
        if token is not None and plog.config.compact:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(self.wake)

    def resize(self, threads: int) -> None:
        self.pool.resize(threads)
        self.wake()

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Clean due logs until cancelled; a pass under way finishes first."""
        self._token = trio.lowlevel.current_trio_token()
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                try:
                    while True:
                        config = self._config()
                        if config["log.cleaner.enable"] and len(self._busy) < self.pool.size:
                            survey = await self.pool.run(self._survey)
                            for key, plog, force in self._due(survey):
                                if len(self._busy) >= self.pool.size:
                                    break
                                self._busy.add(key)
                                nursery.start_soon(self._clean, key, plog, force)
                        with trio.move_on_after(config["log.cleaner.backoff.ms"] / 1000):
                            await self._wake.wait()
                        self._wake = trio.Event()
                finally:
                    self._stopping.set()  # passes under way stop at their next segment
        finally:
            self._token = None
            self.pool.close()

    # -- choosing

    def _survey(self) -> _Survey:
        """Every compacted log's dirty state (blocking: reads checkpoints)."""
        now = self._clock()
        out: _Survey = []
        for key, plog in self._logs():
            if plog.closed or plog.offline or not plog.config.compact or key in self.uncleanable:
                continue
            try:
                out.append((key, plog, dirty_state(plog, now)))
            except (LogError, OSError) as exc:
                log.warning("%s-%d: cannot survey for cleaning: %s", *key, exc)
        return out

    def _due(self, survey: _Survey) -> list[tuple[TopicPartition, PartitionLog, bool]]:
        now = self._clock()
        seen = set()
        ranked: list[tuple[bool, float, TopicPartition, PartitionLog, bool]] = []
        for key, plog, state in survey:
            seen.add(key)
            stats = self.partitions.setdefault(key, PartitionCleaning())
            stats.dirty_ratio = state.ratio
            stats.dirty_bytes, stats.clean_bytes = state.dirty_bytes, state.clean_bytes
            if key in self._busy:
                continue
            horizon_due = stats.horizon_ms is not None and now >= stats.horizon_ms
            if state.needs_cleaning(plog.config.min_cleanable_dirty_ratio):
                ranked.append((state.max_lag_due, state.ratio, key, plog, False))
            elif horizon_due:
                ranked.append((False, 0.0, key, plog, True))
        for gone in set(self.partitions) - seen - self._busy:
            del self.partitions[gone]  # deleted, or no longer compacted
        ranked.sort(key=lambda r: (r[0], r[1]), reverse=True)
        return [(key, plog, force) for _, _, key, plog, force in ranked]

    # -- cleaning

    async def _clean(self, key: TopicPartition, plog: PartitionLog, force: bool) -> None:
        config = self._config()
        slots = slots_for(config["log.cleaner.dedupe.buffer.size"] // self.pool.size)
        stop = self._stopping.is_set
        try:
            result = await self.pool.run(
                lambda: clean(plog, self._clock(), slots, force=force, should_stop=stop)
            )
        except (LogError, OSError) as exc:
            self.failures += 1
            log.error("%s-%d: cleaning failed: %s", *key, exc)
            result = None
        except Exception:
            self.failures += 1
            self.uncleanable.add(key)
            log.exception("%s-%d: cleaning failed; not cleaned again until restart", *key)
            result = None
        finally:
            self._busy.discard(key)
            self.wake()
        if result is not None:
            self._record(key, result)

    def _record(self, key: TopicPartition, result: CleanResult) -> None:
        stats = self.partitions.setdefault(key, PartitionCleaning())
        now = self._clock()
        stats.passes += 1
        stats.bytes_cleaned += result.bytes_read
        stats.bytes_written += result.bytes_written
        stats.records_removed += result.records_removed
        stats.last_run_ms, stats.last_duration_ms = now, result.duration_ms
        stats.horizon_ms = result.horizon_ms
        self.passes += 1
        self.bytes_cleaned += result.bytes_read
        self.last_run_ms, self.last_duration_ms = now, result.duration_ms
        log.info(
            "%s-%d cleaned to offset %d: %d segments, %d -> %d bytes, %d records removed "
            "in %.1f ms",
            *key,
            result.end_offset,
            result.segments,
            result.bytes_read,
            result.bytes_written,
            result.records_removed,
            result.duration_ms,
        )

    # -- figures

    def figures(self) -> dict[str, Any]:
        """The ``log_cleaner`` section of the metrics snapshot."""
        return {
            "enabled": bool(self._config()["log.cleaner.enable"]),
            "threads": self.pool.size,
            "cleaning": len(self._busy),
            "passes": self.passes,
            "failures": self.failures,
            "uncleanable": len(self.uncleanable),
            "bytes_cleaned": self.bytes_cleaned,
            "last_run_ms": self.last_run_ms,
            "last_duration_ms": self.last_duration_ms,
            "max_dirty_ratio": max((p.dirty_ratio for p in self.partitions.values()), default=0.0),
            "partitions": {
                f"{topic}-{partition}": stats.as_dict()
                for (topic, partition), stats in sorted(self.partitions.items())
            },
        }
