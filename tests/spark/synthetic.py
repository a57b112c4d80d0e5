"""Snapshots of a made-up broker, valid against docs/metrics.schema.json, for the jobs' tests.

``FakeBroker`` keeps cumulative counters as the broker does and advances them by what a
test says happened in each interval (requests per type, their queue and local times, pool
idle ratios, queue depth, connections), so a test knows the exact rates, means and idle
ratios the jobs must find. ``restart`` starts it again from zero (uptime and counters).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

T0 = dt.datetime(2025, 3, 1, 23, 50, 0, tzinfo=dt.UTC)  # crosses midnight: two dates


def iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dist(values: Mapping[str, float], count: int, total: float) -> dict[str, Any]:
    p50 = values.get("p50", 0.0)
    p99 = values.get("p99", p50)
    return {
        "p50": p50,
        "p75": p50,
        "p95": p99,
        "p99": p99,
        "p999": p99,
        "max": p99,
        "window_count": int(values.get("window_count", 1 if p50 else 0)),
        "count": count,
        "sum": round(total, 3),
    }


@dataclass
class _Type:
    count: int = 0
    errors: int = 0
    bytes: int = 0
    sums: dict[str, float] = field(default_factory=dict)


@dataclass
class FakeBroker:
    broker_id: int = 0
    io_size: int = 8
    network: dict[str, int] = field(default_factory=lambda: {"PLAINTEXT": 3})
    now: dt.datetime = T0
    uptime: float = 100.0
    seq: int = 0
    created: int = 0
    closed: int = 0
    types: dict[str, _Type] = field(default_factory=dict)

    def restart(self, after_s: float = 5.0) -> None:
        self.now += dt.timedelta(seconds=after_s)
        self.uptime = 0.5
        self.seq = 0
        self.created = self.closed = 0
        self.types = {}

    def tick(
        self,
        seconds: float,
        *,
        requests: Mapping[str, int] | None = None,
        errors: Mapping[str, int] | None = None,
        queue_ms: Mapping[str, float] | None = None,
        local_ms: Mapping[str, float] | None = None,
        io_idle: float = 0.9,
        net_idle: float = 0.95,
        queue_depth: int = 0,
        connections: int = 4,
        muted: int = 0,
        throttled: int = 0,
        new_connections: int = 0,
    ) -> dict[str, Any]:
        """Advance ``seconds`` during which these requests completed; the snapshot after."""
        self.now += dt.timedelta(seconds=seconds)
        self.uptime += seconds
        self.seq += 1
        self.created += new_connections
        queue_ms, local_ms = queue_ms or {}, local_ms or {}
        for name, n in (requests or {}).items():
            t = self.types.setdefault(name, _Type())
            t.count += n
            t.errors += (errors or {}).get(name, 0)
            t.bytes += 100 * n
            for kind, per in (
                ("queue", queue_ms.get(name, 0.1)),
                ("local", local_ms.get(name, 1.0)),
            ):
                t.sums[kind] = t.sums.get(kind, 0.0) + per * n
            t.sums["total"] = t.sums["queue"] + t.sums["local"]
        reqs: dict[str, Any] = {}
        for name, t in self.types.items():
            q = queue_ms.get(name, 0.1)
            lo = local_ms.get(name, 1.0)
            active = (requests or {}).get(name, 0) > 0
            w = (
                (lambda v: {"p50": v, "p99": v * 2, "window_count": 10})
                if active
                else (lambda v: {})
            )
            empty = dist({}, 0, 0.0)
            reqs[name] = {
                "count": t.count,
                "errors": t.errors,
                "closed": 0,
                "bytes": t.bytes,
                "handler_time_ms": round(t.sums.get("local", 0.0), 3),
                "rate_per_s": 0.0,
                "versions": {"9": t.count},
                "errors_by_code": {"NONE": t.count - t.errors, "UNKNOWN_SERVER_ERROR": t.errors},
                "queue_time_ms": dist(w(q), t.count, t.sums.get("queue", 0.0)),
                "local_time_ms": dist(w(lo), t.count, t.sums.get("local", 0.0)),
                "remote_time_ms": empty | {"count": t.count},
                "throttle_time_ms": empty | {"count": t.count},
                "response_queue_time_ms": empty | {"count": t.count},
                "response_send_time_ms": empty | {"count": t.count},
                "total_time_ms": dist(w(q + lo), t.count, t.sums.get("total", 0.0)),
            }
        busy = round(self.io_size * (1 - io_idle))
        return {
            "schema": "trio-broker.metrics/1",
            "broker_id": self.broker_id,
            "seq": self.seq,
            "ts": iso(self.now),
            "uptime_s": round(self.uptime, 3),
            "window_s": min(60.0, round(self.uptime, 3)),
            "metrics_enabled": True,
            "pools": {
                "io": {
                    "plane": "data",
                    "size": self.io_size,
                    "busy": busy,
                    "idle_ratio": io_idle,
                    "handlers": [
                        {"id": i, "idle_ratio": io_idle, "busy": i < busy}
                        for i in range(self.io_size)
                    ],
                    "request_share": {},
                },
                "network": {
                    name: {
                        "plane": "data",
                        "size": size,
                        "idle_ratio": net_idle,
                        "processors": [
                            {
                                "id": i,
                                "idle_ratio": net_idle,
                                "connections": 1,
                                "response_queue_size": 0,
                            }
                            for i in range(size)
                        ],
                    }
                    for name, size in self.network.items()
                },
            },
            "request_queue": {"data": {"size": queue_depth, "capacity": 500}},
            "response_queue": {"size": 0, "by_listener": dict.fromkeys(self.network, 0)},
            "connections": {
                "count": connections,
                "created": self.created,
                "closed": self.closed,
                "rejected": 0,
                "reaped": 0,
                "evicted": 0,
                "muted": muted,
                "throttled": throttled,
                "by_mute_state": {"NOT_MUTED": connections - muted, "MUTED": muted},
                "by_listener": dict.fromkeys(self.network, connections),
                "bad_requests": {},
            },
            "requests": reqs,
            "topics": {
                "all": {
                    "messages_in": 0,
                    "bytes_in": 0,
                    "bytes_out": 0,
                    "failed_produce_requests": 0,
                    "failed_fetch_requests": 0,
                },
                "by_topic": {},
            },
            "purgatories": {"fetch": {"size": 0, "completed": 0, "expired": 0}},
            "memory_pool": {"capacity_bytes": -1, "available_bytes": None, "used_bytes": None},
            "log": {"flush_time_ms": dist({}, 0, 0.0)},
        }


def write_jsonl(path: Path, lines: list[dict[str, Any] | str]) -> None:
    """Snapshots (dicts) and raw lines (str) as one JSON Lines file, as the scraper writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
