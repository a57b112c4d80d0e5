"""The control plane at work: LeaderAndIsr, StopReplica and UpdateMetadata over the
control-plane listener, steering a static two-broker cluster with real clients."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.controller import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
)
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.records import Record, build_batch
from trio_broker.tools.controller import main as controller_main

from ..data.test_wire_data_path import fetch_req, produce_req
from ..support.brokers import BrokerThread
from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient, WireClient

PLANES = {
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "control.plane.listener.name": "CONTROLLER",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[list[BrokerThread]]:
    brokers = [
        BrokerThread(tmp_path / f"b{i}", {**PLANES, "broker.id": str(i)}).start() for i in (0, 1)
    ]
    yield brokers
    for b in brokers:
        b.stop()


def run_controller(brokers: list[BrokerThread], *args: str) -> int:
    files = [str(b.config.log_dirs[0] / "listeners.json") for b in brokers]
    return controller_main([a for f in files for a in ("--cluster", f)] + list(args))


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p: info.leader for p, info in md.topics[topic].partitions.items()}


def test_assign_and_move_leader_steer_real_clients(cluster: list[BrokerThread], capsys) -> None:  # type: ignore[no-untyped-def]
    b0, b1 = cluster
    admin = AdminClient({"bootstrap.servers": b0.bootstrap})
    admin.create_topics([NewTopic("spread", 2, 1)])["spread"].result(10)
    assert run_controller(cluster, "assign", "spread") == 0
    assert json.loads(capsys.readouterr().out) == {"0": 0, "1": 1}
    # Both brokers now tell clients the same story, whichever one they ask.
    assert leaders(b0.bootstrap, "spread") == leaders(b1.bootstrap, "spread") == {0: 0, 1: 1}

    p = Producer({"bootstrap.servers": b0.bootstrap, "enable.idempotence": False})
    for i in range(200):
        p.produce("spread", value=b"%d" % i, partition=i % 2)
    assert p.flush(15) == 0
    # Partition 1's records went to broker 1, the leader the controller chose.
    assert b1.call(lambda: b1.broker.replica_manager.partition("spread", 1).log_end_offset) == 100
    assert b0.call(lambda: b0.broker.replica_manager.partition("spread", 0).log_end_offset) == 100

    # A consumer parked on broker 0 for partition 0 is answered at once when it moves.
    with WireClient(b0.bootstrap) as parked:
        parked.send(fetch_req("spread", 100, wait=30_000), 11)
        assert run_controller(cluster, "move-leader", "spread", "0", "--to", "1") == 0
        _, resp = parked.receive()
        assert resp.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert leaders(b0.bootstrap, "spread") == {0: 1, 1: 1}
    with WireClient(b0.bootstrap) as c:
        batch = build_batch([Record(None, b"late")])
        (r,) = c.request(produce_req("spread", batch), 8).responses[0].partition_responses
        assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        # v10 (KIP-951): the answer names the new leader and where to reach it.
        moved = c.request(produce_req("spread", batch), 10)
        (r,) = moved.responses[0].partition_responses
        assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (r.current_leader.leader_id, r.current_leader.leader_epoch) == (1, 2)
        host, port = b1.broker.bound_listeners()["PLAINTEXT"]
        assert [(e.node_id, e.host, e.port) for e in moved.node_endpoints] == [(1, host, port)]
        # Fetch v16 (KIP-951) the same; before v16 the answer has no hint.
        topic_id = b0.call(lambda: b0.broker.topic("spread").topic_id)
        fetched = c.request(fetch_req("spread", 0, topic_id), 16)
        (f,) = fetched.responses[0].partitions
        assert f.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (f.current_leader.leader_id, f.current_leader.leader_epoch) == (1, 2)
        assert [(e.node_id, e.host, e.port) for e in fetched.node_endpoints] == [(1, host, port)]
        assert c.request(fetch_req("spread", 0, topic_id), 15).node_endpoints == []

    # The producer follows the new leader on its own.
    for i in range(50):
        p.produce("spread", value=b"moved %d" % i, partition=0)
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": b1.bootstrap, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition("spread", 0, 0)])
    got = []
    while len(got) < 50:
        m = c.poll(10)
        assert m is not None and m.error() is None, m and m.error()
        got.append(m.value())
    c.close()
    assert got == [b"moved %d" % i for i in range(50)]  # no replication: data stays put


def test_control_requests_are_refused_on_the_data_plane(cluster: list[BrokerThread]) -> None:
    b0, _ = cluster
    with WireClient(b0.bootstrap) as c:
        c.send(LeaderAndIsrRequest(controller_id=0, controller_epoch=1, topic_states=[]), 7)
        assert c.closed_by_peer()


def test_a_stale_controller_epoch_is_refused(cluster: list[BrokerThread]) -> None:
    b0, _ = cluster

    def lai(epoch: int, leader_epoch: int) -> object:
        state = LeaderAndIsrPartitionState(
            partition_index=0,
            controller_epoch=epoch,
            leader=0,
            leader_epoch=leader_epoch,
            isr=[0],
            partition_epoch=leader_epoch,
            replicas=[0],
        )
        return LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=epoch,
            topic_states=[LeaderAndIsrRequest.TopicState(topic_name="t", partition_states=[state])],
        )

    with WireClient(b0.address("CONTROLLER")) as c:
        ok = c.request(lai(10, 1), 7)
        assert ok.topics[0].partition_errors[0].error_code == ErrorCode.NONE
        stale = c.request(lai(9, 2), 7)
        assert stale.topics[0].partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        old_leader_epoch = c.request(lai(10, 1), 7)
        code = old_leader_epoch.topics[0].partition_errors[0].error_code
        assert code == ErrorCode.STALE_CONTROLLER_EPOCH


async def test_a_control_request_is_answered_before_the_data_plane_backlog_drains(
    run_broker,  # type: ignore[no-untyped-def]
) -> None:
    # How fast it is answered is measured in bench/control_plane.py (docs/BENCHMARKS.md);
    # here the order: with every data-plane handler held at a gate and the data request
    # channel full, control requests are still answered, and only then does the data
    # plane's backlog drain. Had they shared the data plane's queue, none would be.
    gate = Gate()
    broker = await run_broker(
        {**PLANES, "num.io.threads": "1", "queued.max.requests": "2"}, gated_table(3, gate)
    )
    host, port = broker.bound_listeners()["PLAINTEXT"]
    data = [await AsyncWireClient.connect(f"{host}:{port}") for _ in range(6)]
    for client in data:
        await client.send(MetadataRequest(topics=[]), 4)
    await trio.testing.wait_all_tasks_blocked()
    assert gate.waiting == 2  # both handlers of the one io thread
    assert broker.socket_server.data_requests.size == 2  # full, and more waiting behind it
    chost, cport = broker.bound_listeners()["CONTROLLER"]
    control = await AsyncWireClient.connect(f"{chost}:{cport}")
    state = LeaderAndIsrPartitionState(
        partition_index=0,
        controller_epoch=1,
        leader=0,
        leader_epoch=1,
        isr=[0],
        partition_epoch=1,
        replicas=[0],
    )
    with trio.fail_after(30):  # a guard against hanging, not a speed claim
        for epoch in range(1, 6):
            state.leader_epoch = epoch
            req = LeaderAndIsrRequest(
                controller_id=0,
                controller_epoch=1,
                topic_states=[
                    LeaderAndIsrRequest.TopicState(topic_name="ctl", partition_states=[state])
                ],
            )
            resp = await control.request(req, 7)
            assert resp.topics[0].partition_errors[0].error_code == ErrorCode.NONE
            assert broker.socket_server.data_requests.size == 2  # the backlog still waits
    assert gate.waiting == 2
    assert "Metadata" not in broker.metrics_snapshot()["requests"]  # no data answer yet
    gate.open()
    with trio.fail_after(30):
        for client in data:
            _, resp = await client.receive()
            assert resp.brokers


async def test_acks_all_is_not_acknowledged_when_leadership_goes_during_the_append(
    run_broker,  # type: ignore[no-untyped-def]
) -> None:
    # The leader of a replicated partition (its ISR itself alone, so an append is
    # replicated at once) loses the partition to broker 1 while a producer's acks=all
    # append waits for the io thread. The append still lands in this log, which broker 1
    # may never have: the producer must hear NOT_LEADER_OR_FOLLOWER (and retry at the new
    # leader), not an acknowledgement. (Found by partition reassignment under load: the
    # old leader acknowledged a batch the new leader never had.)
    broker = await run_broker({**PLANES, "num.io.threads": "1"})
    chost, cport = broker.bound_listeners()["CONTROLLER"]
    control = await AsyncWireClient.connect(f"{chost}:{cport}")

    async def lead(leader: int, leader_epoch: int) -> None:
        state = LeaderAndIsrPartitionState(
            partition_index=0,
            controller_epoch=1,
            leader=leader,
            leader_epoch=leader_epoch,
            isr=[leader],
            partition_epoch=leader_epoch,
            replicas=[0, 1],
        )
        req = LeaderAndIsrRequest(
            controller_id=0,
            controller_epoch=1,
            topic_states=[LeaderAndIsrRequest.TopicState(topic_name="t", partition_states=[state])],
        )
        resp = await control.request(req, 7)
        assert resp.topics[0].partition_errors[0].error_code == ErrorCode.NONE

    await lead(0, 1)
    host, port = broker.bound_listeners()["PLAINTEXT"]
    producer = await AsyncWireClient.connect(f"{host}:{port}")
    first = await producer.request(produce_req("t", build_batch([Record(None, b"a")]), acks=-1), 8)
    assert first.responses[0].partition_responses[0].error_code == ErrorCode.NONE

    hold = threading.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.io_pool.run, lambda: hold.wait(30))  # the one io thread
        await trio.testing.wait_all_tasks_blocked()
        await producer.send(produce_req("t", build_batch([Record(None, b"b")]), acks=-1), 8)
        while broker.io_pool.waiting == 0:  # the append queued behind the held job
            await trio.sleep(0.001)
        await lead(1, 2)  # broker 1 leads now; this broker follows it
        hold.set()
    _, resp = await producer.receive()
    (p,) = resp.responses[0].partition_responses
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
