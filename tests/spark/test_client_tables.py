"""The trends job's ``clients`` table on hand-made scrape lines (local Spark): the broker's
byte count of each client from its connections' counters (increases between samples in a
row, a connection that two instances list counted once, a first sample and a counter that
went down giving none, a gap's span shown), in buckets that hold no push too; and the
byte counts and settings-like figures a Java client pushes, which librdkafka does not.
The real clients' run is tests/spark/test_clients.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from spark_jobs.client_tables import clients_table, read_client_lines

from .synthetic import write_jsonl

T0 = 1_740_000_000  # a bucket start (10 s buckets)
BUCKET_S = 10
P = "org.apache.kafka.producer."


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat().replace("+00:00", "Z")


def entry(
    client_id: str,
    instance: str,
    pushed: float | None,
    connections: list[tuple[str, int, int]],
    metrics: dict[str, float] | None = None,
    software: tuple[str, str] = ("confluent-kafka-python", "2.16.1-rdkafka-2.16.0"),
) -> dict[str, Any]:
    return {
        "client_instance_id": instance,
        "client_id": client_id,
        "client_software_name": software[0],
        "client_software_version": software[1],
        "client_source_address": "127.0.0.1",
        "client_source_port": 40000,
        "push_interval_ms": 5000,
        "last_push_time": pushed,
        "pushes": 1,
        "broker_bytes_in": sum(c[1] for c in connections),
        "broker_bytes_out": sum(c[2] for c in connections),
        "broker_connections": [{"id": i, "bytes_in": a, "bytes_out": b} for i, a, b in connections],
        "broker_bytes_instances": 1,
        "resource": {},
        "metrics": metrics or {},
    }


def line(t: float, clients: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema": "trio-broker.client-metrics/1",
        "broker_id": 0,
        "ts": iso(t),
        "clients": clients,
    }


def java(pushed: float, out_total: float, in_total: float, rate: float) -> dict[str, float]:
    """A Java producer's push (KIP-714's names for its producer-metrics)."""
    return {
        P + "outgoing.byte.total": out_total,  # since its previous push (delta temporality)
        P + "incoming.byte.total": in_total,
        P + "outgoing.byte.rate": rate,
        P + "incoming.byte.rate": rate / 10,
        P + "batch.size.avg": 1500.0,
        P + "batch.size.max": 1600.0,
        P + "requests.in.flight": 2.0,
        P + "buffer.total.bytes": 33554432.0,
        P + "request.latency.avg": 3.0,
        P + "request.latency.max": 9.0,
    }


@pytest.fixture(scope="module")
def rows(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Any]:
    scraped = tmp_path_factory.mktemp("scraped")
    path = scraped / "broker=0" / "date=2025-02-19" / "hour=21.clients.ndjson"
    lines = [
        # t0+1: first samples: no increase yet. "lib" has one connection; "pair" is two
        # instances with the same client id, software and address, each listing the same
        # connection; "java" pushes its own byte counts.
        line(
            T0 + 1,
            [
                entry("lib", "i-lib", T0 + 0.5, [("c1", 1000, 100)]),
                entry("pair", "i-p1", T0 + 0.5, [("c2", 50, 5)]),
                entry("pair", "i-p2", T0 + 0.6, [("c2", 50, 5)]),
                entry("java", "i-j", T0 + 0.5, [("c3", 10, 10)], java(T0, 800, 80, 100), JAVA),
            ],
        ),
        line(
            T0 + 4,
            [
                entry("lib", "i-lib", T0 + 0.5, [("c1", 3000, 300)]),  # +2000 / +200
                entry("pair", "i-p1", T0 + 0.5, [("c2", 150, 25)]),  # +100 / +20, once
                entry("pair", "i-p2", T0 + 0.6, [("c2", 150, 25)]),
                entry("java", "i-j", T0 + 3.5, [("c3", 510, 60)], java(T0, 500, 50, 200), JAVA),
            ],
        ),
        # t0+12 (the next bucket): "lib" opened a second connection (first sample: none)
        # and pushed nothing new: a bucket with its bytes and no push
        line(
            T0 + 12,
            [
                entry("lib", "i-lib", T0 + 0.5, [("c1", 3500, 400), ("c4", 9000, 900)]),
                entry("java", "i-j", T0 + 3.5, [("c3", 400, 70)]),  # went down: none
            ],
        ),
        # t0+40: the scrape resumes after a gap: the gap's bytes in this bucket, its span shown
        line(T0 + 40, [entry("lib", "i-lib", T0 + 0.5, [("c1", 4500, 500), ("c4", 9100, 950)])]),
    ]
    write_jsonl(path, lines)  # type: ignore[arg-type]
    found = read_client_lines(spark, str(scraped))
    assert found is not None
    table = clients_table(found, BUCKET_S).collect()
    return {(r["client_id"], int(r["time"].timestamp()) - T0): r.asDict() for r in table}


JAVA = ("apache-kafka-java", "4.1.0")


def test_the_broker_bytes_are_each_connections_increase_between_samples(
    rows: dict[tuple[str, int], Any],
) -> None:
    assert set(rows) == {
        ("lib", 0),
        ("lib", 10),
        ("lib", 40),
        ("pair", 0),
        ("java", 0),
    }
    lib = rows[("lib", 0)]
    assert (lib["broker_bytes_in"], lib["broker_bytes_out"]) == (2000, 200)
    assert lib["broker_bytes_span_s"] == 3 and lib["pushes"] == 1 and lib["instances"] == 1
    # two instances list one connection: its increase counts once, not twice
    pair = rows[("pair", 0)]
    assert (pair["broker_bytes_in"], pair["broker_bytes_out"]) == (100, 20)
    assert pair["instances"] == 2 and pair["pushes"] == 2
    # a bucket with bytes and no push: c1's +500/+100; c4 is new, its first sample none
    later = rows[("lib", 10)]
    assert (later["broker_bytes_in"], later["broker_bytes_out"]) == (500, 100)
    assert later["pushes"] == 0 and later["instances"] == 0
    assert later["software_name"] == "confluent-kafka-python" and later["kind"] is None
    assert later["produce_latency_avg_ms"] is None
    # after a gap: the gap's bytes where the scrape resumed, and its span says so
    gap = rows[("lib", 40)]
    assert (gap["broker_bytes_in"], gap["broker_bytes_out"]) == (1000 + 100, 100 + 50)
    assert gap["broker_bytes_span_s"] == 28
    # a counter that went down (java's c3 at t0+12: an id met again after a restart, say)
    # gives nothing: with no push there either, java has no row in that bucket (above)


def test_a_java_clients_own_bytes_and_reported_figures(rows: dict[tuple[str, int], Any]) -> None:
    j = rows[("java", 0)]
    assert (j["broker_bytes_in"], j["broker_bytes_out"]) == (500, 50)
    # its own counts: the pushes' deltas summed (two pushes in the bucket), rates their mean
    assert (j["client_outgoing_bytes"], j["client_incoming_bytes"]) == (1300.0, 130.0)
    assert j["client_outgoing_byte_rate"] == 150.0 and j["client_incoming_byte_rate"] == 15.0
    assert (j["batch_size_avg"], j["batch_size_max"], j["in_flight_avg"]) == (1500.0, 1600.0, 2.0)
    assert j["buffer_total_bytes"] == 33554432.0 and j["push_interval_ms"] == 5000
    assert j["software_name"] == "apache-kafka-java" and j["kind"] == "producer"
    # librdkafka pushes none of them: null, not 0
    lib = rows[("lib", 0)]
    for col in (
        "client_outgoing_bytes",
        "client_incoming_bytes",
        "client_outgoing_byte_rate",
        "batch_size_avg",
        "in_flight_avg",
        "buffer_total_bytes",
    ):
        assert lib[col] is None, col
    assert lib["push_interval_ms"] == 5000
