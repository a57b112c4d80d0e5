"""``dashboard.json``'s ``cluster`` section: the brokers by load and the hottest partitions,
from the trends job's ``brokers`` and ``partitions`` tables.

Owns ``build_cluster``: over the last ``window_s`` of buckets (those that start after the
newest bucket's start minus ``window_s``; the balance job's default window is the same
600 s), per broker the means of its event loop busy ratio, io and network idle ratios
over its buckets, its bytes in and out per second (each rate times the seconds it covers,
summed, over those seconds: the counters' increase over the window's measured seconds),
and at its newest bucket its leaders, replicas and disk bytes; brokers sorted by event loop
busy, the busiest first (the one CPU is what a broker runs out of). Partitions: per
partition, from its leader's rows, the same kind of rate means, and at the newest bucket
its leader, replicas and log size; the ``top`` with the most bytes in plus out per second
first. ``None`` when the tables have no rows.
Must not: use Spark (rows in, a dict out).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]
TOP_PARTITIONS = 10
MEANS = ("loop_busy_ratio", "io_idle_ratio", "network_idle_ratio")
RATES = ("bytes_in_per_s", "bytes_out_per_s", "messages_in_per_s")
NEWEST_BROKER: tuple[str, ...] = ("rack", "leaders", "replicas", "disk_used_bytes")
NEWEST_BROKER += ("disk_total_bytes", "disk_free_bytes")
NEWEST_PARTITION = ("leader", "replicas", "log_size_bytes")


def _epoch(t: Any) -> float:
    if isinstance(t, dt.datetime):
        if t.tzinfo is None:
            raise ValueError("a naive datetime is ambiguous: give epoch seconds")
        return t.timestamp()
    return float(t)


def _round(v: float | None, digits: int = 4) -> float | None:
    return None if v is None else round(v, digits)


def _mean(rows: Sequence[Row], key: str) -> float | None:
    vals = [float(r[key]) for r in rows if r.get(key) is not None]
    return _round(sum(vals) / len(vals)) if vals else None


def _rate(rows: Sequence[Row], key: str) -> float | None:
    """The counter's increase over the seconds measured (rate * seconds, summed)."""
    pairs = [
        (float(r[key]), float(r["seconds"]))
        for r in rows
        if r.get(key) is not None and r.get("seconds")
    ]
    seconds = sum(s for _, s in pairs)
    return _round(sum(v * s for v, s in pairs) / seconds, 2) if seconds else None


def _newest(rows: Sequence[Row]) -> Row:
    return max(rows, key=lambda r: _epoch(r["bucket"]))


def build_cluster(
    brokers: Iterable[Row],
    partitions: Iterable[Row],
    *,
    window_s: float,
    top: int = TOP_PARTITIONS,
) -> dict[str, Any] | None:
    brows = list(brokers)
    if not brows:
        return None
    newest = max(_epoch(r["bucket"]) for r in brows)
    bucket_s = int(brows[0].get("bucket_s") or 0)
    since = newest - window_s

    def recent(rows: Iterable[Row]) -> list[Row]:
        return [r for r in rows if _epoch(r["bucket"]) > since]

    by_broker: dict[int, list[Row]] = defaultdict(list)
    for r in recent(brows):
        by_broker[int(r["broker_id"])].append(r)
    out_brokers: list[dict[str, Any]] = []
    for b, rows in by_broker.items():
        last = _newest(rows)
        out_brokers.append(
            {
                "broker_id": b,
                "buckets": len(rows),
                "last_bucket": int(_epoch(last["bucket"])),
                **{k: _mean(rows, k) for k in MEANS},
                **{k: _rate(rows, k) for k in RATES},
                **{k: last.get(k) for k in NEWEST_BROKER},
            }
        )
    out_brokers.sort(key=lambda x: (-float(x["loop_busy_ratio"] or -1.0), int(x["broker_id"])))

    by_partition: dict[tuple[str, int], list[Row]] = defaultdict(list)
    for r in recent(partitions):
        if r.get("role") == "leader":
            by_partition[(str(r["topic"]), int(r["partition"]))].append(r)
    hot: list[dict[str, Any]] = []
    for (topic, part), rows in by_partition.items():
        last = _newest(rows)
        rates = {k: _rate(rows, k) for k in RATES}
        hot.append(
            {
                "topic": topic,
                "partition": part,
                **rates,
                "bytes_per_s": _round(
                    (rates["bytes_in_per_s"] or 0.0) + (rates["bytes_out_per_s"] or 0.0), 2
                ),
                **{k: last.get(k) for k in NEWEST_PARTITION},
            }
        )
    hot.sort(key=lambda p: (-float(p["bytes_per_s"] or 0.0), str(p["topic"]), int(p["partition"])))
    return {
        "window_s": window_s,
        "bucket_s": bucket_s,
        "from": int(min(_epoch(r["bucket"]) for r in recent(brows))),
        "to": int(newest + bucket_s),
        "brokers": out_brokers,
        "partitions": hot[:top],
        "partitions_total": len(hot),
    }
