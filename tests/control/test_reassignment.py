"""Partition reassignment (KIP-455) in a ZooKeeper cluster: a partition moves to other
brokers under load with nothing lost or repeated, and a pending move is cancelled. Real
ZooKeeper, real broker processes, kafka-python's admin client (confluent-kafka 2.16 has
no reassignment calls), confluent-kafka producers and consumers.

The issue's drill moves 100 MB; here 6 MB are written before the move and about 2 MB/s
during and after it (20 MB at most), so that the test runs in about 15 s on a small
machine (the copy is the same code path whatever the size)."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import NoReassignmentInProgressError
from kazoo.client import KazooClient

from trio_broker.protocol.messages.reassignments import AlterPartitionReassignmentsRequest
from trio_broker.tools.client import WireClient

from ..support.brokers import BrokerProcess
from .test_replication import (
    bootstrap,
    consume_all,
    partition_state,
    start,
    stop_all,
)
from .test_zookeeper_cluster import until

VALUE = b"x" * 1000
BEFORE_MOVE = 6000  # messages of ~1 KB acknowledged before the move begins
MOST = 20000  # messages in all: 20 MB at most


def _node(client: KazooClient, topic: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    return doc


def _roles(client: KazooClient, brokers: dict[int, BrokerProcess]) -> tuple[int, int, int]:
    """(a, b, c): the partition goes from [a, b] to [b, c]; c is not the controller (it
    is stopped for a moment, and the admin client asks the controller)."""
    controller = json.loads(client.get("/controller")[0])["brokerid"]
    c = max(i for i in brokers if i != controller)
    a, b = sorted(i for i in brokers if i != c)
    return a, b, c


def _create(brokers: dict[int, BrokerProcess], topic: str, replicas: list[int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(30)


def _rf_change_refused(
    client: KazooClient, brokers: dict[int, BrokerProcess], target: list[int]
) -> str | None:
    """AlterPartitionReassignments v1 to the controller, moving stay-0 to ``target`` with
    AllowReplicationFactorChange false: the message of its INVALID_REPLICATION_FACTOR."""
    controller = json.loads(client.get("/controller")[0])["brokerid"]
    Topic = AlterPartitionReassignmentsRequest.ReassignableTopic
    request = AlterPartitionReassignmentsRequest(
        allow_replication_factor_change=False,
        topics=[
            Topic(
                name="stay",
                partitions=[Topic.ReassignablePartition(partition_index=0, replicas=target)],
            )
        ],
    )
    with WireClient(brokers[controller].bootstrap) as wire:
        answer = wire.request(request, 1)
    assert answer.error_code == 0 and answer.allow_replication_factor_change is False
    [result] = answer.responses[0].partitions
    assert result.error_code == 38  # INVALID_REPLICATION_FACTOR
    return result.error_message  # type: ignore[no-any-return]


def _admin(brokers: dict[int, BrokerProcess]) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap(brokers), request_timeout_ms=30000)


def test_a_partition_moves_to_other_brokers_under_load(
    tmp_path: Path,
    zk: tuple[str, KazooClient],
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    stop = threading.Event()
    acked: list[bytes] = []
    failures: list[Any] = []
    consumed: list[bytes] = []
    try:
        a, b, c = _roles(client, brokers)
        _create(brokers, "move", [a, b])
        servers = bootstrap(brokers)

        def producing() -> None:
            p = Producer(
                {
                    "bootstrap.servers": servers,
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                }
            )

            def report(err: Any, msg: Any) -> None:
                (failures.append(err) if err is not None else acked.append(msg.value()))

            n = 0
            while not stop.is_set() and n < MOST:
                try:
                    p.produce("move", value=b"%08d" % n + VALUE, partition=0, on_delivery=report)
                except BufferError:
                    p.poll(0.05)
                    continue
                n += 1
                if n >= BEFORE_MOVE and n % 100 == 0:
                    p.poll(0.05)  # then about 2 MB/s, during the move and after it
            p.flush(60)

        done_consuming = threading.Event()

        def consuming() -> None:
            cons = Consumer({"bootstrap.servers": servers, "group.id": "mover"})
            cons.assign([TopicPartition("move", 0, 0)])
            while not (done_consuming.is_set() and len(consumed) >= len(acked)):
                for msg in cons.consume(500, timeout=0.2):
                    if msg.error() is None:
                        consumed.append(msg.value())
            cons.close()

        threads = [threading.Thread(target=f, daemon=True) for f in (producing, consuming)]
        for t in threads:
            t.start()
        until("data acknowledged before the move", lambda: len(acked) >= BEFORE_MOVE, timeout=60)
        assert partition_state(client, "move", 0)["leader"] == a

        admin = _admin(brokers)
        tp = KpTopicPartition("move", 0)
        # Nothing moves yet; and the admin client now knows the controller (it asks any
        # broker the first time, which must not be the one about to be stopped).
        assert admin.list_partition_reassignments() == {}
        proc = brokers[c].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)  # the new replica waits: the move is seen going on
        try:
            assert admin.alter_partition_reassignments({tp: [b, c]}) == {tp: None}
            ongoing = admin.list_partition_reassignments()
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert ongoing == {
            tp: {"replicas": [b, c, a], "adding_replicas": [c], "removing_replicas": [a]}
        }
        assert _node(client, "move")["adding_replicas"] == {"0": [c]}

        def moved() -> bool:
            node = _node(client, "move")
            return (
                node["partitions"] == {"0": [b, c]}
                and not node["adding_replicas"]
                and not node["removing_replicas"]
            )

        until("the assignment is the target", moved, timeout=60)
        state = partition_state(client, "move", 0)
        assert state["leader"] == b and sorted(state["isr"]) == sorted([b, c])
        until(
            f"broker {a}'s replica deleted",
            lambda: not (tmp_path / f"b{a}" / "move-0").exists(),
        )
        assert (tmp_path / f"b{c}" / "move-0").exists()
        assert admin.list_partition_reassignments() == {}
        admin.close()

        mark = len(acked)  # the producer goes on against the new leader
        until(
            "acknowledgements after the move (or all sent)",
            lambda: len(acked) > mark + 50 or not threads[0].is_alive(),
        )
        stop.set()
        threads[0].join(90)
        assert not failures, failures[:5]
        done_consuming.set()
        threads[1].join(90)
        assert consumed == acked  # every message once, in order, across the move

        brokers[a].terminate()  # the data is on the new replicas alone
        got = consume_all(bootstrap(brokers), "move", 1, len(acked))
        assert got[0] == acked
    finally:
        stop.set()
        stop_all(brokers)


def test_a_pending_move_is_cancelled(
    tmp_path: Path,
    zk: tuple[str, KazooClient],
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    try:
        a, b, c = _roles(client, brokers)
        _create(brokers, "stay", [a, b])
        p = Producer({"bootstrap.servers": bootstrap(brokers), "acks": "all"})
        for i in range(1000):
            p.produce("stay", value=b"%d" % i, partition=0)
        assert p.flush(30) == 0
        admin = _admin(brokers)
        tp, unknown = KpTopicPartition("stay", 0), KpTopicPartition("stay", 7)
        assert admin.alter_partition_reassignments({tp: None})[tp] is NoReassignmentInProgressError
        bad = admin.alter_partition_reassignments({tp: [b, b]})[tp]
        assert bad is not None and bad.errno == 39  # INVALID_REPLICA_ASSIGNMENT
        assert admin.alter_partition_reassignments({tp: [b, 42]})[tp].errno == 39
        assert admin.alter_partition_reassignments({unknown: [b, c]})[unknown].errno == 3
        # v1 (KIP-860): another replica count is refused when the admin disallows it
        assert _rf_change_refused(client, brokers, [a, b, c]) == (
            "The replication factor is changed from 2 to 3"
        )
        epoch = partition_state(client, "stay", 0)["leader_epoch"]

        proc = brokers[c].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)  # the new replica never catches up
        try:
            assert admin.alter_partition_reassignments({tp: [b, c]}) == {tp: None}
            assert admin.list_partition_reassignments([tp])[tp]["adding_replicas"] == [c]
            # a move under way counts by its target's replicas (2 of the 3 held now)
            assert _rf_change_refused(client, brokers, [c]) == (
                "The replication factor is changed from 2 to 1"
            )
            assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
            assert admin.list_partition_reassignments() == {}
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        node = _node(client, "stay")
        # The original replicas in the order of the full set [b, c, a], as Kafka's
        # (replicas - adding): the leader stays, the preferred one may not.
        assert node["partitions"] == {"0": [b, a]}
        assert not node["adding_replicas"] and not node["removing_replicas"]
        state = partition_state(client, "stay", 0)
        assert state["leader"] == a and sorted(state["isr"]) == sorted([a, b])
        assert state["leader_epoch"] > epoch  # the replicas were told of each change
        until(
            f"broker {c}'s replica deleted",
            lambda: not (tmp_path / f"b{c}" / "stay-0").exists(),
            timeout=20,
        )
        admin.close()
        got = consume_all(bootstrap(brokers), "stay", 1, 1000)
        assert got[0] == [b"%d" % i for i in range(1000)]
        # and, after all that reading, it is still gone: no late LeaderAndIsr brought it back
        assert not (tmp_path / f"b{c}" / "stay-0").exists()
    finally:
        stop_all(brokers)
