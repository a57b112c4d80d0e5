"""KIP-714 client telemetry with real clients: librdkafka (confluent-kafka 2.16, which
pushes by default, ``enable.metrics.push=true``) asks for its subscriptions and pushes its
metrics once a ``CLIENT_METRICS`` subscription matches it; they are read back from the
admin API's ``/v1/client-metrics`` and, once switched on, from Prometheus' ``/metrics``.
The subscriptions made through Kafka's config APIs (kafka-python's admin client:
confluent-kafka 2.16's ``ConfigResource`` refuses resource type 16) and through the admin
API are one set, kept across a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from ..support.brokers import BrokerThread
from ..support.metrics import validate_snapshot

INTERVAL_MS = 500
# The first test's interval: librdkafka makes its first push 0.5-1.5 intervals after it got
# the subscription (KIP-714's jitter), so with 500 ms the "within 2 intervals" bound left a
# client 250 ms to connect, which a loaded CI machine does not always give.
FIRST_PUSH_INTERVAL_MS = 2000
INVALID_CONFIG, INVALID_REQUEST = 40, 42


def wait_for(what: str, check: Callable[[], Any], tick: Callable[[], None], timeout: float) -> Any:
    """``check()`` until truthy, ``tick()`` (the clients' poll) between tries; fails naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        tick()


def client_entry(http: httpx.Client, client_id: str) -> dict[str, Any] | None:
    clients = http.get("/v1/client-metrics").json()["clients"]
    pushed = [c for c in clients if c["client_id"] == client_id and c["metrics"]]
    return pushed[0] if pushed else None


def admin_client(b: BrokerThread) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)


def test_a_producer_and_a_consumer_push_within_two_intervals(
    telemetry_broker: BrokerThread, telemetry_http: httpx.Client
) -> None:
    sub = {
        "metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.",
        "interval.ms": FIRST_PUSH_INTERVAL_MS,
        "match": "client_id=app-.*",
    }
    r = telemetry_http.put("/v1/client-metrics/subscriptions/apps", json=sub)
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "apps", **sub}

    started = time.time()
    producer = Producer({"bootstrap.servers": telemetry_broker.bootstrap, "client.id": "app-p"})
    consumer = Consumer(
        {
            "bootstrap.servers": telemetry_broker.bootstrap,
            "client.id": "app-c",
            "group.id": "g",
        }
    )
    other = Producer({"bootstrap.servers": telemetry_broker.bootstrap, "client.id": "other"})
    consumer.subscribe(["t"])

    def tick() -> None:
        producer.produce("t", b"v")
        producer.poll(0.05)
        other.produce("t", b"v")
        other.poll(0)
        consumer.poll(0.05)

    try:
        p = wait_for("the producer's push", lambda: client_entry(telemetry_http, "app-p"), tick, 20)
        c = wait_for("the consumer's push", lambda: client_entry(telemetry_http, "app-c"), tick, 20)
        for entry in (p, c):
            assert entry["client_software_name"] == "confluent-kafka-python"
            assert entry["client_software_version"].endswith("rdkafka-2.16.0")
            assert entry["client_source_address"] == "127.0.0.1"
            assert entry["push_interval_ms"] == FIRST_PUSH_INTERVAL_MS
            # "within 2 push intervals once a subscription matches them": their first
            # push, counted from before the client was made (its connection included)
            assert entry["first_push_time"] - started <= 2 * FIRST_PUSH_INTERVAL_MS / 1000
        assert all(k.startswith("org.apache.kafka.producer.") for k in p["metrics"])
        assert "org.apache.kafka.producer.record.queue.time.avg" in p["metrics"]
        assert any(k.startswith("org.apache.kafka.consumer.") for k in c["metrics"])

        # the client the subscription does not match asked, and pushes nothing
        def asked() -> bool:
            clients = telemetry_http.get("/v1/client-metrics").json()["clients"]
            return any(e["client_id"] == "other" for e in clients)

        wait_for("the other client's GetTelemetrySubscriptions", asked, tick, 20)
        assert client_entry(telemetry_http, "other") is None

        # Prometheus: off by default; on at run time, labelled with the client
        metric = "kafka_client_org_apache_kafka_producer_record_queue_time_avg"
        assert metric not in telemetry_http.get("/metrics").text
        r = telemetry_http.put(
            "/v1/config", json={"settings": {"client.metrics.prometheus.enable": True}}
        )
        assert r.status_code == 200, r.text
        text = telemetry_http.get("/metrics").text
        line = next(x for x in text.splitlines() if x.startswith(metric + "{"))
        assert 'client_id="app-p"' in line
        assert f'client_instance_id="{p["client_instance_id"]}"' in line
        assert 'client_software_name="confluent-kafka-python"' in line
        assert "kafka_server_client_metrics_instance_count 3.0" in text
        snapshot = validate_snapshot(telemetry_http.get("/v1/metrics").json())["client_telemetry"]
        assert snapshot["instances"] == 3 and snapshot["pushes"] >= 2
        assert snapshot["subscriptions"] == 1 and snapshot["evicted"] == 0
    finally:
        consumer.close()
        producer.flush(5)


