"""The ``brokers`` and ``partitions`` tables measured from a live cluster: for clusters
(and proofs) whose trends job does not write them.

    python -m spark_jobs.balance.sample --admin URL [--admin URL ...] --out TRENDS
        [--seconds 20] [--interval 5]

Owns ``Reading`` (one moment of the cluster: every broker's metrics snapshot over its
admin API, ``GET /v1/cluster``, log sizes and disks from DescribeLogDirs, latest offsets
from ListOffsets), ``rows_between`` (one bucket of both tables from two readings) and
``sample`` (buckets every ``interval`` seconds for ``seconds``).

Where the figures come from (a bucket covers the time between two readings; rates are
counter increases over the uptime that passed):

- a broker's ratios (loop busy, io and network idle) and its worst queue p99 are its own
  windowed figures at the end of the bucket (``metrics.window.seconds``); its byte and
  message rates come from ``topics.all``; leaders and replicas from ``GET /v1/cluster``;
  its disk from DescribeLogDirs (used: the sizes of its logs; total and free: the log
  dirs' file systems);
- a partition: when the snapshot has per-partition counters (``partitions``, metrics
  schema 1 as issue 32 extends it) they are used as they are. Otherwise they are
  **estimated**: the leader's topic counters (bytes in, bytes out, messages) and its
  Produce and Fetch request counts are shared among the partitions of that topic it leads
  in proportion to their latest-offset growth (ListOffsets); replication bytes out are
  the bytes in times the followers in sync, and each follower's replication bytes in the
  bytes in. The table says which (``sample_source`` in the report).

Must not: write anything but the two tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_jobs.balance.kafka_ops import KafkaOps
from spark_jobs.balance.live import AdminApi, ClusterView, LiveError, read_view
from spark_jobs.balance.model import Key
from spark_jobs.balance.tables import BROKERS, PARTITIONS, write_rows_arrow
from spark_jobs.fetch import token_from_env


@dataclass
class Reading:
    at: float  # wall clock, epoch seconds
    view: ClusterView
    snapshots: dict[int, dict[str, Any]]
    disks: dict[int, dict[str, Any]]
    offsets: dict[Key, int]


def read(view: ClusterView, kafka: KafkaOps, token: str | None) -> Reading:
    snapshots = {}
    for i, b in sorted(view.brokers.items()):
        if b.admin:
            try:
                snapshots[i] = AdminApi(b.admin, token).get("/v1/metrics")
            except LiveError:
                continue
    disks = kafka.log_dirs(view.brokers)
    keys = sorted(k for k, p in view.partitions.items() if int(p.get("leader", -1)) >= 0)
    try:
        offsets = kafka.latest_offsets(keys)
    except Exception:  # one partition without a leader fails the batch: ask one by one
        offsets = {}
        for k in keys:
            try:
                offsets.update(kafka.latest_offsets([k]))
            except Exception:
                continue
    return Reading(time.time(), view, snapshots, disks, offsets)


def _delta(a: Any, b: Any) -> float:
    """A cumulative counter's increase (from zero again after a restart)."""
    if b is None:
        return 0.0
    a, b = float(a or 0), float(b)
    return b - a if b >= a else b


