"""Rows of the ``brokers`` and ``partitions`` tables (issue 32's contract), made by hand for
the balance job's tests: a cluster described by its brokers (rack, loop busy, io idle,
disk) and partitions (replicas, leader, rates, log size), repeated over a few buckets.

Each bucket has one row per broker and one per partition replica; a follower's
replication bytes in are its leader's bytes in, a leader's replication bytes out its
bytes in times its followers, and a broker's rates the sums over its replicas."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Five one-minute buckets that cross midnight: the tables have two dates.
T0 = dt.datetime(2025, 3, 1, 23, 57, tzinfo=dt.UTC)
BUCKET_S = 60
Key = tuple[str, int]


@dataclass
class P:
    replicas: list[int]
    leader: int | None = None  # default: the first replica
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    produce_rps: float = 0.0
    fetch_rps: float = 0.0
    size: int = 0


@dataclass
class B:
    rack: str | None = None
    loop_busy: float = 0.2
    io_idle: float = 0.9
    disk_total: int | None = 10**12
    disk_extra: int = 0  # bytes on the disk beyond the partitions' logs
    buckets: list[int] | None = None  # buckets it has rows in (default: every one)
    figures: dict[str, Any] = field(default_factory=dict)


def rows(
    brokers: Mapping[int, B], partitions: Mapping[Key, P], buckets: int = 5
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    brows: list[dict[str, Any]] = []
    prows: list[dict[str, Any]] = []
    for i in range(buckets):
        t = T0 + dt.timedelta(seconds=i * BUCKET_S)
        per_broker: dict[int, list[dict[str, Any]]] = {b: [] for b in brokers}
        for (topic, part), p in sorted(partitions.items()):
            leader = p.replicas[0] if p.leader is None else p.leader
            followers = [r for r in p.replicas if r != leader]
            for r in p.replicas:
                lead = r == leader
                row = {
                    "bucket": t,
                    "broker_id": r,
                    "topic": topic,
                    "partition": part,
                    "role": "leader" if lead else "follower",
                    "leader": leader,
                    "replicas": list(p.replicas),
                    "bytes_in_per_s": p.bytes_in if lead else 0.0,
                    "bytes_out_per_s": p.bytes_out if lead else 0.0,
                    "messages_in_per_s": p.bytes_in / 100 if lead else 0.0,
                    "produce_requests_per_s": p.produce_rps if lead else 0.0,
                    "fetch_requests_per_s": p.fetch_rps if lead else 0.0,
                    "replication_bytes_in_per_s": 0.0 if lead else p.bytes_in,
                    "replication_bytes_out_per_s": p.bytes_in * len(followers) if lead else 0.0,
                    "log_size_bytes": p.size,
                    "log_end_offset": 1000 + i,
                    "lag_messages": 0,
                }
                if r in per_broker and _present(brokers[r], i):
                    prows.append(row)
                    per_broker[r].append(row)
        for b, spec in sorted(brokers.items()):
            if not _present(spec, i):
                continue
            mine = per_broker[b]
            brows.append(
                {
                    "bucket": t,
                    "broker_id": b,
                    "rack": spec.rack,
                    "loop_busy_ratio": spec.loop_busy,
                    "io_idle_ratio": spec.io_idle,
                    "network_idle_ratio": 0.9,
                    "request_queue_p99_ms": 1.0,
                    **{
                        k: sum(r[k] for r in mine)
                        for k in (
                            "bytes_in_per_s",
                            "bytes_out_per_s",
                            "messages_in_per_s",
                            "replication_bytes_in_per_s",
                            "replication_bytes_out_per_s",
                        )
                    },
                    "leaders": sum(1 for r in mine if r["role"] == "leader"),
                    "replicas": len(mine),
                    "disk_used_bytes": sum(r["log_size_bytes"] for r in mine) + spec.disk_extra,
                    "disk_total_bytes": spec.disk_total,
                    "disk_free_bytes": None
                    if spec.disk_total is None
                    else spec.disk_total - sum(r["log_size_bytes"] for r in mine),
                    **spec.figures,
                }
            )
    return brows, prows


def _present(spec: B, bucket: int) -> bool:
    return spec.buckets is None or bucket in spec.buckets


def skewed(partitions: int = 12, rf: int = 3) -> tuple[dict[int, B], dict[Key, P]]:
    """Three brokers, every partition led by broker 0, whose disk is slow (its io threads
    almost never idle); the others are mostly idle."""
    brokers = {0: B(loop_busy=0.5, io_idle=0.03), 1: B(loop_busy=0.2), 2: B(loop_busy=0.2)}
    parts = {
        ("orders", i): P(
            replicas=[0, *[(i + k) % 2 + 1 for k in range(rf - 1)]],
            bytes_in=50_000.0,
            bytes_out=20_000.0,
            produce_rps=400.0,
            fetch_rps=20.0,
            size=5_000_000,
        )
        for i in range(partitions)
    }
    return brokers, parts
