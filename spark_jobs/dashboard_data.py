"""``dashboard.json``: the trend charts the admin dashboard draws, built from table rows.

Owns: ``build_dashboard``, which turns rows of the trend tables (plain dicts, as the
trends job collects them for the last hours) into one compact document: per broker a
shared time axis (bucket starts, epoch seconds) and a list of charts, each a list of
series aligned with that axis (``null`` where a bucket has no value). The page draws every
chart as it is, so a chart added here needs no change there. Schema ``DASHBOARD_SCHEMA``.
Must not: use Spark (rows in, a dict out), so that it is tested on plain data.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

DASHBOARD_SCHEMA = "trio-broker.dashboard/1"
TOP_REQUESTS = 6

Row = Mapping[str, Any]


def _epoch(t: Any) -> int:
    """Epoch seconds of a bucket start (given as epoch seconds, or an aware datetime)."""
    if isinstance(t, dt.datetime):
        if t.tzinfo is None:
            raise ValueError("a naive datetime is ambiguous: give epoch seconds")
        return int(t.timestamp())
    return int(t)


def _round(v: Any) -> float | None:
    if v is None:
        return None
    return round(float(v), 4)


class _Series:
    """Values of several named series over one broker's time axis."""

    def __init__(self) -> None:
        self.values: dict[str, dict[int, float | None]] = defaultdict(dict)

    def put(self, name: str, t: int, value: Any) -> None:
        self.values[name][t] = _round(value)

    def chart(
        self, axis: Sequence[int], cid: str, title: str, unit: str, names: Iterable[str]
    ) -> dict[str, Any]:
        series = [
            {"label": n, "values": [self.values[n].get(t) for t in axis]}
            for n in names
            if n in self.values
        ]
        return {"id": cid, "title": title, "unit": unit, "series": series}


def build_dashboard(
    *,
    requests: Iterable[Row],
    pools: Iterable[Row],
    connections: Iterable[Row],
    trends: Iterable[Row],
    bucket_s: int,
    trend_window_s: int,
    generated_at: str,
    input_report: Mapping[str, Any],
) -> dict[str, Any]:
    by_broker: dict[int, dict[str, _Series]] = defaultdict(lambda: defaultdict(_Series))
    axes: dict[int, set[int]] = defaultdict(set)
    volume: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    for r in requests:
        b, t, name = int(r["broker_id"]), _epoch(r["time"]), str(r["request"])
        axes[b].add(t)
        s = by_broker[b]
        s["request_rate"].put(name, t, r.get("request_rate"))
        s["error_rate"].put(name, t, r.get("error_rate"))
        s["queue_p99"].put(name, t, r.get("queue_p99_ms"))
        s["total_p99"].put(name, t, r.get("total_p99_ms"))
        volume[b][name] += float(r.get("requests") or 0)
    for r in pools:
        b, t, name = int(r["broker_id"]), _epoch(r["time"]), str(r["pool"])
        axes[b].add(t)
        by_broker[b]["idle_ratio"].put(name, t, r.get("idle_ratio"))
        by_broker[b]["pool_size"].put(name, t, r.get("size"))
        if r.get("queue_size_avg") is not None:
            by_broker[b]["queue_depth"].put(f"{name} queue", t, r.get("queue_size_avg"))
    for r in connections:
        b, t = int(r["broker_id"]), _epoch(r["time"])
        axes[b].add(t)
        conns = by_broker[b]["connections"]
        conns.put("open", t, r.get("connections_avg"))
        conns.put("muted", t, r.get("muted_max"))
        conns.put("throttled", t, r.get("throttled_max"))
    for r in trends:
        b, t = int(r["broker_id"]), _epoch(r["time"])
        if r["metric"] == "queue_mean_ms" and r["subject"] == "*":
            by_broker[b]["queue_trend"].put("queue time slope", t, r.get("slope_per_min"))
            by_broker[b]["queue_mean"].put("all requests", t, r.get("value"))
        elif r["metric"] == "idle_ratio":
            by_broker[b]["idle_trend"].put(str(r["subject"]), t, r.get("slope_per_min"))

    brokers = []
    for b in sorted(by_broker):
        axis = sorted(axes[b])
        s = by_broker[b]
        top = sorted(volume[b], key=lambda n: (-volume[b][n], n))[:TOP_REQUESTS]
        pool_names = sorted(s["idle_ratio"].values, key=lambda n: (n != "io", n))
        window_min = trend_window_s // 60
        charts = [
            s["request_rate"].chart(axis, "request_rate", "Requests per second", "req/s", top),
            s["queue_mean"].chart(
                axis, "queue_mean", "Queue time, mean over all requests", "ms", ["all requests"]
            ),
            s["queue_p99"].chart(axis, "queue_p99", "Queue time p99", "ms", top),
            s["total_p99"].chart(axis, "total_p99", "Total time p99", "ms", top),
            s["idle_ratio"].chart(axis, "idle_ratio", "Pool idle ratio", "ratio", pool_names),
            s["pool_size"].chart(axis, "pool_size", "Pool size", "threads", pool_names),
            s["queue_depth"].chart(
                axis,
                "queue_depth",
                "Request queue depth",
                "requests",
                sorted(s["queue_depth"].values),
            ),
            s["queue_trend"].chart(
                axis,
                "queue_trend",
                f"Queue time trend ({window_min} min slope)",
                "ms/min",
                ["queue time slope"],
            ),
            s["idle_trend"].chart(
                axis,
                "idle_trend",
                f"Idle ratio trend ({window_min} min slope)",
                "1/min",
                sorted(s["idle_trend"].values, key=lambda n: (n != "io", n)),
            ),
            s["connections"].chart(
                axis, "connections", "Connections", "count", ["open", "muted", "throttled"]
            ),
            s["error_rate"].chart(axis, "error_rate", "Errors per second", "err/s", top),
        ]
        brokers.append(
            {
                "broker_id": b,
                "time": axis,
                "charts": [c for c in charts if c["series"]],
            }
        )
    first = min((min(a) for a in axes.values() if a), default=None)
    last = max((max(a) for a in axes.values() if a), default=None)
    return {
        "schema": DASHBOARD_SCHEMA,
        "generated_at": generated_at,
        "bucket_s": bucket_s,
        "trend_window_s": trend_window_s,
        "range": {"from": first, "to": None if last is None else last + bucket_s},
        "input": dict(input_report),
        "brokers": brokers,
    }
