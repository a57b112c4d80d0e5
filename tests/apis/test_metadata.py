"""Metadata v0-v12: brokers, cluster, controller, topics, auto-creation, topic ids."""

from __future__ import annotations

import uuid

import pytest

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.schema import ZERO_UUID

from ..support.wire import AsyncWireClient


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


def topics_req(*names: str, version: int, auto: bool = True) -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequest.Topic(name=n) for n in names], allow_auto_topic_creation=auto
    )


@pytest.mark.parametrize("version", range(14))
async def test_every_version_describes_the_cluster(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"num.partitions": "3"})
    client = await AsyncWireClient.connect(address(broker))
    created = await client.request(topics_req("events", version=version), version)
    (topic,) = created.topics
    assert topic.error_code == ErrorCode.NONE and topic.name == "events"
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    assert all(p.leader_id == 0 and p.isr_nodes == [0] for p in topic.partitions)
    assert (topic.topic_id != ZERO_UUID) == (version >= 10)

    everything = MetadataRequest(topics=[] if version == 0 else None)
    response = await client.request(everything, version)
    host, port = broker.bound_listeners()["PLAINTEXT"]
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(0, host, port)]
    # __consumer_offsets (the group coordinator's) is there from the start, as internal.
    assert [t.name for t in response.topics] == ["__consumer_offsets", "events"]
    if version >= 1:
        assert [t.is_internal for t in response.topics] == [True, False]
    if version >= 1:
        assert response.controller_id == 0
    if version >= 13:  # KIP-1102's top-level error: none
        assert response.error_code == ErrorCode.NONE
    if version >= 2:
        assert response.cluster_id == broker.cluster_id


async def test_an_empty_list_asks_for_no_topics_from_v1(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    await client.request(topics_req("a", version=4), 4)
    assert (await client.request(MetadataRequest(topics=[]), 1)).topics == []


async def test_auto_creation_can_be_refused_by_request_or_by_config(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    (t,) = (await client.request(topics_req("nope", version=4, auto=False), 4)).topics
    assert t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    off = await run_broker({"auto.create.topics.enable": "false"})
    client2 = await AsyncWireClient.connect(address(off))
    (t,) = (await client2.request(topics_req("nope", version=4), 4)).topics
    assert t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [t.name for t in off.topics() if not t.internal] == []


@pytest.mark.parametrize("name", ["bad name", "a" * 250, "..", "x/y"])
async def test_invalid_topic_names_are_refused(run_broker, name: str) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    (t,) = (await client.request(topics_req(name, version=9), 9)).topics
    assert t.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


async def test_v12_finds_topics_by_id(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    client = await AsyncWireClient.connect(address(broker))
    (made,) = (await client.request(topics_req("by-id", version=12), 12)).topics
    req = MetadataRequest(topics=[MetadataRequest.Topic(topic_id=made.topic_id, name=None)])
    (found,) = (await client.request(req, 12)).topics
    assert (found.name, found.topic_id) == ("by-id", made.topic_id)
    missing = uuid.uuid4()
    req = MetadataRequest(topics=[MetadataRequest.Topic(topic_id=missing, name=None)])
    (t,) = (await client.request(req, 12)).topics
    assert (t.error_code, t.topic_id) == (ErrorCode.UNKNOWN_TOPIC_ID, missing)


async def test_advertised_listeners_are_what_clients_are_told(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"advertised.listeners": "PLAINTEXT://kafka.example.test:19092"})
    client = await AsyncWireClient.connect(address(broker))
    response = await client.request(MetadataRequest(topics=[]), 9)
    assert [(b.host, b.port) for b in response.brokers] == [("kafka.example.test", 19092)]
