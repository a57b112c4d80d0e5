"""Real Kafka clients find the broker: kcat, confluent-kafka (librdkafka), kafka-python."""

from __future__ import annotations

import json
import subprocess

from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from .support.brokers import BrokerThread


def test_kcat_lists_metadata(broker: BrokerThread) -> None:
    out = subprocess.run(
        ["kcat", "-L", "-J", "-b", broker.bootstrap, "-m", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    meta = json.loads(out.stdout)
    host, port = broker.bootstrap.split(":")
    assert meta["brokers"] == [{"id": 0, "name": f"{host}:{port}"}]
    assert meta["controllerid"] == 0


def test_kcat_auto_creates_a_topic(broker: BrokerThread) -> None:
    out = subprocess.run(
        ["kcat", "-L", "-J", "-b", broker.bootstrap, "-t", "auto-made", "-m", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    topics = json.loads(out.stdout)["topics"]
    assert [t["topic"] for t in topics] == ["auto-made"]
    assert [p["leader"] for p in topics[0]["partitions"]] == [0]


def test_confluent_admin_lists_topics(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics(timeout=10)
    assert list(md.brokers) == [0]
    assert md.brokers[0].port == int(broker.bootstrap.split(":")[1])
    assert md.cluster_id == broker.broker.cluster_id
    # Asking for a topic creates it (auto.create.topics.enable defaults to true).
    md = admin.list_topics(topic="orders", timeout=10)
    assert md.topics["orders"].error is None
    assert list(md.topics["orders"].partitions) == [0]


def test_kafka_python_admin_sees_the_cluster(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        cluster = admin.describe_cluster()
        assert cluster["controller_id"] == 0
        assert [b["broker_id"] for b in cluster["brokers"]] == [0]
        assert cluster["cluster_id"] == broker.broker.cluster_id
        assert isinstance(admin.list_topics(), list)
    finally:
        admin.close()
