"""The advisor's clients' side on hand-made trend rows (no Spark; the real workload is in
``test_clients.py``): client-bound advice when the producers' own time dominates and the
pools idle, changing no pool; an io raise that carries the clients' latency as evidence;
and, with no client telemetry, a plain statement and the broker's advice unchanged."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs import advise
from spark_jobs.advise import Thresholds

from .test_advise import T0, tables, write_tables

TH = Thresholds()


def path_rows(client_id: str, queue: float, request: float, broker: float) -> list[dict[str, Any]]:
    return [
        {
            "client_id": client_id,
            "time": T0 + dt.timedelta(minutes=i),
            "bucket_s": 60,
            "pushes": 12,
            "client_queue_ms": queue,
            "client_request_ms": request,
            "wire_ms": request - broker,
            "broker_queue_ms": broker / 4,
            "broker_local_ms": broker / 2,
            "broker_rest_ms": broker / 4,
            "broker_total_ms": broker,
            "broker_requests": 600,
        }
        for i in range(10)
    ]


def write_path(out: Path, rows: list[dict[str, Any]]) -> None:
    d = out / "produce_path" / "date=2025-03-01"
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), d / "part.parquet")


def test_clients_time_dominating_with_idle_pools_is_client_bound_and_changes_no_pool(
    tmp_path: Path,
) -> None:
    write_tables(tmp_path, tables([(4, 0.7)] * 10, [0.5] * 10))  # idle pools, no queue
    write_path(tmp_path, path_rows("batcher", queue=30.0, request=12.0, broker=3.0))
    doc = advise.run(tmp_path, TH, now=T0 + dt.timedelta(hours=1))
    assert doc["recommendations"] == []
    c = doc["clients"]
    assert c["status"] == "client-bound"
    [f] = c["findings"]
    assert f["client_id"] == "batcher" and f["status"] == "advice"
    assert {"linger.ms", "batch.size", "max.in.flight.requests.per.connection"} <= set(
        f["settings"]
    )
    assert "linger.ms" in f["text"] and "batcher" in f["text"]
    ev = f["evidence"]
    assert ev["client_queue_ms"] == 30.0 and ev["broker_total_ms"] == 3.0
    assert ev["client_wait_ms"] == 30.0 + 9.0 and ev["broker_queue_ms"] == 0.75
    assert ev["client_share"] == round((42.0 - 3.0) / 42.0, 3)
    assert ev["buckets"] == 10


def test_a_busy_io_pool_is_raised_as_before_with_the_clients_latency_as_evidence(
    tmp_path: Path,
) -> None:
    write_tables(tmp_path, tables([(4, 0.02)] * 10, [40.0] * 10))
    write_path(tmp_path, path_rows("sync", queue=0.1, request=45.0, broker=42.0))
    doc = advise.run(tmp_path, TH, now=T0 + dt.timedelta(hours=1))
    [rec] = doc["recommendations"]
    assert rec["setting"] == "num.io.threads" and rec["action"] == "raise"
    ev = rec["evidence"]["clients"]["sync"]
    assert ev["client_request_ms"] == 45.0 and ev["buckets"] == 10
    assert ev["broker_queue_ms"] == 10.5 and ev["broker_total_ms"] == 42.0
    assert ev["client_wait_ms"] == 0.1 + 3.0  # its queue and the wire
    # the reason cites them: the clients' latency against the broker's queue
    assert "storage work waits for an io thread" in rec["reason"]
    assert (
        "the clients' telemetry (1 producer): 45.0 ms per produce request, against 10.5 ms "
        "in the broker's queue, 3.1 ms on their own side (queue and wire)"
    ) in rec["reason"], rec["reason"]
    assert doc["clients"]["status"] == "broker-side" and doc["clients"]["findings"] == []


def test_a_wait_not_above_the_brokers_queue_time_is_not_client_bound(tmp_path: Path) -> None:
    write_tables(tmp_path, tables([(4, 0.7)] * 10, [0.5] * 10))
    # waits 1.5 ms on the client's side, the broker's queue 1.0 ms: under 2x
    write_path(tmp_path, path_rows("near", queue=0.5, request=5.0, broker=4.0))
    doc = advise.run(tmp_path, TH, now=T0 + dt.timedelta(hours=1))
    assert doc["clients"]["status"] == "broker-side" and doc["clients"]["findings"] == []
    assert doc["clients"]["clients"][0]["client_wait_ms"] == 1.5


def test_clients_time_dominating_is_not_client_bound_while_a_pool_is_busy(
    tmp_path: Path,
) -> None:
    write_tables(tmp_path, tables([(4, 0.02)] * 10, [40.0] * 10))
    write_path(tmp_path, path_rows("batcher", queue=300.0, request=60.0, broker=42.0))
    doc = advise.run(tmp_path, TH, now=T0 + dt.timedelta(hours=1))
    assert [r["setting"] for r in doc["recommendations"]] == ["num.io.threads"]
    assert doc["clients"]["findings"] == []


def test_without_client_telemetry_it_says_so_and_advises_as_before(tmp_path: Path) -> None:
    write_tables(tmp_path, tables([(4, 0.02)] * 10, [40.0] * 10))
    doc = advise.run(tmp_path, TH, now=T0 + dt.timedelta(hours=1))
    assert doc["clients"]["status"] == "no-telemetry"
    assert "no client pushed telemetry" in doc["clients"]["text"]
    [rec] = doc["recommendations"]
    assert rec["setting"] == "num.io.threads" and "clients" not in rec["evidence"]
