"""Metadata from a broker the controller has not described the cluster to yet.

A broker of a ZooKeeper cluster accepts clients as soon as it has registered; the
controller's first UpdateMetadata comes moments later. It used to answer in between with
itself as the only broker and ZooKeeper's controller, another broker it had left out:
librdkafka's AdminClient then never connected to that controller, and CreateTopics waited
out its timeout on an idle cluster (the bench smoke test's ``test_reassignment``). Now such
a request waits, parked, for the controller's word; with none within the bound it gets
Kafka's answer for an empty cache: no brokers, controller -1. The controller's
UpdateMetadata to the new broker is held at a gate, so that the client's first Metadata
lands in that window every time. Real ZooKeeper, real brokers, confluent-kafka.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from trio_broker.apis import metadata
from trio_broker.apis.context import RequestContext
from trio_broker.protocol.api import ApiKey
from trio_broker.protocol.messages.cluster import DescribeClusterRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerThread
from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient


def settings(connect: str, broker_id: int) -> dict[str, str]:
    return {
        "broker.id": str(broker_id),
        "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "control.plane.listener.name": "CONTROLLER",
        "zookeeper.connect": connect,
        "zookeeper.session.timeout.ms": "6000",
    }


def controller_elected(client: KazooClient, timeout: float = 30) -> int:
    """The broker id in ``/controller``, once there is one (a watch, not a poll)."""
    found: list[int] = []
    seen = threading.Event()

    def watch(data: bytes | None, stat: Any) -> bool:
        if data:
            found.append(int(json.loads(data)["brokerid"]))
            seen.set()
            return False  # stop watching
        return True

    client.DataWatch("/controller", watch)
    assert seen.wait(timeout), "no controller elected"
    return found[0]


def test_an_admin_client_bootstrapped_at_a_broker_not_yet_described_to_creates_topics(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    b0 = BrokerThread(tmp_path / "b0", settings(connect, 0)).start()
    b1: BrokerThread | None = None
    try:
        assert controller_elected(client) == 0
        # Broker 1 holds the controller's UpdateMetadata until the client has asked it
        # for Metadata (and notes when that first request arrives).
        gate, asked = Gate(), threading.Event()

        async def noting(ctx: RequestContext, body: Any) -> Any:
            asked.set()
            return await metadata.handle(ctx, body)

        table = gated_table(ApiKey.UpdateMetadata, gate, ("control",))
        b1 = BrokerThread(
            tmp_path / "b1", settings(connect, 1), table.with_handler(ApiKey.Metadata, noting)
        ).start()
        # ... and has read ZooKeeper's /controller: what it used to answer Metadata with.
        assert b1.broker is not None and b1.broker.zk is not None
        coordinator = b1.broker.zk.coordinator

        async def controller_known() -> int:
            with trio.fail_after(20):
                return await coordinator.controller_known()

        token = b1.call(trio.lowlevel.current_trio_token)
        assert trio.from_thread.run(controller_known, trio_token=token) == 0
        admin = AdminClient({"bootstrap.servers": b1.bootstrap})
        futures = admin.create_topics([NewTopic("born", 2, 2)], request_timeout=20)
        assert asked.wait(20), "the AdminClient sent no Metadata"
        b1.call(gate.open)
        # Before the fix: broker 1 answered brokers [1] and controller 0; the client
        # learned broker 0 only from a later answer naming the same controller, never
        # connected to it, and this timed out with _TIMED_OUT.
        futures["born"].result(30)
        md = admin.list_topics(timeout=10)
        assert sorted(md.brokers) == [0, 1] and md.controller_id == 0
        assert sorted(md.topics["born"].partitions) == [0, 1]
        assert not b0.errors and not b1.errors
    finally:
        if b1 is not None:
            b1.call(gate.open)  # else its controlled shutdown waits behind the gate
            b1.stop()
        b0.stop()


async def test_with_no_word_from_the_controller_metadata_names_nobody_after_the_wait(
    run_broker: Any,
    connect: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metadata, "DESCRIBED_WAIT_MS", 300)
    gate = Gate()  # the broker is its own controller: its UpdateMetadata to itself waits
    asked = [trio.Event()]  # the last is set when a Metadata request reaches its handler

    async def noting(ctx: RequestContext, body: Any) -> Any:
        asked[-1].set()
        return await metadata.handle(ctx, body)

    table = gated_table(ApiKey.UpdateMetadata, gate, ("control",))
    broker = await run_broker(settings(connect, 0), table.with_handler(ApiKey.Metadata, noting))
    try:
        host, port = broker.bound_listeners()["PLAINTEXT"]
        client = await AsyncWireClient.connect(f"{host}:{port}")
        began = trio.current_time()
        with trio.fail_after(10):
            md = await client.request(MetadataRequest(topics=[]), 12)
        assert trio.current_time() - began >= 0.3  # parked for the whole bound
        assert md.brokers == [] and md.controller_id == -1  # Kafka's empty cache
        with trio.fail_after(10):
            described = await client.request(DescribeClusterRequest(), 1)
        assert described.brokers == [] and described.controller_id == -1
        assert broker.purgatories["metadata"].expired_count == 2
        # Parked again, and answered as soon as the controller's UpdateMetadata lands.
        asked.append(trio.Event())
        await client.send(MetadataRequest(topics=[]), 12)
        with trio.fail_after(10):
            await asked[-1].wait()  # parked by now: the handler parks before it yields
        assert broker.purgatories["metadata"].size == 1
        gate.open()
        with trio.fail_after(10):
            _, md = await client.receive()
        assert [b.node_id for b in md.brokers] == [0] and md.controller_id == 0
        assert broker.purgatories["metadata"].completed_count == 1
    finally:
        gate.open()  # else its controlled shutdown waits behind the gate