def test_a_closed_clients_instance_goes_with_its_connection(
    telemetry_broker: BrokerThread, telemetry_http: httpx.Client
) -> None:
    """As Kafka's ClientMetricsManager (its ConnectionDisconnectListener): a librdkafka
    producer that closes takes its client instance with it at once, long before the
    expiry of an instance unheard (max(60 s, 3 push intervals))."""
    sub = {"metrics": "org.apache.kafka.producer.", "interval.ms": INTERVAL_MS}
    sub["match"] = "client_id=closing"
    r = telemetry_http.put("/v1/client-metrics/subscriptions/closing", json=sub)
    assert r.status_code == 200, r.text
    producer = Producer({"bootstrap.servers": telemetry_broker.bootstrap, "client.id": "closing"})

    def tick() -> None:
        producer.produce("t", b"v")
        producer.poll(0.05)

    try:
        pushed = wait_for("the push", lambda: client_entry(telemetry_http, "closing"), tick, 20)
    finally:
        producer.flush(5)
        producer.close()

    def left() -> bool:
        clients = telemetry_http.get("/v1/client-metrics").json()["clients"]
        return all(c["client_instance_id"] != pushed["client_instance_id"] for c in clients)

    wait_for("the closed producer's instance to go", left, lambda: time.sleep(0.02), 10)
    figures = telemetry_http.get("/v1/metrics").json()["client_telemetry"]
    assert figures["disconnected"] >= 1 and figures["expired"] == 0


RECORDS, RECORD_BYTES = 40, 10_000


