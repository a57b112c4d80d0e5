"""The group coordinator's figures (issue 34): groups by protocol and state, rebalances,
and the server-side assignor's runs, in the snapshot (valid against its schema) and in
Prometheus, with a real consumer-protocol consumer and a real classic one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ...support.brokers import BrokerThread
from ...support.metrics import labels, prometheus_samples, validate_snapshot

DEADLINE_S = 30.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path / "data",
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "admin.listeners": "http://127.0.0.1:0",
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.consumer.heartbeat.interval.ms": "300",
        },
    ).start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("counted", 4, 1)])["counted"].result(timeout=15)
    yield b
    b.stop()
    assert b.errors == []


def test_groups_by_protocol_and_state_rebalances_and_assignments(broker: BrokerThread) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        producer.produce("counted", b"m", partition=i)
    assert producer.flush(15) == 0
    consumers = {
        name: Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": name,
                "auto.offset.reset": "earliest",
                **({"group.protocol": "consumer"} if name == "modern" else {}),
            }
        )
        for name in ("modern", "classic")
    }
    read = dict.fromkeys(consumers, 0)
    try:
        for c in consumers.values():
            c.subscribe(["counted"])
        start = time.monotonic()
        while min(read.values()) < 4:
            assert time.monotonic() - start < DEADLINE_S, read
            for name, c in consumers.items():
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    read[name] += 1
        with httpx.Client(base_url=broker.admin_url, timeout=10) as http:
            groups = validate_snapshot(http.get("/v1/metrics").json())["groups"]
            text = http.get("/metrics").content
    finally:
        for c in consumers.values():
            c.close()
    assert groups["classic"]["groups"] == {
        "Empty": 0,
        "PreparingRebalance": 0,
        "CompletingRebalance": 0,
        "Stable": 1,
    }
    assert groups["classic"]["rebalances"] == 1
    assert groups["consumer"]["groups"] == {
        "Empty": 0,
        "Assigning": 0,
        "Reconciling": 0,
        "Stable": 1,
    }
    # one member joining: the group epoch bumped once, one target assignment computed
    assert groups["consumer"]["rebalances"] == 1
    assert groups["consumer"]["assignments"] == 1
    took = groups["consumer"]["assignment_time_ms"]
    assert 0 < took["max"] <= took["total"] < 1000
    p = prometheus_samples(text)
    assert p["kafka_group_coordinator_groups"][labels(protocol="consumer", state="Stable")] == 1
    assert p["kafka_group_coordinator_groups"][labels(protocol="classic", state="Stable")] == 1
    assert p["kafka_group_coordinator_rebalances_total"][labels(protocol="consumer")] == 1
    assert p["kafka_group_coordinator_consumer_assignments_total"][()] == 1
    assert p["kafka_group_coordinator_consumer_assignment_time_ms_max"][()] == took["max"]
