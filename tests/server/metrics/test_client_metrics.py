"""Real Kafka clients (kafka-python, librdkafka) drive a broker; the metrics count them."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from ...support.brokers import BrokerThread
from ...support.metrics import labels, prometheus_samples, validate_snapshot


def both(broker: BrokerThread) -> tuple[dict[str, Any], dict[str, Any]]:
    """A snapshot and a scrape taken in one go inside the broker's loop (nothing between)."""
    b = broker.broker
    assert b is not None
    snapshot, text = broker.call(lambda: (b.metrics_snapshot(), b.prometheus_text()))
    return validate_snapshot(snapshot), prometheus_samples(text)


def test_kafka_python_and_librdkafka_traffic_is_counted(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        assert admin.describe_cluster()["controller_id"] == 0
    finally:
        admin.close()
    s, _ = both(broker)
    after_kafka_python = {name: rt["count"] for name, rt in s["requests"].items()}
    assert after_kafka_python["ApiVersions"] >= 1
    assert after_kafka_python["Metadata"] >= 1

    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert list(md.brokers) == [0]
    s, p = both(broker)
    for name in ("ApiVersions", "Metadata"):
        rt = s["requests"][name]
        assert rt["count"] > after_kafka_python[name]
        assert sum(int(n) for n in rt["versions"].values()) == rt["count"]
        assert rt["total_time_ms"]["count"] + rt["closed"] == rt["count"]
        counted = sum(
            v for k, v in p["kafka_network_requests_total"].items() if ("request", name) in k
        )
        assert counted == rt["count"]
        assert (
            p["kafka_network_request_total_time_ms_count"][labels(request=name)]
            == (rt["total_time_ms"]["count"])
        )
    # librdkafka sends ApiVersions v3 with its software name: answered without error
    assert s["requests"]["ApiVersions"]["errors_by_code"].get("NONE", 0) >= 1
    assert s["connections"]["created"] >= 2
    assert s["pools"]["control"]["size"] == 1
    assert set(s["pools"]["network"]) == {"PLAINTEXT", "CONTROLLER"}