def _seconds(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> float | None:
    if a is None:
        return None
    up_a, up_b = float(a["uptime_s"]), float(b["uptime_s"])
    return up_b - up_a if up_b > up_a else up_b


def _queue_p99(snapshot: Mapping[str, Any]) -> float | None:
    found = [
        float(r["queue_time_ms"]["p99"])
        for r in (snapshot.get("requests") or {}).values()
        if r.get("queue_time_ms", {}).get("p99") is not None
    ]
    return max(found) if found else None


def _network_idle(snapshot: Mapping[str, Any]) -> float | None:
    nets = (snapshot.get("pools") or {}).get("network") or {}
    found = [float(n["idle_ratio"]) for n in nets.values() if n.get("idle_ratio") is not None]
    return sum(found) / len(found) if found else None


def rows_between(a: Reading, b: Reading) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One bucket of both tables: what happened between readings ``a`` and ``b``."""
    bucket = float(int(b.at))
    view = b.view
    held: dict[int, list[Key]] = defaultdict(list)
    for k, p in view.partitions.items():
        for r in p["replicas"]:
            held[int(r)].append(k)
    partitions: dict[tuple[int, Key], dict[str, Any]] = {}
    estimated = _estimate(a, b)
    for k, p in sorted(view.partitions.items()):
        leader = int(p.get("leader", -1))
        for r in p["replicas"]:
            r = int(r)
            lead = r == leader
            figures = estimated.get((r, k), {})
            partitions[(r, k)] = {
                "bucket": bucket,
                "broker_id": r,
                "topic": k[0],
                "partition": k[1],
                "role": "leader" if lead else "follower",
                "leader": leader,
                "replicas": [int(x) for x in p["replicas"]],
                **figures,
                "log_size_bytes": b.disks.get(r, {}).get("sizes", {}).get(k),
                "log_end_offset": b.offsets.get(k) if lead else None,
                "lag_messages": None
                if lead
                else (view.partitions[k].get("follower_lag") or {}).get(str(r)),
            }
    brokers = []
    for i, snap in sorted(b.snapshots.items()):
        before = a.snapshots.get(i)
        dt = _seconds(before, snap)
        if not dt:
            continue
        topics_a = (before or {}).get("topics", {}).get("all", {})
        topics_b = snap.get("topics", {}).get("all", {})
        mine = [partitions[(i, k)] for k in held.get(i, []) if (i, k) in partitions]
        disk = b.disks.get(i, {})
        io = (snap.get("pools") or {}).get("io") or {}
        brokers.append(
            {
                "bucket": bucket,
                "broker_id": i,
                "rack": view.brokers[i].rack if i in view.brokers else None,
                "loop_busy_ratio": (snap.get("event_loop") or {}).get("busy_ratio"),
                "io_idle_ratio": io.get("idle_ratio"),
                "network_idle_ratio": _network_idle(snap),
                "request_queue_p99_ms": _queue_p99(snap),
                **{
                    f"{name}_per_s": _delta(topics_a.get(name), topics_b.get(name)) / dt
                    for name in ("bytes_in", "bytes_out", "messages_in")
                },
                "replication_bytes_in_per_s": sum(
                    r.get("replication_bytes_in_per_s") or 0.0 for r in mine
                ),
                "replication_bytes_out_per_s": sum(
                    r.get("replication_bytes_out_per_s") or 0.0 for r in mine
                ),
                "leaders": sum(1 for r in mine if r["role"] == "leader"),
                "replicas": len(mine),
                "disk_used_bytes": disk.get("used"),
                "disk_total_bytes": disk.get("total"),
                "disk_free_bytes": disk.get("usable"),
            }
        )
    return brokers, list(partitions.values())


def _estimate(a: Reading, b: Reading) -> dict[tuple[int, Key], dict[str, float | None]]:
    """Per (broker, partition): the rates of the bucket, from the snapshots' partition
    counters when they have them, else shared out of the topic counters (module doc)."""
    out: dict[tuple[int, Key], dict[str, float | None]] = {}
    for i, snap in b.snapshots.items():
        before = a.snapshots.get(i)
        dt = _seconds(before, snap)
        if not dt or before is None:
            continue
        if isinstance(snap.get("partitions"), list):
            out.update(_from_partition_counters(i, before, snap, dt))
            continue
        led = [k for k, p in b.view.partitions.items() if int(p.get("leader", -1)) == i]
        grown = {k: max(0, b.offsets.get(k, 0) - a.offsets.get(k, 0)) for k in led}
        by_topic: dict[str, list[Key]] = defaultdict(list)
        for k in led:
            by_topic[k[0]].append(k)
        requests_a, requests_b = before.get("requests") or {}, snap.get("requests") or {}

        def count(name: str, ra: Any = requests_a, rb: Any = requests_b) -> float:
            return _delta((ra.get(name) or {}).get("count"), (rb.get(name) or {}).get("count"))

        produce, fetch = count("Produce"), count("FetchConsumer")
        all_grown = sum(grown.values())
        topics_a = (before.get("topics") or {}).get("by_topic") or {}
        topics_b = (snap.get("topics") or {}).get("by_topic") or {}
        for t, keys in by_topic.items():
            ta, tb = topics_a.get(t) or {}, topics_b.get(t) or {}
            t_grown = sum(grown[k] for k in keys)
            for k in keys:
                share = grown[k] / t_grown if t_grown else 1.0 / len(keys)
                req_share = grown[k] / all_grown if all_grown else 0.0
                bytes_in = _delta(ta.get("bytes_in"), tb.get("bytes_in")) * share / dt
                p = b.view.partitions[k]
                followers = [int(r) for r in p.get("isr") or [] if int(r) != i]
                out[(i, k)] = {
                    "bytes_in_per_s": bytes_in,
                    "bytes_out_per_s": _delta(ta.get("bytes_out"), tb.get("bytes_out"))
                    * share
                    / dt,
                    "messages_in_per_s": _delta(ta.get("messages_in"), tb.get("messages_in"))
                    * share
                    / dt,
                    "produce_requests_per_s": produce * req_share / dt,
                    "fetch_requests_per_s": fetch * req_share / dt,
                    "replication_bytes_out_per_s": bytes_in * len(followers),
                    "replication_bytes_in_per_s": 0.0,
                }
                for f in followers:
                    out[(f, k)] = {"replication_bytes_in_per_s": bytes_in}
    return out


PARTITION_COUNTERS = (
    ("bytes_in", "bytes_in_per_s"),
    ("bytes_out", "bytes_out_per_s"),
    ("messages_in", "messages_in_per_s"),
    ("produce_requests", "produce_requests_per_s"),
    ("fetch_requests", "fetch_requests_per_s"),
    ("replication_bytes_in", "replication_bytes_in_per_s"),
    ("replication_bytes_out", "replication_bytes_out_per_s"),
)


def _from_partition_counters(
    broker: int, before: Mapping[str, Any], snap: Mapping[str, Any], dt: float
) -> dict[tuple[int, Key], dict[str, float | None]]:
    prev = {(str(p["topic"]), int(p["partition"])): p for p in before.get("partitions") or []}
    out: dict[tuple[int, Key], dict[str, float | None]] = {}
    for p in snap["partitions"]:
        k = (str(p["topic"]), int(p["partition"]))
        q = prev.get(k, {})
        out[(broker, k)] = {col: _delta(q.get(n), p.get(n)) / dt for n, col in PARTITION_COUNTERS}
    return out


def sample(
    admins: Sequence[str], token: str | None, seconds: float, interval: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """Buckets of both tables over ``seconds``, one every ``interval`` seconds, and which
    source the partition rates had."""
    view = read_view(admins, token)
    brokers: list[dict[str, Any]] = []
    partitions: list[dict[str, Any]] = []
    with KafkaOps(view.bootstrap) as kafka:
        prev = read(view, kafka, token)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline - 1e-3:
            time.sleep(max(0.0, min(interval, deadline - time.monotonic())))
            view = read_view(admins, token)
            cur = read(view, kafka, token)
            b, p = rows_between(prev, cur)
            brokers += b
            partitions += p
            prev = cur
    counters = any(isinstance(s.get("partitions"), list) for s in prev.snapshots.values())
    source = "per-partition counters" if counters else "estimated from topic counters"
    return brokers, partitions, source


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="balance.sample", description="The brokers and partitions tables, from a live cluster."
    )
    p.add_argument("--admin", action="append", required=True, help="admin API URL (repeatable)")
    p.add_argument("--out", type=Path, required=True, help="the tables' directory (TRENDS)")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--interval", type=float, default=5.0)
    p.add_argument("--token", help="admin bearer token (default: $TRIO_BROKER_ADMIN_TOKEN)")
    args = p.parse_args(argv)
    try:
        brokers, partitions, source = sample(
            args.admin, args.token or token_from_env(), args.seconds, args.interval
        )
    except LiveError as exc:
        print(f"sample: {exc}", file=sys.stderr)
        return 2
    write_rows_arrow(BROKERS, brokers, args.out)
    write_rows_arrow(PARTITIONS, partitions, args.out)
    print(
        f"sample: {len(brokers)} broker row(s), {len(partitions)} partition row(s) "
        f"(partition rates: {source}) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