def test_each_client_carries_the_bytes_the_broker_counted_on_its_connections(
    telemetry_broker: BrokerThread, telemetry_http: httpx.Client
) -> None:
    """librdkafka pushes no byte counts; the broker counts every connection's bytes, and
    each client instance's entry has those of its client's connections (same client id,
    software and address): all of them, a consumer's second connection included, and no
    other client's."""
    sub = {"metrics": "org.apache.kafka.", "interval.ms": INTERVAL_MS, "match": "client_id=b-.*"}
    r = telemetry_http.put("/v1/client-metrics/subscriptions/bytes", json=sub)
    assert r.status_code == 200, r.text
    boot = telemetry_broker.bootstrap
    producer = Producer({"bootstrap.servers": boot, "client.id": "b-producer"})
    # another client from the same address, 4x the bytes: none of them is the producer's
    other = Producer({"bootstrap.servers": boot, "client.id": "b-other"})
    consumer = Consumer(
        {
            "bootstrap.servers": boot,
            "client.id": "b-consumer",
            "group.id": "bytes",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["bytes"])
    record = b"x" * RECORD_BYTES
    for _ in range(RECORDS):
        producer.produce("bytes", record)
        for _ in range(4):
            other.produce("other-bytes", record)
    consumed = 0
    try:
        assert producer.flush(20) == 0 and other.flush(20) == 0

        def tick() -> None:
            nonlocal consumed
            m = consumer.poll(0.1)
            if m is not None and m.error() is None:
                consumed += 1
            producer.poll(0)
            other.poll(0)

        wait_for("the consumer to read them", lambda: consumed >= RECORDS, tick, 30)
        wait_for(
            "the pushes",
            lambda: all(
                client_entry(telemetry_http, c) for c in ("b-producer", "b-other", "b-consumer")
            ),
            tick,
            20,
        )
        entries = {
            c: client_entry(telemetry_http, c) for c in ("b-producer", "b-other", "b-consumer")
        }
        connections = telemetry_http.get("/v1/connections").json()["connections"]
    finally:
        consumer.close()
        producer.flush(5)
        other.flush(5)
    listed: dict[str, dict[str, Any]] = {c["id"]: c for c in connections}
    p, o, c = entries["b-producer"], entries["b-other"], entries["b-consumer"]
    assert p and o and c
    # what the broker received from the producer holds its records, and not the other's
    assert RECORDS * RECORD_BYTES <= p["broker_bytes_in"] < 2 * RECORDS * RECORD_BYTES, p
    assert o["broker_bytes_in"] >= 4 * RECORDS * RECORD_BYTES, o
    # what it sent the consumer holds the records it fetched; librdkafka's consumer pushes
    # on one connection and talks to its group coordinator on another
    assert c["broker_bytes_out"] >= RECORDS * RECORD_BYTES, c
    assert len(c["broker_connections"]) >= 2, c
    for entry in (p, o, c):
        assert entry["broker_bytes_instances"] == 1
        mine = {x["id"] for x in entry["broker_connections"]}
        # every connection of that client id is counted, and only those, the one it
        # pushed on among them
        same_client = {i for i, x in listed.items() if x["client_id"] == entry["client_id"]}
        assert mine == same_client, (entry["client_id"], mine, same_client)
        pushed_on = f"-{entry['client_source_address']}:{entry['client_source_port']}-"
        assert any(pushed_on in i for i in mine), (pushed_on, mine)
        assert entry["broker_bytes_in"] == sum(x["bytes_in"] for x in entry["broker_connections"])
        assert entry["broker_bytes_out"] == sum(x["bytes_out"] for x in entry["broker_connections"])
        for x in entry["broker_connections"]:  # the counters only grow: read later, no less
            assert x["bytes_in"] <= listed[x["id"]]["bytes_in"]
            assert x["bytes_out"] <= listed[x["id"]]["bytes_out"]


def test_kafkas_config_apis_and_the_admin_api_share_one_set_of_subscriptions(
    telemetry_broker: BrokerThread, telemetry_http: httpx.Client
) -> None:
    admin = admin_client(telemetry_broker)
    try:
        made = ConfigResource(
            ConfigResourceType.CLIENT_METRICS,
            "by-kafka",
            configs={
                "metrics": ("SET", "org.apache.kafka.producer."),
                "interval.ms": ("SET", "1000"),
            },
        )
        result = admin.alter_configs([made], incremental=True, raise_on_unknown=False)
        assert result == {"client_metrics": {"by-kafka": "OK"}}
        r = telemetry_http.get("/v1/client-metrics/subscriptions/by-kafka")
        assert r.json() == {
            "name": "by-kafka",
            "metrics": "org.apache.kafka.producer.",
            "interval.ms": 1000,
            "match": "",
        }

        r = telemetry_http.put(
            "/v1/client-metrics/subscriptions/by-http",
            json={"metrics": ["a.", "b."], "match": ["client_id=x", "client_software_name=y.*"]},
        )
        assert r.status_code == 200, r.text
        listed = admin.list_config_resources([ConfigResourceType.CLIENT_METRICS])
        names = sorted(str(x) for x in _names(listed))
        assert names == ["by-http", "by-kafka"]
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, "by-http")]
        )["client_metrics"]["by-http"]
        assert described["metrics"]["value"] == "a.,b."
        assert described["match"]["value"] == "client_id=x,client_software_name=y.*"

        # APPEND on a list key, then every key removed: the subscription is gone
        admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.CLIENT_METRICS,
                    "by-http",
                    configs={"metrics": ("APPEND", "c.")},
                )
            ],
            incremental=True,
            raise_on_unknown=False,
        )
        assert (
            telemetry_http.get("/v1/client-metrics/subscriptions/by-http").json()["metrics"]
            == "a.,b.,c."
        )
        gone = {k: ("DELETE", None) for k in ("metrics", "match")}
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.CLIENT_METRICS, "by-http", configs=gone)],
            incremental=True,
            raise_on_unknown=False,
        )
        assert telemetry_http.get("/v1/client-metrics/subscriptions/by-http").status_code == 404
        r = telemetry_http.delete("/v1/client-metrics/subscriptions/by-kafka")
        assert r.status_code == 200 and r.json()["name"] == "by-kafka"
        assert _names(admin.list_config_resources([ConfigResourceType.CLIENT_METRICS])) == []
    finally:
        admin.close()


