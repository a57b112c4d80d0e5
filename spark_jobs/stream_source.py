"""A PySpark data source over live brokers: ``readStream.format("trio_broker_metrics")``.

Owns: ``TrioBrokerMetrics`` (the ``DataSource``), its ``SimpleDataSourceStreamReader``
and the ``Spool`` behind it. Options: ``admin`` (admin URLs, comma-separated), ``spoolDir``
(required: a directory the reader owns, e.g. beside the checkpoint), ``token`` (else
``$TRIO_BROKER_ADMIN_TOKEN``), ``timeoutSeconds``, ``minIntervalSeconds`` (no new fetch
sooner than this after the last one).

A row is one snapshot: ``source``, ``restarts``, ``seq``, ``value`` (the snapshot's JSON)
and ``prev`` (the JSON of the snapshot before it from the same broker, or null), so that
counter deltas need no state in the query. Offsets are per broker ``{"restarts", "seq"}``:
the snapshot ``seq``, and how many restarts of the broker the reader has seen (``seq``
starts again at 1 after a restart). A live broker only serves its current snapshot, so
every snapshot fetched is first written to the spool (atomically) and served from there:
``read`` fetches one snapshot per broker and returns what the spool holds after ``start``;
``readBetweenOffsets`` (a replay after a failure) reads the spool only; ``commit`` drops
what no later batch needs (it keeps the committed snapshot, the ``prev`` of the next).
``Trigger.AvailableNow``: ``prepareForTriggerAvailableNow`` fetches one snapshot per broker
and the query ends once it has processed the spool up to there.

The reader runs in a Python worker on the driver: Spark pickles this module (and
``spark_jobs.fetch``, ``spark_jobs.durable``) by value (``register``), so that a cluster's
Python needs no copy of the package. ``read`` returns list iterators (Spark copies them).
Must not: import anything but the standard library, pyspark and those two modules.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spark_jobs.durable import make_dirs, write_atomic
from spark_jobs.fetch import FetchError, fetch_snapshot, is_restart, token_from_env

NAME = "trio_broker_metrics"
SCHEMA_DDL = "source STRING, restarts INT, seq BIGINT, value STRING, prev STRING"
_ENTRY = re.compile(r"^(\d{6})-(\d{12})\.json$")

Key = tuple[int, int]  # (restarts, seq)


class Spool:
    """One broker's fetched snapshots, a file each, named by their offset."""

    def __init__(self, root: Path, source: str) -> None:
        self.dir = root / hashlib.sha256(source.encode()).hexdigest()[:16]
        make_dirs(self.dir)
        (self.dir / "source.txt").write_text(source + "\n")
        self._last: tuple[Key, dict[str, Any]] | None = None

    def keys(self) -> list[Key]:
        out = []
        for p in self.dir.iterdir():
            m = _ENTRY.match(p.name)
            if m:
                out.append((int(m[1]), int(m[2])))
        return sorted(out)

    def _path(self, key: Key) -> Path:
        return self.dir / f"{key[0]:06d}-{key[1]:012d}.json"

    def read(self, key: Key) -> str:
        return self._path(key).read_text().strip()

    def last(self) -> tuple[Key, dict[str, Any]] | None:
        if self._last is None:
            keys = self.keys()
            if keys:
                self._last = (keys[-1], json.loads(self.read(keys[-1])))
        return self._last

    def add(self, snapshot: dict[str, Any], line: bytes) -> Key:
        last = self.last()
        restarts = 0 if last is None else last[0][0]
        if last is not None and is_restart(last[1], snapshot):
            restarts += 1
        key = (restarts, int(snapshot["seq"]))
        write_atomic(self._path(key), line + b"\n")
        self._last = (key, snapshot)
        return key

    def rows(self, source: str, after: Key, upto: Key) -> list[tuple[Any, ...]]:
        keys = self.keys()
        out = []
        prev: str | None = None
        for k in keys:
            if k > upto:
                break
            line = self.read(k)
            if k > after:
                out.append((source, k[0], k[1], line, prev))
            prev = line
        return out

    def prune(self, before: Key) -> None:
        for k in self.keys():
            if k < before:
                self._path(k).unlink(missing_ok=True)


def _key(offset: dict[str, Any], source: str) -> Key:
    o = offset.get("sources", {}).get(source)
    return (0, 0) if o is None else (int(o["restarts"]), int(o["seq"]))


class MetricsStreamReader(SimpleDataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        admin = options.get("admin") or ""
        self.sources = [u.strip() for u in admin.split(",") if u.strip()]
        if not self.sources:
            raise ValueError(f"{NAME}: option 'admin' names no admin URL")
        spool = options.get("spoolDir")
        if not spool:
            raise ValueError(f"{NAME}: option 'spoolDir' is required")
        self.token = options.get("token") or token_from_env()
        self.timeout = float(options.get("timeoutSeconds", "5"))
        self.min_interval = float(options.get("minIntervalSeconds", "0"))
        self.spools = {u: Spool(Path(spool), u) for u in self.sources}
        self.target: dict[str, Any] | None = None
        self._fetched_at: dict[str, float] = {}
        # Where a new query starts: after what the spool held before this reader fetched
        # anything (Spark may ask for it after prepareForTriggerAvailableNow).
        self._initial = self._offset()

    def _offset(self) -> dict[str, Any]:
        sources = {}
        for u, spool in self.spools.items():
            last = spool.last()
            key = (0, 0) if last is None else last[0]
            sources[u] = {"restarts": key[0], "seq": key[1]}
        return {"sources": sources}

    def _fetch(self, *, force: bool = False) -> None:
        now = time.monotonic()
        for u, spool in self.spools.items():
            if not force and now - self._fetched_at.get(u, -1e18) < self.min_interval:
                continue
            self._fetched_at[u] = now
            try:
                snapshot, line = fetch_snapshot(u, token=self.token, timeout=self.timeout)
            except FetchError as exc:
                print(f"{NAME}: {exc}", file=sys.stderr)
                continue
            spool.add(snapshot, line)

    def initialOffset(self) -> dict[str, Any]:
        return self._initial

    def _rows(self, start: dict[str, Any], end: dict[str, Any]) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for u, spool in self.spools.items():
            out += spool.rows(u, _key(start, u), _key(end, u))
        return out

    def read(self, start: dict[str, Any]) -> tuple[Iterator[tuple[Any, ...]], dict[str, Any]]:
        if self.target is None:
            self._fetch()
            end = self._offset()
        else:
            end = self.target
        rows = self._rows(start, end)
        if not rows:
            return iter([]), start
        return iter(rows), end

    def readBetweenOffsets(
        self, start: dict[str, Any], end: dict[str, Any]
    ) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows(start, end))

    def prepareForTriggerAvailableNow(self) -> None:
        self._fetch(force=True)
        self.target = self._offset()

    def commit(self, end: dict[str, Any]) -> None:
        for u, spool in self.spools.items():
            spool.prune(_key(end, u))


class TrioBrokerMetrics(DataSource):
    """``format("trio_broker_metrics")``: snapshots of live brokers, as a stream."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return MetricsStreamReader(self.options)  # case-insensitive keys


def register(spark: Any) -> None:
    """Register the source with ``spark``, its code pickled by value for the workers."""
    from pyspark import cloudpickle

    import spark_jobs.durable
    import spark_jobs.fetch

    for module in (spark_jobs.durable, spark_jobs.fetch, sys.modules[__name__]):
        cloudpickle.register_pickle_by_value(module)
    spark.dataSource.register(TrioBrokerMetrics)
