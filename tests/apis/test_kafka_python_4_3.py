"""kafka-python pinned to Kafka 4.3, as its own integration suite runs it at
KAFKA_VERSION=4.3 (``api_version=env_kafka_version()`` in every client it makes): it takes
Kafka 4.3's version table, each API capped by what kafka-python itself speaks (Produce v9,
Fetch v12, OffsetCommit/OffsetFetch v8 in kafka-python 3.0.12) and the broker's answer to
ApiVersions, which now reads as 4.3 (kafka-python infers the broker's release from marker
versions: DescribeLogDirs v5 is 4.3's). A producer, a consumer group and the admin calls
of its suite run against a real broker; the broker's request metrics show that the 4.x
versions arrived (Metadata v13, ListOffsets v11, DescribeCluster v2,
AlterPartitionReassignments v1, ListConfigResources v1, DescribeTopicPartitions v0)."""

from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic, OffsetSpec

from ..support.brokers import BrokerThread

KAFKA_4_3 = (4, 3)


def versions_seen(broker: BrokerThread) -> dict[str, set[int]]:
    snapshot: dict[str, Any] = broker.call(lambda: broker.broker.metrics_snapshot())
    return {name: {int(v) for v in r["versions"]} for name, r in snapshot["requests"].items()}


def test_kafka_python_at_kafka_4_3(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, api_version=KAFKA_4_3)
    try:
        admin.create_topics([NewTopic("kp43", 2, 1)])
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=KAFKA_4_3)
        for i in range(20):
            producer.send("kp43", value=b"%d" % i, partition=i % 2)
        producer.flush(10)
        producer.close()

        consumer = KafkaConsumer(
            "kp43",
            bootstrap_servers=broker.bootstrap,
            api_version=KAFKA_4_3,
            group_id="kp43-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            heartbeat_interval_ms=500,
        )
        try:
            got: list[bytes] = []
            for _ in range(200):
                for records in consumer.poll(timeout_ms=100).values():
                    got.extend(r.value for r in records)
                if len(got) == 20:
                    break
            assert sorted(got) == sorted(b"%d" % i for i in range(20))
            consumer.commit()
            tp = TopicPartition("kp43", 0)
            assert consumer.committed(tp) == 10
        finally:
            consumer.close()

        described = admin.describe_topic_partitions(["kp43"])
        assert [len(t["partitions"]) for t in described["topics"]] == [2]
        assert "kp43" in admin.list_config_resources()["topic"]
        assert admin.alter_partition_reassignments({tp: [0]}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_offsets({tp: OffsetSpec.LATEST})[tp].offset == 10
        assert [b["is_fenced"] for b in admin.describe_cluster()["brokers"]] == [False]
    finally:
        admin.close()

    seen = versions_seen(broker)
    # Kafka 4.x's versions, as kafka-python sends them pinned to 4.3
    for api, version in {
        "Metadata": 13,
        "ListOffsets": 11,
        "DescribeTopicPartitions": 0,
        "ListConfigResources": 1,
        "AlterPartitionReassignments": 1,
        "DescribeCluster": 2,
    }.items():
        assert version in seen.get(api, set()), (api, seen)