def _names(listed: Any) -> list[str]:
    """kafka-python's list_config_resources answer: the names of its resources."""
    found: list[str] = []
    for item in listed if isinstance(listed, list) else [listed]:
        if isinstance(item, dict):
            for v in item.values():
                found.extend(v if isinstance(v, list) else [v])
        elif isinstance(item, tuple):
            found.append(item[0] if isinstance(item[0], str) else item[1])
        else:
            found.append(getattr(item, "resource_name", item))
    return found


@pytest.mark.parametrize(
    ("configs", "error"),
    [
        ({"interval.ms": ("SET", "50")}, INVALID_REQUEST),  # Kafka's 100..3600000
        ({"interval.ms": ("SET", "3600001")}, INVALID_REQUEST),
        ({"interval.ms": ("SET", "soon")}, INVALID_CONFIG),
        ({"match": ("SET", "client_colour=red")}, INVALID_CONFIG),
        ({"match": ("SET", "client_id=(")}, INVALID_CONFIG),
        ({"colour": ("SET", "red")}, INVALID_REQUEST),
        ({"interval.ms": ("APPEND", "100")}, INVALID_CONFIG),
    ],
)
def test_kafkas_validation_errors(
    telemetry_broker: BrokerThread,
    telemetry_http: httpx.Client,
    configs: dict[str, Any],
    error: int,
) -> None:
    admin = admin_client(telemetry_broker)
    try:
        res = ConfigResource(ConfigResourceType.CLIENT_METRICS, "bad", configs=configs)
        result = admin.alter_configs([res], incremental=True, raise_on_unknown=False)
        # kafka-python answers an error as its text: "[Error <code>] <name>: <message>"
        assert str(result["client_metrics"]["bad"]).startswith(f"[Error {error}]"), result
        assert telemetry_http.get("/v1/client-metrics/subscriptions").json() == {
            "subscriptions": []
        }
    finally:
        admin.close()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"interval.ms": 99}, "invalid-config"),
        ({"interval.ms": "1000"}, "invalid-config"),
        ({"metrics": 3}, "invalid-config"),
        ({"match": "client_colour=red"}, "invalid-config"),
        ({"colour": "red"}, "unknown-field"),
        ({}, "missing-field"),
    ],
)
def test_the_admin_api_refuses_bad_subscriptions(
    telemetry_http: httpx.Client, body: dict[str, Any], code: str
) -> None:
    r = telemetry_http.put("/v1/client-metrics/subscriptions/bad", json=body)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == code, r.text
    assert telemetry_http.get("/v1/client-metrics/subscriptions/bad").status_code == 404
    assert telemetry_http.delete("/v1/client-metrics/subscriptions/bad").status_code == 404


def test_subscriptions_survive_a_restart(
    telemetry_broker: BrokerThread, telemetry_http: httpx.Client
) -> None:
    body = {"metrics": "*", "interval.ms": 2000, "match": "client_id=a"}
    r = telemetry_http.put("/v1/client-metrics/subscriptions/kept", json=body)
    assert r.status_code == 200
    telemetry_broker.restart()
    with httpx.Client(base_url=telemetry_broker.admin_url, timeout=10) as http:
        r = http.get("/v1/client-metrics/subscriptions/kept")
        assert r.json() == {"name": "kept", **body}
