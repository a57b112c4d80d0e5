"""KIP-714's ``CLIENT_METRICS`` subscriptions in a ZooKeeper cluster are the cluster's: one
made through one broker (IncrementalAlterConfigs from kafka-python's admin client, or the
admin API) is on every broker, a deletion through another goes from all, a broker that
joins later has them, and a real librdkafka producer is given it and pushes. ZooKeeper holds each at ``/config/client-metrics/<name>``. Real
ZooKeeper, real broker processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from .test_zookeeper_cluster import broker, metadata, until

ADMIN = "admin.listeners=http://127.0.0.1:0"


def subscriptions(b: BrokerProcess) -> dict[str, Any]:
    r = httpx.get(f"{b.admin_url}/v1/client-metrics/subscriptions", timeout=10)
    return {s["name"]: s for s in r.json()["subscriptions"]}


def test_a_subscription_made_on_one_broker_is_on_every_broker(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i, ADMIN).start() for i in (0, 1)}
    try:
        until("both named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        admin = KafkaAdminClient(bootstrap_servers=brokers[0].bootstrap)
        try:
            res = ConfigResource(
                ConfigResourceType.CLIENT_METRICS,
                "apps",
                configs={
                    "metrics": ("SET", "org.apache.kafka.producer."),
                    "interval.ms": ("SET", "500"),
                    "match": ("SET", "client_id=app-.*"),
                },
            )
            assert admin.alter_configs([res], incremental=True, raise_on_unknown=False) == {
                "client_metrics": {"apps": "OK"}
            }
        finally:
            admin.close()
        until("broker 1 has it", lambda: "apps" in subscriptions(brokers[1]))
        assert subscriptions(brokers[1])["apps"] == {
            "name": "apps",
            "metrics": "org.apache.kafka.producer.",
            "interval.ms": 500,
            "match": "client_id=app-.*",
        }
        node = json.loads(client.get("/config/client-metrics/apps")[0])
        assert node["config"] == {
            "metrics": "org.apache.kafka.producer.",
            "interval.ms": "500",
            "match": "client_id=app-.*",
        }

        # a producer is given it by whichever broker librdkafka picks for its telemetry
        producer = Producer({"bootstrap.servers": brokers[1].bootstrap, "client.id": "app-1"})

        def pushed() -> bool:
            producer.produce("t", b"v")
            producer.poll(0.05)
            for b in brokers.values():
                r = httpx.get(f"{b.admin_url}/v1/client-metrics", timeout=10)
                if any(c["client_id"] == "app-1" and c["metrics"] for c in r.json()["clients"]):
                    return True
            return False

        until("the producer pushes", pushed)
        producer.flush(5)

        # made through broker 1's admin API, deleted through broker 0's
        url = f"{brokers[1].admin_url}/v1/client-metrics/subscriptions/all"
        assert httpx.put(url, json={"metrics": "*"}, timeout=10).status_code == 200
        until("broker 0 has 'all'", lambda: "all" in subscriptions(brokers[0]))
        gone = f"{brokers[0].admin_url}/v1/client-metrics/subscriptions/apps"
        assert httpx.delete(gone, timeout=10).status_code == 200
        until("'apps' gone from broker 1", lambda: "apps" not in subscriptions(brokers[1]))
        assert client.exists("/config/client-metrics/apps") is None

        # a broker that joins later has them
        brokers[2] = broker(tmp_path, connect, 2, ADMIN).start()
        until("broker 2 has 'all'", lambda: "all" in subscriptions(brokers[2]))
        assert subscriptions(brokers[2]) == subscriptions(brokers[0])
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.terminate()
