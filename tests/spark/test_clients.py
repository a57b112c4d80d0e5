"""Client telemetry (KIP-714) from real librdkafka clients to the trends job's tables: a
broker with a subscription for every metric at 500 ms, a batching confluent-kafka producer
(``linger.ms=50``) and a consumer pushing by default; the scraper reads ``/v1/metrics``
and ``/v1/client-metrics`` once a second for a few seconds; the trends job (local Spark,
2 s buckets) writes the ``clients`` and ``produce_path`` tables, checked for the clients'
rows and figures consistent with what was done. Then the issue's batching workload: four
producers with ``linger.ms=50`` on a slow-disk broker (2 ms a storage operation) with one
io thread, scraped for 12 s: the advisor finds them client-bound, names ``linger.ms`` and
``batch.size`` with their figures, and recommends no pool change."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from spark_jobs import advise, trends
from spark_jobs.scrape import scrape
from tests.support.browser import load as load_page

from ..support.brokers import BrokerProcess, BrokerThread

pytestmark = pytest.mark.slow

SCRAPE_S = 6
BUCKET_S = 2
LINGER_MS = 50


TELEMETRY_SUBSCRIPTIONS = {"all": {"metrics": "*", "interval.ms": 500}}  # telemetry_broker's


def load(b: BrokerThread, until: threading.Event) -> dict[str, int]:
    """A batching producer and a consumer on topic ``t`` until ``until`` is set."""
    done = {"produced": 0, "consumed": 0}
    producer = Producer(
        {"bootstrap.servers": b.bootstrap, "client.id": "app-p", "linger.ms": LINGER_MS}
    )
    consumer = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "client.id": "app-c",
            "group.id": "g",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["t"])
    deadline = time.monotonic() + SCRAPE_S + 20  # bounded, whatever happens
    try:
        while not until.is_set() and time.monotonic() < deadline:
            for _ in range(20):
                producer.produce("t", b"x" * 100)
            done["produced"] += 20
            producer.poll(0.01)
            if consumer.poll(0.02) is not None:
                done["consumed"] += 1
    finally:
        consumer.close()
        producer.flush(5)
    return done


def rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_the_clients_pushes_become_the_clients_and_produce_path_tables(
    spark: Any, telemetry_broker: BrokerThread, tmp_path: Path
) -> None:
    broker = telemetry_broker
    until = threading.Event()
    done: dict[str, int] = {}
    worker = threading.Thread(target=lambda: done.update(load(broker, until)))
    worker.start()
    scraped, out, log = tmp_path / "scraped", tmp_path / "trends", io.StringIO()
    try:
        stats = scrape([broker.admin_url], scraped, interval=1.0, duration=SCRAPE_S, log=log)
    finally:
        until.set()
        worker.join(30)
    assert stats[0].snapshots >= SCRAPE_S - 1, log.getvalue()
    assert done["produced"] > 0 and done["consumed"] > 0

    # the scraper's client lines: beside the snapshots, one per snapshot, as the broker sent
    client_files = sorted(scraped.rglob("*.clients.ndjson"))
    assert client_files and all(p.parent.parent.name == "broker=0" for p in client_files)
    lines = [json.loads(x) for p in client_files for x in p.read_text().splitlines()]
    assert len(lines) == stats[0].snapshots
    assert {x["schema"] for x in lines} == {"trio-broker.client-metrics/1"}
    ids = {c["client_id"] for x in lines for c in x["clients"] if c["metrics"]}
    assert {"app-p", "app-c"} <= ids

    report = trends.run(spark, str(scraped), str(out), bucket_s=BUCKET_S, trend_window_s=10)
    assert report["input"]["unsupported_schema_lines"] == 0  # the snapshots' readers skip them
    assert report["input"]["corrupt_lines"] == 0
    assert report["clients"]["pushes"] >= 4
    assert {"app-p", "app-c"} <= set(report["clients"]["client_ids"])

    clients = rows(out / "clients")
    producer = [c for c in clients if c["client_id"] == "app-p"]
    consumer = [c for c in clients if c["client_id"] == "app-c"]
    assert len(producer) >= 2 and len(consumer) >= 2
    for c in producer:
        assert c["kind"] == "producer" and c["software_name"] == "confluent-kafka-python"
        assert c["instances"] == 1 and c["pushes"] >= 1 and c["bucket_s"] == BUCKET_S
        assert c["fetch_latency_avg_ms"] is None
        assert c["batch_size_avg"] is None and c["in_flight_avg"] is None  # librdkafka: none
    # librdkafka's record.queue.time is its output buffer's latency (a built request until
    # written to the socket), not linger.ms: small on loopback
    queue = [c["record_queue_time_max_ms"] for c in producer]
    assert all(q is None or 0 <= q < 1000 for q in queue), queue
    latency = [c["produce_latency_avg_ms"] for c in producer if c["produce_latency_avg_ms"]]
    assert latency and all(0 < x < 5000 for x in latency), latency
    fetch = [c["fetch_latency_avg_ms"] for c in consumer if c["fetch_latency_avg_ms"]]
    assert fetch and all(0 < x < 5000 for x in fetch), fetch
    assert all(c["kind"] == "consumer" and c["produce_latency_avg_ms"] is None for c in consumer)

    # the dashboard's clients panel: dashboard.json, and the page a real browser draws
    panel = json.loads((out / "dashboard.json").read_text())["clients"]
    listed = {c["client_id"]: c for c in panel["clients"]}
    assert {"app-p", "app-c"} <= set(listed)
    assert listed["app-p"]["produce_latency_ms"] > 0 and listed["app-p"]["broker_total_ms"]
    assert panel["clients"][0]["client_id"] == "app-p"  # producers first, by produce latency
    page = BrokerThread(
        tmp_path / "page", {"admin.listeners": "http://127.0.0.1:0", "dashboard.data.dir": str(out)}
    ).start()
    try:
        dom = load_page(page.admin_url + "/dashboard")
    finally:
        page.stop()
    assert 'id="clients-table"' in dom and 'data-client="app-p"' in dom, dom[-3000:]
    assert 'data-client="app-c"' in dom and "librdkafka 2.16 pushes neither" in dom

    path = rows(out / "produce_path")
    assert {p["client_id"] for p in path} == {"app-p"}
    joined = [p for p in path if p["broker_total_ms"] is not None]
    assert joined, path
    for p in joined:
        assert p["wire_ms"] == pytest.approx(p["client_request_ms"] - p["broker_total_ms"])
        assert p["broker_requests"] > 0 and p["broker_queue_ms"] >= 0
        assert p["broker_rest_ms"] == pytest.approx(
            p["broker_total_ms"] - p["broker_queue_ms"] - p["broker_local_ms"]
        )


BATCHERS, SLOW_SCRAPE_S = 4, 12


def batching_load(bootstrap: str, stop: threading.Event) -> list[threading.Thread]:
    """Producers that send as fast as librdkafka takes records, ``linger.ms=50``."""

    def run(i: int) -> None:
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": f"batcher-{i}",
                "acks": "all",
                "linger.ms": LINGER_MS,
            }
        )
        deadline = time.monotonic() + SLOW_SCRAPE_S + 30
        n = 0
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                p.produce("load", b"x" * 100)
                n += 1
            except BufferError:  # its queue is full: let it send
                p.poll(0.01)
            if n % 100 == 0:
                p.poll(0)
        p.flush(30)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(BATCHERS)]
    for t in threads:
        t.start()
    return threads


def test_batching_producers_on_a_slow_disk_are_client_bound_and_no_pool_changes(
    spark: Any, tmp_path: Path
) -> None:
    broker = BrokerProcess(
        tmp_path / "data",
        [
            "listeners=PLAINTEXT://127.0.0.1:0",
            "admin.listeners=http://127.0.0.1:0",
            f"log.dirs={tmp_path / 'data'}",
            "num.io.threads=1",
            "num.network.threads=2",
            "log.flush.interval.messages=1",
            "metrics.window.seconds=2",
        ],
        storage_delay_ms=2,
    ).start()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    scraped, out = tmp_path / "scraped", tmp_path / "trends"
    try:
        assert broker.admin_url is not None
        sub = {"metrics": "org.apache.kafka.producer.", "interval.ms": 1000}
        r = httpx.put(f"{broker.admin_url}/v1/client-metrics/subscriptions/producers", json=sub)
        assert r.status_code == 200, r.text
        kafka_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        kafka_admin.create_topics([NewTopic("load", 8, 1)])["load"].result(10)
        del kafka_admin  # its handle ends here, not reconnecting once the broker is gone
        threads = batching_load(broker.bootstrap, stop)
        stats = scrape(
            [broker.admin_url], scraped, interval=1.0, duration=SLOW_SCRAPE_S, log=io.StringIO()
        )
        assert stats[0].snapshots >= SLOW_SCRAPE_S - 2
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        broker.terminate()
    trends.run(spark, str(scraped), str(out), bucket_s=BUCKET_S, trend_window_s=10)
    doc = advise.run(out, advise.Thresholds(lookback_s=60, min_buckets=3))

    assert [r for r in doc["recommendations"] if r["status"] == "recommended"] == []
    io_pool = next(p for p in doc["pools"] if p["pool"] == "io")
    assert io_pool["size"] == 1 and io_pool["idle_ratio_mean"] >= 0.2, doc["pools"]
    c = doc["clients"]
    assert c["status"] == "client-bound", json.dumps(c, indent=1)
    assert {f["client_id"] for f in c["clients"]} == {f"batcher-{i}" for i in range(BATCHERS)}
    assert c["findings"]
    for f in c["findings"]:
        assert f["client_id"].startswith("batcher-")
        assert "linger.ms" in f["settings"] and "batch.size" in f["settings"]
        ev = f["evidence"]
        assert ev["client_wait_ms"] >= 2 * ev["broker_queue_ms"]
        assert ev["broker_total_ms"] > 0 and ev["client_request_ms"] > ev["broker_total_ms"]
        assert f["client_id"] in f["text"] and "linger.ms" in f["text"]
