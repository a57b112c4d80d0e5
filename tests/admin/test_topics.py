"""Topics through the admin API (``/v1/topics``), against a real broker over TCP.

A topic created with ``POST /v1/topics`` is what Kafka clients see (confluent-kafka's
AdminClient lists it and describes its configs; a producer and a consumer use it); every
refusal carries the Kafka error, and the broker's message, that CreateTopics gives for the
same request (sent on the wire beside it); ``validate_only`` creates nothing; ``DELETE``
removes the topic for Kafka clients too, and refuses what DeleteTopics refuses.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.topics import CreateTopicsRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .conftest import ADMIN, TOKEN, error_code

Wanted = CreateTopicsRequest.CreatableTopic
Assignment = Wanted.CreatableReplicaAssignment
Config = Wanted.CreatableTopicConfig


def kafka_admin(broker: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def listed(broker: BrokerThread) -> dict[str, int]:
    """Topic -> partition count, as a Kafka client's Metadata sees them."""
    md = kafka_admin(broker).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def created(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = http.post("/v1/topics", json=body)
    assert r.status_code == 201, r.text
    answer: dict[str, Any] = r.json()
    return answer


def test_a_posted_topic_is_a_kafka_topic(admin_broker: BrokerThread, http: httpx.Client) -> None:
    topic = created(
        http,
        {
            "name": "orders",
            "partitions": 3,
            "replication_factor": 1,
            "configs": {"retention.ms": "3600000", "cleanup.policy": "delete"},
        },
    )
    assert topic["name"] == "orders" and topic["internal"] is False
    assert topic["partition_count"] == 3 and topic["replication_factor"] == 1
    assert topic["configs"] == {"retention.ms": "3600000", "cleanup.policy": "delete"}
    assert [p["partition"] for p in topic["partitions"]] == [0, 1, 2]
    assert all(
        p["leader"] == 0 and p["replicas"] == [0] and p["isr"] == [0] and p["offline"] == []
        for p in topic["partitions"]
    )
    # GET shows the same, and the list names it with its id and count.
    assert http.get("/v1/topics/orders").json() == topic
    summary = {k: v for k, v in topic.items() if k != "partitions"}
    assert summary in http.get("/v1/topics").json()["topics"]

    # Kafka clients: Metadata (the same topic id), DescribeConfigs, produce, consume.
    kafka = kafka_admin(admin_broker)
    assert listed(admin_broker)["orders"] == 3
    (description,) = kafka.describe_topics(TopicCollection(["orders"])).values()
    seen_id = description.result(10).topic_id
    high, low = seen_id.get_most_significant_bits(), seen_id.get_least_significant_bits()
    assert uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64)) == uuid.UUID(topic["topic_id"])
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders")
    configs = kafka.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    producer = Producer({"bootstrap.servers": admin_broker.bootstrap})
    for i in range(6):
        producer.produce("orders", value=f"m{i}".encode(), partition=i % 3)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": admin_broker.bootstrap,
            "group.id": "orders-reader",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition("orders", p, OFFSET_BEGINNING) for p in range(3)])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 30
    try:
        while len(seen) < 6:
            assert time.monotonic() < deadline, f"consumed only {sorted(seen)}"
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
    finally:
        consumer.close()
    assert seen == {f"m{i}".encode() for i in range(6)}


# --------------------------------------------------------------------- refusals


def wire_topic(body: dict[str, Any]) -> Any:
    """The CreateTopics topic a Kafka client sends for the same fields (-1: default)."""
    assignment = body.get("assignment") or []
    return Wanted(
        name=body["name"],
        num_partitions=body.get("partitions", -1),
        replication_factor=body.get("replication_factor", -1),
        assignments=[
            Assignment(partition_index=p, broker_ids=ids) for p, ids in enumerate(assignment)
        ],
        configs=[Config(name=k, value=v) for k, v in body.get("configs", {}).items()],
    )


