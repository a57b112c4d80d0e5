"""A skewed three-broker cluster as the cluster scraper would have written it: snapshots with
per-partition counters whose rates are known, for the tests that run the trends job and
then the balance job over its ``brokers`` and ``partitions`` tables.

Broker 0 leads all ``PARTITIONS`` partitions of topic ``t`` (replication factor 2, the
follower broker 1 for even partitions and 2 for odd ones) and is the busy one. Partition
``p`` takes ``bytes_in = 1000 * (p + 1)`` bytes/s (``RATES``), and so on; every follower
appends what its leader took (``replication_bytes_in`` = the leader's ``bytes_in``, the
leader's ``replication_bytes_out`` the same: one follower). Snapshots every 10 s from
23:50:10 to 23:52:10: one-minute buckets of 40, 60 and 10+10 s of pairs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.support.metrics import validate_snapshot

from .synthetic import FakeBroker, dist, write_jsonl

PARTITIONS = 6
TICKS = 13
STEP_S = 10
COUNTERS = (
    "messages_in",
    "bytes_in",
    "bytes_out",
    "produce_requests",
    "fetch_requests",
    "replication_bytes_in",
    "replication_bytes_out",
)
LOAD = {0: (0.6, 0.2), 1: (0.1, 0.9), 2: (0.15, 0.85)}  # broker: (loop busy, io idle)
BASE_SIZE = 50_000  # each log's bytes before the first snapshot


def follower(p: int) -> int:
    return 1 + p % 2


def rates(p: int) -> dict[str, int]:
    """The leader's per-second counters of partition ``p``."""
    n = p + 1
    return {
        "messages_in": 10 * n,
        "bytes_in": 1000 * n,
        "bytes_out": 500 * n,
        "produce_requests": 2 * n,
        "fetch_requests": 5,
        "replication_bytes_in": 0,
        "replication_bytes_out": 1000 * n,
    }


def follower_rates(p: int) -> dict[str, int]:
    return {c: (1000 * (p + 1) if c == "replication_bytes_in" else 0) for c in COUNTERS}


def log_size(p: int, tick: int) -> int:
    return BASE_SIZE + 1000 * (p + 1) * STEP_S * tick


def _replica(p: int, role: str, tick: int, per_s: dict[str, int]) -> dict[str, Any]:
    size = log_size(p, tick)
    return {
        "topic": "t",
        "partition": p,
        "leader": 0,
        "role": role,
        "replicas": [0, follower(p)],
        "isr": [0, follower(p)],
        "log_size_bytes": size,
        "log_start_offset": 0,
        "log_end_offset": size // 100,
        "high_watermark": size // 100,
        **{c: per_s[c] * STEP_S * tick for c in COUNTERS},
        "lag_messages": 0,
        "follower_lag_messages": {str(follower(p)): 0} if role == "leader" else {},
    }


def _snapshot(b: FakeBroker, tick: int) -> dict[str, Any]:
    busy, io_idle = LOAD[b.broker_id]
    snap = copy.deepcopy(b.tick(STEP_S, io_idle=io_idle, net_idle=io_idle))
    if b.broker_id == 0:
        parts = [_replica(p, "leader", tick, rates(p)) for p in range(PARTITIONS)]
    else:
        parts = [
            _replica(p, "follower", tick, follower_rates(p))
            for p in range(PARTITIONS)
            if follower(p) == b.broker_id
        ]
    snap["event_loop"] = {
        "busy_ratio": busy,
        "stall_ms": dist({}, 0, 0.0),
        "last_second": {"busy_ratio": busy, "stall_p99_ms": 0.0, "stall_max_ms": 0.0},
    }
    snap["all_requests"] = {
        "count": 10,
        "queue_time_ms": dist({"p50": 1.0, "p99": 4.0, "window_count": 10}, 10, 10.0),
        "total_time_ms": dist({"p50": 2.0, "p99": 8.0, "window_count": 10}, 10, 20.0),
    }
    snap["cluster"] = {"mode": "zookeeper", "broker_id": b.broker_id, "rack": None}
    snap["partitions"] = parts
    used = sum(p["log_size_bytes"] for p in parts)
    snap["log_dirs"] = [
        {"path": "d", "size_bytes": used, "total_bytes": 10**12, "free_bytes": 10**12 - used}
    ]
    return snap


def write(scraped: Path) -> None:
    """The three brokers' snapshots under ``scraped/broker=N/``, as the scraper lays them."""
    for i in LOAD:
        b = FakeBroker(i)
        lines: list[dict[str, Any] | str] = [_snapshot(b, t) for t in range(1, TICKS + 1)]
        validate_snapshot(lines[-1])  # type: ignore[arg-type]
        write_jsonl(scraped / f"broker={i}" / "all.jsonl", lines)
