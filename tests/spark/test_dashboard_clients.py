"""The dashboard's clients panel from hand-made rows of the ``clients`` and
``produce_path`` tables (no Spark): the top clients by produce latency and by the bytes
the broker counted, a client known by its bytes alone, what a Java client reports of its
settings against librdkafka's nothing, and rows of a table from before the byte columns.
The page that draws it: tests/admin/test_dashboard.py; the real clients:
tests/spark/test_clients.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

from spark_jobs.dashboard_clients import NOT_REPORTED, TOP_CLIENTS, build_clients

T0 = dt.datetime(2025, 2, 19, 21, 0, tzinfo=dt.UTC)
LIB = ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0")


def row(client_id: str, minute: int, **figures: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "client_id": client_id,
        "time": T0 + dt.timedelta(minutes=minute),
        "bucket_s": 60,
        "kind": "producer",
        "software_name": LIB[0],
        "software_version": LIB[1],
        "instances": 1,
        "pushes": 12,
        "push_interval_ms": 5000,
        "produce_latency_avg_ms": None,
        "record_queue_time_avg_ms": None,
        "fetch_latency_avg_ms": None,
        "commit_latency_avg_ms": None,
        "batch_size_avg": None,
        "batch_size_max": None,
        "in_flight_avg": None,
        "buffer_total_bytes": None,
        "broker_bytes_in": None,
        "broker_bytes_out": None,
        "client_outgoing_bytes": None,
        "client_incoming_bytes": None,
        "client_outgoing_byte_rate": None,
        "client_incoming_byte_rate": None,
    }
    return {**base, **figures}


def test_the_top_clients_by_latency_and_by_bytes() -> None:
    rows = []
    for m in range(3):
        # slow and small, quick and big, and one whose pushes are rarer than the buckets
        rows.append(row("slow", m, produce_latency_avg_ms=40.0, broker_bytes_in=1_000))
        rows.append(
            row("big", m, produce_latency_avg_ms=2.0, broker_bytes_in=5_000_000, broker_bytes_out=9)
        )
        rows.append(row("quiet", m, kind=None, pushes=0, broker_bytes_in=2_000_000))
    rows.append(row("old", -60, broker_bytes_in=10**12))  # outside the window
    panel = build_clients(rows, [], window_s=600)
    assert [c["client_id"] for c in panel["clients"]] == ["slow", "big"]
    assert [c["client_id"] for c in panel["by_bytes"]] == ["big", "quiet", "slow"]
    big = panel["by_bytes"][0]
    assert (big["broker_bytes_in"], big["broker_bytes_out"]) == (15_000_000, 27)
    assert big["client_outgoing_bytes"] is None  # librdkafka pushes none: not 0
    slow = panel["by_bytes"][2]
    assert slow["broker_bytes_out"] is None  # no figure in any bucket: none invented
    assert panel["bytes_note"].startswith("Broker bytes in and out: the broker's own count")


def test_what_a_java_client_reports_and_librdkafka_does_not() -> None:
    java = [
        row(
            "j",
            m,
            software_name="apache-kafka-java",
            software_version="4.1.0",
            push_interval_ms=1000 + m,
            batch_size_avg=1000.0 + 100 * m,
            batch_size_max=2000.0 + m,
            in_flight_avg=1.0 + m,
            buffer_total_bytes=33554432.0,
            broker_bytes_in=100,
            client_outgoing_bytes=120.0,
            client_incoming_bytes=12.0,
            client_outgoing_byte_rate=2.0,
            client_incoming_byte_rate=0.2,
        )
        for m in range(3)
    ]
    panel = build_clients([*java, row("lib", 0, broker_bytes_in=5)], [], window_s=600)
    j, lib = sorted(panel["by_bytes"], key=lambda c: c["client_id"])
    assert j["software"] == "apache-kafka-java 4.1.0"
    assert j["reported"] == {
        "push_interval_ms": 1002,  # the latest bucket's
        "batch_size_avg": 1100.0,
        "batch_size_max": 2002.0,
        "in_flight_avg": 2.0,
        "buffer_total_bytes": 33554432.0,
    }
    assert (j["client_outgoing_bytes"], j["client_incoming_bytes"]) == (360, 36)
    assert j["client_outgoing_byte_rate"] == 2.0
    assert lib["reported"] == {
        "push_interval_ms": 5000,
        "batch_size_avg": None,
        "batch_size_max": None,
        "in_flight_avg": None,
        "buffer_total_bytes": None,
    }
    assert "linger.ms, batch.size, acks" in panel["not_reported"] == NOT_REPORTED


def test_rows_of_a_table_from_before_the_byte_columns() -> None:
    old = [
        {
            k: v
            for k, v in row(f"p{i}", 0, produce_latency_avg_ms=float(i)).items()
            if k == "client_id"
            or not k.startswith(("broker_bytes", "client_", "push_interval", "buffer"))
        }
        for i in range(TOP_CLIENTS + 2)
    ]
    panel = build_clients(old, [], window_s=600)
    assert len(panel["clients"]) == TOP_CLIENTS and panel["clients"][0]["client_id"] == "p11"
    assert panel["by_bytes"] == []
    assert panel["clients"][0]["reported"]["push_interval_ms"] is None