REFUSED = [
    ({"name": "bad name!"}, "INVALID_TOPIC_EXCEPTION"),
    ({"name": ""}, "INVALID_TOPIC_EXCEPTION"),
    ({"name": "x" * 250}, "INVALID_TOPIC_EXCEPTION"),
    ({"name": "zero", "partitions": 0}, "INVALID_PARTITIONS"),
    ({"name": "minus", "partitions": -5}, "INVALID_PARTITIONS"),
    ({"name": "wide", "replication_factor": 2}, "INVALID_REPLICATION_FACTOR"),
    ({"name": "none", "replication_factor": 0}, "INVALID_REPLICATION_FACTOR"),
    ({"name": "cfg", "configs": {"retention.ms": "soon"}}, "INVALID_CONFIG"),
    ({"name": "cfg", "configs": {"no.such.config": "1"}}, "INVALID_CONFIG"),
    ({"name": "taken"}, "TOPIC_ALREADY_EXISTS"),
    ({"name": "placed", "assignment": [[0], [7]]}, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "placed", "assignment": [[0, 0]]}, "INVALID_REPLICA_ASSIGNMENT"),
    ({"name": "placed", "partitions": 2, "assignment": [[0]]}, "INVALID_REQUEST"),
]
STATUS = {"TOPIC_ALREADY_EXISTS": 409}


@pytest.mark.parametrize("validate_only", [False, True])
def test_refusals_are_createtopics_refusals(
    admin_broker: BrokerThread, http: httpx.Client, validate_only: bool
) -> None:
    created(http, {"name": "taken"})
    before = http.get("/v1/topics").json()
    with WireClient(admin_broker.bootstrap) as kafka:
        for body, expected in REFUSED:
            r = http.post("/v1/topics", json={**body, "validate_only": validate_only})
            assert r.status_code == STATUS.get(expected, 400), (body, r.text)
            assert error_code(r) == expected, body
            request = CreateTopicsRequest(topics=[wire_topic(body)], validate_only=validate_only)
            (answer,) = kafka.request(request, 7).topics
            assert ErrorCode(answer.error_code).name == expected, body
            assert r.json()["error"]["message"] == answer.error_message, body
    assert http.get("/v1/topics").json() == before  # nothing was created
    assert "placed" not in listed(admin_broker)


def test_validate_only_creates_nothing(admin_broker: BrokerThread, http: httpx.Client) -> None:
    body = {"name": "maybe", "partitions": 4, "configs": {"retention.ms": "60000"}}
    r = http.post("/v1/topics", json={**body, "validate_only": True})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "validate_only": True,
        "name": "maybe",
        "partition_count": 4,
        "replication_factor": 1,
        "configs": {"retention.ms": "60000"},
        "assignment": None,
    }
    placed = {"name": "maybe", "assignment": [[0], [0]], "validate_only": True}
    r = http.post("/v1/topics", json=placed)
    assert r.status_code == 200, r.text
    assert r.json()["assignment"] == [[0], [0]] and r.json()["partition_count"] == 2
    assert http.get("/v1/topics/maybe").status_code == 404
    assert "maybe" not in listed(admin_broker)
    assert created(http, body)["partition_count"] == 4  # and it can still be created


def test_absent_counts_are_the_brokers_defaults(tmp_path: Path) -> None:
    settings = {**ADMIN, "num.partitions": "3", "delete.topic.enable": "false"}
    b = BrokerThread(tmp_path / "data", settings).start()
    try:
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            for body in (
                {"name": "d1"},
                {"name": "d2", "partitions": -1, "replication_factor": None},
            ):
                topic = created(http, body)
                assert (topic["partition_count"], topic["replication_factor"]) == (3, 1)
            assert listed(b)["d1"] == 3
            # delete.topic.enable=false: refused as DeleteTopics refuses it; still there.
            r = http.delete("/v1/topics/d1")
            assert r.status_code == 403 and error_code(r) == "TOPIC_DELETION_DISABLED"
            assert r.json()["error"]["message"] == "delete.topic.enable is false"
            assert http.get("/v1/topics/d1").status_code == 200
    finally:
        b.stop()


