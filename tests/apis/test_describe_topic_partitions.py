"""DescribeTopicPartitions (75, KIP-966) and ListConfigResources (74, KIP-1142).

kafka-python's admin client sends both to a broker that lists them (its own integration
tests, test_describe_topic_partitions, ..._pagination and test_list_config_resources, run
here against a real broker); the wire tests pin Kafka's paging (the cursor, the broker's
``max.request.partition.size.limit``), errors and authorization, and ListConfigResources'
types, order and refusals.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from trio_broker.apis.services import NewTopic as BrokerNewTopic
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.configs import ListConfigResourcesRequest
from trio_broker.protocol.messages.metadata import DescribeTopicPartitionsRequest
from trio_broker.security.acl import AclBinding

from ..support.brokers import BrokerThread
from ..support.wire import AsyncWireClient

Cursor = DescribeTopicPartitionsRequest.Cursor
TopicRequest = DescribeTopicPartitionsRequest.TopicRequest
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
ALL_OPERATIONS_OF_A_TOPIC = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def test_kafka_python_describes_topic_partitions_and_pages(broker: BrokerThread) -> None:
    rdk = AdminClient({"bootstrap.servers": broker.bootstrap})
    rdk.create_topics([NewTopic("dtp", 4, 1)])["dtp"].result(10)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = admin.describe_topic_partitions(["dtp"])
        assert result["next_cursor"] is None
        [t] = result["topics"]
        assert (t["name"], t["error_code"], t["is_internal"]) == ("dtp", 0, False)
        assert [p["partition_index"] for p in t["partitions"]] == [0, 1, 2, 3]
        for p in t["partitions"]:
            assert (p["error_code"], p["leader_id"], p["replica_nodes"], p["isr_nodes"]) == (
                0,
                0,
                [0],
                [0],
            )
        assert t["topic_authorized_operations"] == ALL_OPERATIONS_OF_A_TOPIC

        # a page of one partition, then the rest from the cursor
        page = admin.describe_topic_partitions(["dtp"], response_partition_limit=1)
        assert [p["partition_index"] for p in page["topics"][0]["partitions"]] == [0]
        assert page["next_cursor"] == {"topic_name": "dtp", "partition_index": 1}
        rest = admin.describe_topic_partitions(
            ["dtp"], response_partition_limit=10, cursor=page["next_cursor"]
        )
        assert [p["partition_index"] for p in rest["topics"][0]["partitions"]] == [1, 2, 3]
        assert rest["next_cursor"] is None

        listed = admin.list_config_resources()
        assert listed["broker"] == ["0"] and listed["broker_logger"] == ["0"]
        assert "dtp" in listed["topic"]
        assert admin.list_config_resources(["TOPIC"]) == {"topic": listed["topic"]}
    finally:
        admin.close()


async def _broker_with_topics(run_broker: Any, settings: dict[str, Any] | None = None) -> Any:
    broker = await run_broker(settings)
    for name, count in (("a", 3), ("b", 2), ("c", 1)):
        await broker.create_topic(BrokerNewTopic(name, count))
    return broker


async def _client(broker: Any) -> AsyncWireClient:
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return await AsyncWireClient.connect(f"{host}:{port}")


def _shape(answer: Any) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    cursor = answer.next_cursor
    return (
        [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in answer.topics],
        None if cursor is None else (cursor.topic_name, cursor.partition_index),
    )


async def test_pages_follow_the_cursor_and_the_broker_limit(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await _broker_with_topics(run_broker, {"max.request.partition.size.limit": 4})
    client = await _client(broker)

    async def ask(names: list[str], limit: int = 2000, cursor: Cursor | None = None) -> Any:
        req = DescribeTopicPartitionsRequest(
            topics=[TopicRequest(name=n) for n in names],
            response_partition_limit=limit,
            cursor=cursor,
        )
        return _shape(await client.request(req, 0))

    # the broker's limit (4) is below the request's (2000): a, then b's first partition
    assert await ask(["c", "a", "b"]) == ([("a", 0, [0, 1, 2]), ("b", 0, [0])], ("b", 1))
    # from the cursor: the rest of b, then c (topics before the cursor's are left out)
    assert await ask(["a", "b", "c"], cursor=Cursor(topic_name="b", partition_index=1)) == (
        [("b", 0, [1]), ("c", 0, [0])],
        None,
    )
    # the limit reached at a topic's end: the cursor names the next topic, partition 0
    assert await ask(["a", "b"], limit=3) == ([("a", 0, [0, 1, 2])], ("b", 0))
    # every topic when none is named (from the cursor's on)
    assert await ask([], limit=2, cursor=Cursor(topic_name="b", partition_index=0)) == (
        [("b", 0, [0, 1])],
        ("c", 0),
    )
    # unknown and illegal names, and a cursor past a topic's partitions
    assert await ask(
        ["a", "nope", "bad name!"], cursor=Cursor(topic_name="a", partition_index=9)
    ) == (
        [
            ("a", 0, []),
            ("bad name!", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
            ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
        ],
        None,
    )
    # the cursor's topic must be among those named: INVALID_REQUEST for each
    assert await ask(["a", "c"], cursor=Cursor(topic_name="b", partition_index=0)) == (
        [("a", ErrorCode.INVALID_REQUEST, []), ("c", ErrorCode.INVALID_REQUEST, [])],
        None,
    )


async def test_partition_details(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await _broker_with_topics(run_broker)
    client = await _client(broker)
    answer = await client.request(
        DescribeTopicPartitionsRequest(topics=[TopicRequest(name="b")]), 0
    )
    [t] = answer.topics
    assert t.topic_id == broker.topic("b").topic_id
    assert (t.is_internal, t.topic_authorized_operations) == (False, ALL_OPERATIONS_OF_A_TOPIC)
    for p in t.partitions:
        assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes) == (0, 0, [0], [0])
        assert (p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) == ([], [], [])


async def test_authorization(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await _broker_with_topics(
        run_broker, {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
    )
    anon = "User:ANONYMOUS"
    await broker.create_acls(
        [AclBinding.of("TOPIC", "b", "LITERAL", anon, "*", "DESCRIBE", "ALLOW")]
    )
    client = await _client(broker)
    named = await client.request(
        DescribeTopicPartitionsRequest(topics=[TopicRequest(name=n) for n in ("c", "b", "a")]),
        0,
    )
    # the topic allowed first, then the denied ones with no id nor partitions
    assert _shape(named) == (
        [
            ("b", 0, [0, 1]),
            ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED, []),
            ("c", ErrorCode.TOPIC_AUTHORIZATION_FAILED, []),
        ],
        None,
    )
    assert named.topics[0].topic_authorized_operations == 1 << 8  # DESCRIBE
    assert named.topics[1].topic_authorized_operations == -(2**31)  # not computed
    assert named.topics[1].topic_id.int == 0
    every = await client.request(DescribeTopicPartitionsRequest(topics=[]), 0)
    assert _shape(every) == ([("b", 0, [0, 1])], None)  # the others are not disclosed
    listed = await client.request(ListConfigResourcesRequest(), 1)
    assert (listed.error_code, listed.config_resources) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        [],
    )


@pytest.mark.parametrize("version", [0, 1])
async def test_list_config_resources(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await _broker_with_topics(run_broker)
    client = await _client(broker)

    async def ask(types: list[int]) -> tuple[int, list[tuple[int, str]]]:
        answer = await client.request(ListConfigResourcesRequest(resource_types=types), version)
        return answer.error_code, [
            (r.resource_type, r.resource_name) for r in answer.config_resources
        ]

    if version == 0:  # ListClientMetricsResources: client metrics only, none here
        assert await ask([]) == (0, [])
        return
    # every topic, internal ones too (a broker on its own creates __consumer_offsets)
    topics = [(TOPIC, n) for n in ("__consumer_offsets", "a", "b", "c")]
    assert await ask([]) == (0, [(BROKER_LOGGER, "0"), (BROKER, "0"), *topics])
    # the order is Kafka's, whatever the order asked
    assert await ask([TOPIC, BROKER, TOPIC]) == (0, [(BROKER, "0"), *topics])
    assert await ask([GROUP, CLIENT_METRICS]) == (0, [])
    # a type no version lists (DELEGATION_TOKEN's 64, or a bad one) refuses the request
    assert await ask([TOPIC, 64]) == (ErrorCode.UNSUPPORTED_VERSION, [])
