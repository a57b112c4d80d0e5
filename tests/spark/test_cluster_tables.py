"""The trends job's ``brokers`` and ``partitions`` tables on made-up snapshots whose rates are
known: broker 0 leads partition 0 (and from the second minute partition 1, new), broker 1
follows partition 0 and restarts. A rate is a counter's increase over the uptime between
consecutive snapshots; a pair across a restart, or a replica the earlier snapshot did not
have, gives none."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_jobs import trends
from spark_jobs.cluster_tables import BROKER_COLUMNS, PARTITION_COLUMNS
from tests.support.metrics import validate_snapshot

from .synthetic import FakeBroker, dist, write_jsonl

TICKS = 11  # 10 s apart: 23:50:10 to 23:51:50, buckets of one minute
NEW_AT = 6  # partition 1 appears in broker 0's sixth snapshot (23:51:00)
RESTART_AFTER = 8  # broker 1 restarts after its eighth snapshot
LEAD = {
    "messages_in": 10,
    "bytes_in": 1000,
    "bytes_out": 500,
    "produce_requests": 2,
    "fetch_requests": 5,
    "replication_bytes_out": 1000,
}  # per second, on partition 0
NEW = {"messages_in": 1, "bytes_in": 100}  # per second, on partition 1
FOLLOW = {"replication_bytes_in": 1000}  # per second, broker 1 on partition 0
ZERO = dict.fromkeys(
    ("messages_in", "bytes_in", "bytes_out", "produce_requests", "fetch_requests",
     "replication_bytes_in", "replication_bytes_out"), 0
)  # fmt: skip


def replica(partition: int, role: str, counters: dict[str, int], size: int) -> dict[str, Any]:
    return {
        "topic": "t",
        "partition": partition,
        "leader": 0,
        "role": role,
        "replicas": [0, 1],
        "isr": [0, 1],
        "log_size_bytes": size,
        "log_start_offset": 0,
        "log_end_offset": size // 100,
        "high_watermark": size // 100,
        **counters,
        "lag_messages": 0 if role == "leader" else 3,
        "follower_lag_messages": {"1": 0} if role == "leader" else {},
    }


def with_load(snap: dict[str, Any], parts: list[dict[str, Any]], busy: float) -> dict[str, Any]:
    snap = copy.deepcopy(snap)
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
    snap["cluster"] = {"mode": "zookeeper", "broker_id": snap["broker_id"], "rack": "r1"}
    snap["partitions"] = parts
    size = sum(p["log_size_bytes"] for p in parts)
    snap["log_dirs"] = [
        {"path": "/d1", "size_bytes": size, "total_bytes": 1000, "free_bytes": 400},
        {"path": "/d2", "size_bytes": 0, "total_bytes": 1000, "free_bytes": 600},
    ]
    return snap


def add(counters: dict[str, int], per_s: dict[str, int], seconds: int) -> dict[str, int]:
    return {k: v + per_s.get(k, 0) * seconds for k, v in counters.items()}


def scenario(scraped: Path) -> None:
    b0, b1 = FakeBroker(0), FakeBroker(1)
    lead, new, follow = dict(ZERO), dict(ZERO), dict(ZERO)
    lines0, lines1 = [], []
    for i in range(1, TICKS + 1):
        lead = add(lead, LEAD, 10)
        parts = [replica(0, "leader", lead, lead["bytes_in"])]
        if i >= NEW_AT:
            new = add(new, NEW, 10) if i > NEW_AT else dict(ZERO, messages_in=7, bytes_in=700)
            parts.append(replica(1, "leader", new, new["bytes_in"]))
        lines0.append(with_load(b0.tick(10, io_idle=0.7, net_idle=0.9), parts, busy=0.25))
        follow = add(follow, FOLLOW, 10)
        lines1.append(
            with_load(
                b1.tick(10, io_idle=0.5, net_idle=0.6),
                [replica(0, "follower", follow, follow["replication_bytes_in"])],
                busy=0.5,
            )
        )
        if i == RESTART_AFTER:
            b1.restart(after_s=0)  # uptime and counters from zero
            follow = dict(ZERO)
    validate_snapshot(lines0[-1])
    validate_snapshot(lines1[0])
    write_jsonl(scraped / "broker=0" / "all.jsonl", lines0)
    write_jsonl(scraped / "broker=1" / "all.jsonl", lines1)


@pytest.fixture(scope="module")
def out(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("cluster_tables")
    scenario(base / "scraped")
    report = trends.run(spark, str(base / "scraped"), str(base / "out"), bucket_s=60)  # type: ignore[arg-type]
    assert report["tables"]["brokers"] == 4 and report["tables"]["partitions"] == 5
    yield base / "out"


def rows(out: Path, table: str, **where: Any) -> list[dict[str, Any]]:
    found = pq.read_table(out / table).to_pylist()
    picked = [r for r in found if all(r[k] == v for k, v in where.items())]
    return sorted(picked, key=lambda r: r["bucket"])


def test_tables_have_the_contracts_columns_by_date(out: Path) -> None:
    for table, columns in (("brokers", BROKER_COLUMNS), ("partitions", PARTITION_COLUMNS)):
        assert [p.name for p in (out / table).iterdir() if p.is_dir()] == ["date=2025-03-01"]
        assert set(pq.read_table(out / table).column_names) == set(columns)


def test_a_leaders_partition_rates_are_its_counters_over_the_uptime(out: Path) -> None:
    first, second = rows(out, "partitions", broker_id=0, partition=0)
    # The first snapshot has no predecessor: the first minute's rates cover 40 s of 50.
    assert (first["snapshots"], first["seconds"], second["seconds"]) == (5, 40.0, 60.0)
    for r in (first, second):
        for k, per_s in LEAD.items():
            assert r[f"{k}_per_s"] == pytest.approx(per_s), k
        assert r["replication_bytes_in_per_s"] == 0.0
        assert (r["role"], r["leader"], r["replicas"], r["lag_messages"]) == (
            "leader",
            0,
            [0, 1],
            0,
        )
    assert second["log_end_offset"] == TICKS * 10 * 1000 // 100


def test_a_new_replica_and_a_restart_give_no_rate_for_their_pair(out: Path) -> None:
    (p1,) = rows(out, "partitions", broker_id=0, partition=1)
    # Seen from 23:51:00: its first pair has no earlier snapshot of it, 5 pairs remain.
    assert (p1["snapshots"], p1["seconds"]) == (6, 50.0)
    assert p1["messages_in_per_s"] == pytest.approx(1.0)
    assert p1["bytes_in_per_s"] == pytest.approx(100.0)
    first, second = rows(out, "partitions", broker_id=1)
    assert first["replication_bytes_in_per_s"] == pytest.approx(1000.0)
    # The pair across the restart (23:51:20 -> 23:51:30) gives none; the other five do.
    assert second["seconds"] == 50.0
    assert second["replication_bytes_in_per_s"] == pytest.approx(1000.0)
    assert second["messages_in_per_s"] == 0.0 and second["role"] == "follower"
    assert second["lag_messages"] == 3


def test_a_brokers_rates_are_its_replicas_summed_and_its_load_averaged(out: Path) -> None:
    first, second = rows(out, "brokers", broker_id=0)
    assert first["bytes_in_per_s"] == pytest.approx(1000.0)
    # Second minute: 60 s of partition 0, 50 s of partition 1 (its first pair has no rate).
    assert second["bytes_in_per_s"] == pytest.approx((60 * 1000 + 50 * 100) / 60)
    assert second["messages_in_per_s"] == pytest.approx((60 * 10 + 50 * 1) / 60)
    assert second["replication_bytes_out_per_s"] == pytest.approx(1000.0)
    assert second["bytes_out_per_s"] == pytest.approx(500.0)
    assert (first["leaders"], first["replicas"], second["leaders"], second["replicas"]) == (
        1, 1, 2, 2
    )  # fmt: skip
    assert second["loop_busy_ratio"] == pytest.approx(0.25)
    assert second["io_idle_ratio"] == pytest.approx(0.7)
    assert second["network_idle_ratio"] == pytest.approx(0.9)
    assert second["request_queue_p99_ms"] == pytest.approx(4.0)
    assert second["rack"] == "r1"
    size = TICKS * 10 * 1000 + (7 + (TICKS - NEW_AT) * 10) * 100
    assert second["disk_used_bytes"] == size
    assert (second["disk_total_bytes"], second["disk_free_bytes"]) == (2000, 1000)
    f1, f2 = rows(out, "brokers", broker_id=1)
    assert f1["replication_bytes_in_per_s"] == f2["replication_bytes_in_per_s"] == 1000.0
    assert f2["seconds"] == 50.0 and f2["bytes_in_per_s"] == 0.0
    assert (f2["leaders"], f2["replicas"], f2["loop_busy_ratio"]) == (0, 1, 0.5)