# --------------------------------------------------------------------- deletion


def test_delete_removes_the_topic_for_kafka_clients(
    admin_broker: BrokerThread, http: httpx.Client
) -> None:
    topic = created(http, {"name": "doomed", "partitions": 2})
    producer = Producer({"bootstrap.servers": admin_broker.bootstrap})
    producer.produce("doomed", value=b"last words")
    assert producer.flush(15) == 0
    r = http.delete("/v1/topics/doomed")
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "doomed", "topic_id": topic["topic_id"]}
    assert "doomed" not in listed(admin_broker)
    assert "doomed" not in [t["name"] for t in http.get("/v1/topics").json()["topics"]]
    r = http.get("/v1/topics/doomed")
    assert r.status_code == 404 and error_code(r) == "UNKNOWN_TOPIC_OR_PARTITION"
    r = http.delete("/v1/topics/doomed")
    assert r.status_code == 404 and error_code(r) == "UNKNOWN_TOPIC_OR_PARTITION"
    # An internal topic is its coordinator's: refused, and still there.
    assert "__consumer_offsets" in listed(admin_broker)
    r = http.delete("/v1/topics/__consumer_offsets")
    assert r.status_code == 400 and error_code(r) == "INVALID_TOPIC_EXCEPTION"
    assert "internal topic" in r.json()["error"]["message"]
    offsets = http.get("/v1/topics/__consumer_offsets").json()
    assert offsets["internal"] is True and offsets["configs"]["cleanup.policy"] == "compact"
    # A name of the same topic can be created again, with a new id.
    assert created(http, {"name": "doomed"})["topic_id"] != topic["topic_id"]


# ------------------------------------------------------------------ HTTP shape


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing-field"),
        ({"name": 7}, "invalid-field"),
        ({"name": "t", "partitions": "3"}, "invalid-field"),
        ({"name": "t", "partitions": 2.0}, "invalid-field"),
        ({"name": "t", "partitions": True}, "invalid-field"),
        ({"name": "t", "partitions": 1001}, "too-many-partitions"),
        ({"name": "t", "partitions": -(2**31) - 1}, "invalid-field"),
        ({"name": "t", "replication_factor": 2**15}, "invalid-field"),
        ({"name": "t", "configs": {"retention.ms": 1000}}, "invalid-field"),
        ({"name": "t", "configs": ["retention.ms=1000"]}, "invalid-field"),
        ({"name": "t", "assignment": [0, 1]}, "invalid-field"),
        ({"name": "t", "assignment": [[0]] * 1001}, "too-many-partitions"),
        ({"name": "t", "validate_only": "yes"}, "invalid-field"),
        ({"name": "t", "replicas": 1}, "unknown-field"),
    ],
)
def test_bodies_not_of_the_documented_shape_are_400(
    http: httpx.Client, body: dict[str, Any], code: str
) -> None:
    r = http.post("/v1/topics", json=body)
    assert r.status_code == 400, r.text
    assert error_code(r) == code
    assert http.get("/v1/topics/t").status_code == 404


def test_the_token_is_required(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", {**ADMIN, "admin.token": TOKEN}).start()
    calls = [
        ("GET", "/v1/topics", None),
        ("GET", "/v1/topics/guarded", None),
        ("POST", "/v1/topics", {"name": "guarded"}),
        ("DELETE", "/v1/topics/guarded", None),
    ]
    try:
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            for method, path, body in calls:
                for headers in ({}, {"Authorization": "Bearer wrong"}):
                    r = http.request(method, path, json=body, headers=headers)
                    assert r.status_code == 401 and error_code(r) == "unauthorized", path
            assert "guarded" not in listed(b)
            auth = {"Authorization": f"Bearer {TOKEN}"}
            expected = [200, 404, 201, 200]
            for (method, path, body), status in zip(calls, expected, strict=True):
                r = http.request(method, path, json=body, headers=auth)
                assert r.status_code == status, (method, path, r.text)
    finally:
        b.stop()
