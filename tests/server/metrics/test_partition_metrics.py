"""Per-partition load and log dirs on one broker, over real TCP with confluent-kafka: each
partition's produce and consumer-fetch figures, its log's size and offsets, the log dirs'
bytes, all in the JSON snapshot (against its JSON Schema) and in Prometheus, whose
partition series a run-time change of ``metrics.partition.prometheus.enable`` turns off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ...support.brokers import BrokerThread
from ...support.metrics import labels, prometheus_samples, validate_snapshot

MESSAGES = 300
SIZE = 100


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0"}).start()
    yield b
    b.stop()


def snapshot(b: BrokerThread) -> dict[str, Any]:
    return validate_snapshot(httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json())


def by_partition(s: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(p["topic"], p["partition"]): p for p in s["partitions"]}


def test_each_partition_carries_its_own_load_and_log(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("load", 2, 1)])["load"].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(MESSAGES):  # partition 0 only: partition 1 stays empty
        producer.produce("load", value=b"%0*d" % (SIZE, i), partition=0)
        producer.poll(0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g"})
    consumer.assign([TopicPartition("load", p, 0) for p in (0, 1)])
    got = 0
    try:
        while got < MESSAGES:
            for msg in consumer.consume(500, timeout=10):
                assert msg.error() is None, msg.error()
                got += 1
    finally:
        consumer.close()

    s = snapshot(broker)
    parts = by_partition(s)
    p0, p1 = parts[("load", 0)], parts[("load", 1)]
    assert (p0["role"], p0["leader"], p0["replicas"], p0["isr"]) == ("leader", 0, [0], [0])
    assert (p0["lag_messages"], p0["follower_lag_messages"]) == (0, {})
    assert p0["log_start_offset"] == 0 and p0["log_end_offset"] == p0["high_watermark"] == MESSAGES
    topic = s["topics"]["by_topic"]["load"]
    assert p0["messages_in"] == MESSAGES == topic["messages_in"]
    assert p0["bytes_in"] == topic["bytes_in"] > MESSAGES * SIZE
    assert p0["log_size_bytes"] == p0["bytes_in"]  # one producer: the log is what it sent
    # Every Produce request named partition 0 only, and every one appended.
    assert p0["produce_requests"] == s["requests"]["Produce"]["count"] > 0
    # One consumer read each batch once: the bytes out are the log's bytes, counted once.
    assert p0["bytes_out"] == p0["bytes_in"] == topic["bytes_out"]
    fetches = s["requests"]["FetchConsumer"]["count"]
    assert 0 < p0["fetch_requests"] <= fetches and 0 < p1["fetch_requests"] <= fetches
    for key in ("messages_in", "bytes_in", "bytes_out", "produce_requests", "log_end_offset"):
        assert p1[key] == 0, key
    for key in ("replication_bytes_in", "replication_bytes_out"):
        assert p0[key] == p1[key] == 0, key

    (d,) = s["log_dirs"]
    held = sum(p["log_size_bytes"] for p in s["partitions"])
    assert d["size_bytes"] == held >= p0["log_size_bytes"]
    assert d["total_bytes"] >= d["free_bytes"] > 0
    assert s["all_requests"]["count"] == sum(r["count"] for r in s["requests"].values())
    assert s["all_requests"]["queue_time_ms"]["window_count"] > 0

    text = httpx.get(f"{broker.admin_url}/metrics", timeout=10).content
    p = prometheus_samples(text)
    zero = labels(topic="load", partition="0")
    assert p["kafka_log_log_end_offset"][zero] == MESSAGES
    assert p["kafka_log_log_size"][zero] == p0["log_size_bytes"]
    assert p["kafka_server_partition_messages_in_total"][zero] == MESSAGES
    assert p["kafka_server_partition_bytes_out_total"][zero] == p0["bytes_out"]
    assert p["kafka_server_fetcherlagmetrics_consumerlag"][zero] == 0
    assert p["trio_broker_partition_is_leader"][zero] == 1
    assert p["trio_broker_log_dir_size_bytes"][labels(path=d["path"])] == d["size_bytes"]

    # The operator turns the per-partition series off at run time: the snapshot keeps them.
    r = httpx.put(
        f"{broker.admin_url}/v1/config",
        json={"settings": {"metrics.partition.prometheus.enable": "false"}},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    p = prometheus_samples(httpx.get(f"{broker.admin_url}/metrics", timeout=10).content)
    assert not any(name.startswith(("kafka_log_log_", "kafka_server_partition_")) for name in p)
    assert "trio_broker_log_dir_size_bytes" in p
    assert by_partition(snapshot(broker))[("load", 0)]["messages_in"] == MESSAGES
