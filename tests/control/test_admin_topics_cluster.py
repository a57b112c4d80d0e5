"""``/v1/topics`` in a ZooKeeper cluster: ``POST`` on one broker takes the one creation path
to ZooKeeper, where the controller gives the topic's partitions leaders on both brokers
(replication_factor 2); the other broker's admin API and Kafka clients of either see it;
refusals are the cluster's (too few brokers, an unregistered one); ``DELETE`` on the other
broker removes it everywhere, and an internal topic is refused there too. Real ZooKeeper,
real broker processes, confluent-kafka's AdminClient."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from .test_replication import partition_state, stop_all
from .test_zookeeper_cluster import broker, metadata, until

ADMIN_API = "admin.listeners=http://127.0.0.1:0"
OFFSETS_RF = "offsets.topic.replication.factor=2"  # two brokers: the offsets topic can be made


def url(b: BrokerProcess) -> str:
    assert b.admin_url is not None
    return b.admin_url


def detail(b: BrokerProcess, topic: str) -> Any:
    r = httpx.get(f"{url(b)}/v1/topics/{topic}", timeout=10)
    return r.json() if r.status_code == 200 else None


def test_a_topic_posted_on_one_broker_is_placed_on_both_by_the_controller(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i, ADMIN_API, OFFSETS_RF).start() for i in (0, 1)}
    try:
        until("both brokers named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        b0, b1 = brokers[0], brokers[1]

        # Refused as CreateTopics refuses it in this cluster: two brokers, and no broker 7.
        for body, code in (
            ({"name": "spread", "replication_factor": 3}, "INVALID_REPLICATION_FACTOR"),
            ({"name": "spread", "assignment": [[0, 7]]}, "INVALID_REPLICA_ASSIGNMENT"),
        ):
            r = httpx.post(f"{url(b0)}/v1/topics", json=body, timeout=60)
            assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text
        dry = {"name": "spread", "partitions": 2, "replication_factor": 2, "validate_only": True}
        assert httpx.post(f"{url(b0)}/v1/topics", json=dry, timeout=60).status_code == 200
        assert client.exists("/brokers/topics/spread") is None  # nothing written

        body = {"name": "spread", "partitions": 2, "replication_factor": 2}
        r = httpx.post(f"{url(b0)}/v1/topics", json=body, timeout=60)
        assert r.status_code == 201, r.text
        topic = r.json()
        assert topic["partition_count"] == 2 and topic["replication_factor"] == 2
        # Answered once this broker's metadata has it: every partition led, on both brokers.
        for p in topic["partitions"]:
            assert sorted(p["replicas"]) == [0, 1] and p["leader"] in (0, 1)
        # ZooKeeper holds the placement and the controller's leaders, where Kafka's tools look.
        placed = json.loads(client.get("/brokers/topics/spread")[0])
        assert placed["topic_id"] is not None
        assert {int(k): sorted(v) for k, v in placed["partitions"].items()} == {
            0: [0, 1],
            1: [0, 1],
        }
        for p in topic["partitions"]:
            state = partition_state(client, "spread", p["partition"])
            assert state["leader"] == p["leader"] and p["leader"] in state["isr"]

        # The other broker's admin API and Kafka clients of either broker see the same topic.
        def seen_by_b1() -> Any:
            got = detail(b1, "spread")
            synced = got is not None and all(sorted(p["isr"]) == [0, 1] for p in got["partitions"])
            return got if synced else None

        other = until("broker 1 has both replicas in sync", seen_by_b1)
        assert other["topic_id"] == topic["topic_id"]
        for b in (b0, b1):
            md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
            assert {p: sorted(m.replicas) for p, m in md.topics["spread"].partitions.items()} == {
                0: [0, 1],
                1: [0, 1],
            }

        # Deleted through broker 1: gone from ZooKeeper and from both brokers.
        r = httpx.delete(f"{url(b1)}/v1/topics/spread", timeout=60)
        assert r.status_code == 200 and r.json()["topic_id"] == topic["topic_id"], r.text
        assert client.exists("/brokers/topics/spread") is None
        until("broker 0 forgot it", lambda: detail(b0, "spread") is None)
        until("Kafka clients forgot it", lambda: "spread" not in metadata(b0).topics)

        # __consumer_offsets, made by a group lookup, is its coordinator's: not deleted.
        kafka = AdminClient({"bootstrap.servers": b0.bootstrap})
        kafka.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"].result(60)
        until("the offsets topic", lambda: detail(b1, "__consumer_offsets"))
        r = httpx.delete(f"{url(b1)}/v1/topics/__consumer_offsets", timeout=60)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "INVALID_TOPIC_EXCEPTION"
        assert client.exists("/brokers/topics/__consumer_offsets") is not None
        assert detail(b0, "__consumer_offsets")["internal"] is True
    finally:
        stop_all(brokers)
