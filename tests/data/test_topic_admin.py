"""Topic administration and offsets through real admin clients."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from kafka.admin import KafkaAdminClient

from ..support.brokers import BrokerThread


@pytest.fixture
def admin(broker: BrokerThread) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def error_of(future) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as info:
        future.result(10)
    return info.value.args[0].name()


def test_create_with_configs_and_describe_them(admin: AdminClient, broker: BrokerThread) -> None:
    admin.create_topics(
        [NewTopic("cfg", 4, 1, config={"retention.ms": "3600000", "max.message.bytes": "2048"})]
    )["cfg"].result(10)
    md = admin.list_topics(timeout=10)
    assert sorted(md.topics["cfg"].partitions) == [0, 1, 2, 3]
    res = ConfigResource(ConfigResource.Type.TOPIC, "cfg")
    entries = admin.describe_configs([res])[res].result(10)
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == 1  # TOPIC_CONFIG
    assert entries["segment.bytes"].value == "1073741824"
    assert entries["segment.bytes"].source == 5  # DEFAULT_CONFIG
    broker_res = ConfigResource(ConfigResource.Type.BROKER, "0")
    broker_entries = admin.describe_configs([broker_res])[broker_res].result(10)
    assert broker_entries["num.io.threads"].value == "4"
    assert broker_entries["log.dirs"].is_read_only


def test_create_errors(admin: AdminClient) -> None:
    fs = admin.create_topics(
        [
            NewTopic("rf3", 1, 3),
            NewTopic("bad-config", 1, 1, config={"retention.ms": "soon"}),
            NewTopic("unknown-config", 1, 1, config={"no.such.key": "1"}),
            NewTopic("bad name", 1, 1),
        ]
    )
    assert error_of(fs["rf3"]) == "INVALID_REPLICATION_FACTOR"
    assert error_of(fs["bad-config"]) == "INVALID_CONFIG"
    assert error_of(fs["unknown-config"]) == "INVALID_CONFIG"
    assert error_of(fs["bad name"]) == "TOPIC_EXCEPTION"  # librdkafka's name for 17
    admin.create_topics([NewTopic("twice", 1, 1)])["twice"].result(10)
    assert (
        error_of(admin.create_topics([NewTopic("twice", 1, 1)])["twice"]) == "TOPIC_ALREADY_EXISTS"
    )


def test_validate_only_creates_nothing(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("dry", 2, 1)], validate_only=True)["dry"].result(10)
    assert "dry" not in admin.list_topics(timeout=10).topics


def test_delete_topic_removes_its_data(admin: AdminClient, broker: BrokerThread) -> None:
    admin.create_topics([NewTopic("gone", 2, 1)])["gone"].result(10)
    data_dir = broker.config.log_dirs[0]
    assert (data_dir / "gone-0").is_dir()
    admin.delete_topics(["gone"])["gone"].result(10)
    assert "gone" not in admin.list_topics(timeout=10).topics
    assert not (data_dir / "gone-0").exists()
    assert error_of(admin.delete_topics(["gone"])["gone"]) == "UNKNOWN_TOPIC_OR_PART"


def test_aiokafka_creates_and_deletes_a_topic_with_null_messages(broker: BrokerThread) -> None:
    """aiokafka's own admin test (``test_delete_topics``): a created topic's error message
    is null, as Kafka sends it, not "" (the default a nullable string once had here)."""
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic

    async def main() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            created = await admin.create_topics([AioNewTopic("aio-admin", 1, 1)])
            assert created.API_VERSION >= 1  # a version whose answer has error_message
            assert created.topic_errors[0][:3] == ("aio-admin", 0, None)
            assert "aio-admin" in await admin.list_topics()
            again = await admin.create_topics([AioNewTopic("aio-admin", 1, 1)])
            name, code, message = again.topic_errors[0][:3]
            assert (name, code) == ("aio-admin", 36) and message  # TOPIC_ALREADY_EXISTS
            deleted = await admin.delete_topics(["aio-admin"])
            assert list(deleted.topic_error_codes) == [("aio-admin", 0)]
            assert "aio-admin" not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(main())


def test_create_partitions(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("grow", 1, 1)])["grow"].result(10)
    admin.create_partitions([NewPartitions("grow", 3)])["grow"].result(10)
    assert sorted(admin.list_topics(timeout=10).topics["grow"].partitions) == [0, 1, 2]
    assert (
        error_of(admin.create_partitions([NewPartitions("grow", 2)])["grow"])
        == "INVALID_PARTITIONS"
    )


def test_offsets_by_time_and_delete_records(admin: AdminClient, broker: BrokerThread) -> None:
    admin.create_topics([NewTopic("times", 1, 1)])["times"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    base = int(time.time() * 1000) - 100_000
    for i in range(100):
        p.produce("times", value=b"x", partition=0, timestamp=base + i * 1000)
        p.flush(10)  # one batch per message, so timestamps index precisely
    tp = TopicPartition("times", 0)
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max": OffsetSpec.max_timestamp(),
        "t42": OffsetSpec.for_timestamp(base + 42_000),
        "t42.5": OffsetSpec.for_timestamp(base + 42_500),
        "future": OffsetSpec.for_timestamp(base + 10_000_000),
    }
    got = {
        name: admin.list_offsets({tp: spec})[tp].result(10).offset for name, spec in specs.items()
    }
    assert got == {"earliest": 0, "latest": 100, "max": 99, "t42": 42, "t42.5": 43, "future": -1}

    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    from kafka import TopicPartition as KTP

    result = kadmin.delete_records({KTP("times", 0): 30})
    kadmin.close()
    assert result[KTP("times", 0)]["low_watermark"] == 30
    c = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "w", "enable.auto.commit": False}
    )
    assert c.get_watermark_offsets(tp, timeout=10) == (30, 100)
    c.close()


def test_retention_by_bytes_deletes_old_segments(admin: AdminClient, broker: BrokerThread) -> None:
    admin.create_topics(
        [NewTopic("small", 1, 1, config={"segment.bytes": "2048", "retention.bytes": "4096"})]
    )["small"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(200):
        p.produce("small", value=b"%0100d" % i, partition=0)
        p.flush(10)
    plog = broker.call(lambda: broker.broker.replica_manager.partition("small", 0))
    assert len(plog.segment_base_offsets) > 5  # rolled by size
    broker.call(broker.broker.replica_manager._retention)
    start = plog.log_start_offset
    assert start > 0 and plog.size_bytes <= 4096 + 2048
    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "r",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition("small", 0, start)])
    m = c.poll(10)
    assert m is not None and m.error() is None and m.offset() == start
    assert m.value() == b"%0100d" % start
    c.close()
