"""A PySpark data source over the scraper's output: ``readStream.format("trio_broker_scraped")``.

Owns: ``ScrapedMetrics`` (the ``DataSource``) and its ``SimpleDataSourceStreamReader``,
which streams the JSON Lines that ``spark_jobs.scrape`` appends under ``path``
(``broker=<id>/date=YYYY-MM-DD/hour=HH.jsonl``; any ``*.jsonl`` below ``path`` is read, a
directory below ``path`` being one broker's). Spark's own file source reads a file once and
never again, but the scraper appends to the current hour's file: hence this source, whose
offset is, per file, how many bytes of whole lines have been read.

Rows have the schema of ``spark_jobs.stream_source`` (``source``, ``restarts``, ``seq``,
``value``, ``prev``), so the stream job's query is the same over both sources: ``source``
is the broker's directory, ``restarts`` is null (``bucket_rows`` sees a restart from the
pair itself), ``prev`` is the snapshot before ``value`` in that broker's files, read from
before the batch's start when need be. Marker lines (``gap``, ``restart``) are skipped,
as are lines of another schema version and corrupt ones (counted on stderr); a torn last
line that the scraper is still writing waits for its newline.

A fresh query starts at the beginning: ``Trigger.AvailableNow`` processes everything
scraped so far, and a later run only what was appended since.
Must not: import anything but the standard library, pyspark and ``spark_jobs.snapshot_schema``
(pickled by value with this module, see ``register``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from spark_jobs.snapshot_schema import MARKER_KEY, SCHEMA_ID

NAME = "trio_broker_scraped"
SCHEMA_DDL = "source STRING, restarts INT, seq BIGINT, value STRING, prev STRING"

Offset = dict[str, Any]  # {"files": {relative path: bytes of whole lines read}}


def _snapshot(line: bytes) -> str | None:
    """The line as a snapshot of this schema version, or None (marker, other, corrupt)."""
    try:
        doc = json.loads(line)
    except ValueError:
        print(f"{NAME}: skipped a corrupt line", file=sys.stderr)
        return None
    if not isinstance(doc, dict) or MARKER_KEY in doc:
        return None
    if doc.get("schema") != SCHEMA_ID or "seq" not in doc:
        print(f"{NAME}: skipped a line of schema {doc.get('schema')!r}", file=sys.stderr)
        return None
    return line.decode()


def _whole_lines(path: Path, start: int, end: int) -> list[bytes]:
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return [line for line in data.split(b"\n") if line.strip()]


class ScrapedReader(SimpleDataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        path = options.get("path")
        if not path:
            raise ValueError(f"{NAME}: load(path) names no directory")
        self.root = Path(path)
        if not self.root.is_dir():
            raise ValueError(f"{NAME}: {self.root} is not a directory")
        self.target: Offset | None = None

    # --------------------------------------------------------------- offsets

    def _files(self) -> dict[str, list[str]]:
        """Per broker (its directory below the root), its files in time order."""
        brokers: dict[str, list[str]] = {}
        for p in sorted(self.root.rglob("*.jsonl")):
            rel = p.relative_to(self.root)
            brokers.setdefault(rel.parts[0] if len(rel.parts) > 1 else "", []).append(str(rel))
        return brokers

    def _end(self) -> Offset:
        """Every file's length up to its last newline: what may be read now."""
        files = {}
        for names in self._files().values():
            for name in names:
                path = self.root / name
                size = path.stat().st_size
                with path.open("rb") as f:
                    # Back from the end to the last newline (a torn line waits for its own).
                    pos = size
                    while pos > 0:
                        step = min(4096, pos)
                        f.seek(pos - step)
                        chunk = f.read(step)
                        i = chunk.rfind(b"\n")
                        if i >= 0:
                            pos = pos - step + i + 1
                            break
                        pos -= step
                files[name] = pos
        return {"files": files}

    def initialOffset(self) -> Offset:
        return {"files": {}}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._end()

    # ------------------------------------------------------------------ rows

    def _prev(self, names: list[str], i: int, start: dict[str, int]) -> str | None:
        """The last snapshot before file ``i``'s start offset, in it or an earlier file."""
        for j in range(i, -1, -1):
            upto = start.get(names[j], 0)
            for line in reversed(_whole_lines(self.root / names[j], 0, upto)):
                snap = _snapshot(line)
                if snap is not None:
                    return snap
        return None

    def _rows(self, start: Offset, end: Offset) -> list[tuple[Any, ...]]:
        s, e = start.get("files", {}), end.get("files", {})
        out: list[tuple[Any, ...]] = []
        for source, names in self._files().items():
            prev: str | None = None
            found = False
            for i, name in enumerate(names):
                lo, hi = s.get(name, 0), e.get(name, 0)
                if hi <= lo:
                    continue
                if not found:
                    prev = self._prev(names, i, s)
                    found = True
                for line in _whole_lines(self.root / name, lo, hi):
                    snap = _snapshot(line)
                    if snap is None:
                        continue
                    seq = json.loads(snap)["seq"]
                    out.append((source, None, int(seq), snap, prev))
                    prev = snap
        return out

    def read(self, start: Offset) -> tuple[Iterator[tuple[Any, ...]], Offset]:
        end = self.target if self.target is not None else self._end()
        if end == start or not any(
            n > start.get("files", {}).get(k, 0) for k, n in end["files"].items()
        ):
            return iter([]), start
        return iter(self._rows(start, end)), end

    def readBetweenOffsets(self, start: Offset, end: Offset) -> Iterator[tuple[Any, ...]]:
        return iter(self._rows(start, end))

    def commit(self, end: Offset) -> None:
        pass  # the scraper's files are its own: nothing to drop


class ScrapedMetrics(DataSource):
    """``format("trio_broker_scraped").load(DIR)``: the scraper's snapshots, as a stream."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        return ScrapedReader(self.options)


def register(spark: Any) -> None:
    """Register the source with ``spark``, its code pickled by value for the workers."""
    from pyspark import cloudpickle

    import spark_jobs.snapshot_schema

    for module in (spark_jobs.snapshot_schema, sys.modules[__name__]):
        cloudpickle.register_pickle_by_value(module)
    spark.dataSource.register(ScrapedMetrics)
