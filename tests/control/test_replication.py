"""Replication in a ZooKeeper cluster (issue 18): followers fetch their leaders' logs, the
high watermark and acks=all wait for the ISR, min.insync.replicas refuses what the ISR
cannot hold, a dead leader's partitions move to an in-sync follower with nothing
acknowledged lost, and a replica that diverged truncates to its new leader's log. Real
ZooKeeper, real broker processes, confluent-kafka clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from .test_zookeeper_cluster import SESSION_MS, broker, metadata, until


@pytest.fixture
def zk(connect: str) -> Iterator[tuple[str, KazooClient]]:
    client = KazooClient(hosts=connect)
    client.start(30)
    yield connect, client
    client.stop()
    client.close()


def start(tmp_path: Path, connect: str, ids: list[int], *more: str) -> dict[int, BrokerProcess]:
    brokers = {i: broker(tmp_path, connect, i, *more).start() for i in ids}
    until("every broker named", lambda: sorted(metadata(brokers[ids[0]]).brokers) == ids)
    return brokers


def stop_all(brokers: dict[int, BrokerProcess]) -> None:
    """SIGTERM each running broker; one that does not stop is killed and named."""
    hung = []
    for i, b in brokers.items():
        if b.proc is not None and b.proc.poll() is None:
            os.kill(b.proc.pid, signal.SIGCONT)
            try:
                b.terminate()
            except subprocess.TimeoutExpired:
                b.kill()
                hung.append(f"broker {i} did not stop on SIGTERM:\n" + "".join(b.log[-30:]))
    assert not hung, "\n".join(hung)


def bootstrap(brokers: dict[int, BrokerProcess]) -> str:
    return ",".join(
        b.bootstrap for b in brokers.values() if b.proc is not None and b.proc.poll() is None
    )


def produce(servers: str, topic: str, values: list[bytes], **conf: Any) -> list[Any]:
    """Send ``values`` round robin over the partitions; each (error, message) delivery
    report. ``conf`` keys are librdkafka's with ``_`` for ``.``."""
    reports: list[Any] = []
    settings = {k.replace("_", "."): v for k, v in conf.items()}
    p = Producer({"bootstrap.servers": servers, "linger.ms": 5, **settings})
    for v in values:
        p.produce(topic, value=v, on_delivery=lambda err, msg: reports.append((err, msg)))
        p.poll(0)
    assert p.flush(60) == 0
    return reports


def consume_all(servers: str, topic: str, partitions: int, expected: int) -> dict[int, list]:
    c = Consumer({"bootstrap.servers": servers, "group.id": "check", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        until(
            f"{expected} messages read back",
            lambda: _poll_into(c, got) >= expected,
            timeout=60,
        )
        # Nothing more comes (no duplicate beyond what was expected).
        for msg in c.consume(100, timeout=1):
            if msg.error() is None:
                got[msg.partition()].append(msg.value())
    finally:
        c.close()
    return got


def _poll_into(c: Consumer, got: dict[int, list[bytes]]) -> int:
    for msg in c.consume(500, timeout=0.5):
        if msg.error() is None:
            got[msg.partition()].append(msg.value())
    return sum(len(v) for v in got.values())


def partition_state(client: KazooClient, topic: str, p: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        client.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0]
    )
    return data


def test_an_rf3_topic_loses_nothing_acknowledged_when_its_leaders_die(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("orders", 2, 3, config={"min.insync.replicas": "2"})])[
            "orders"
        ].result(30)
        md = metadata(brokers[0]).topics["orders"]
        for p in md.partitions.values():
            assert sorted(p.replicas) == [0, 1, 2] and sorted(p.isrs) == [0, 1, 2]
        first = [b"first-%d" % i for i in range(300)]
        reports = produce(bootstrap(brokers), "orders", first, acks="all", enable_idempotence=True)
        assert all(err is None for err, _ in reports)

        # The leader of partition 0 dies: an in-sync follower takes over, epoch bumped.
        victim = partition_state(client, "orders", 0)["leader"]
        epoch = partition_state(client, "orders", 0)["leader_epoch"]
        brokers[victim].kill()
        until(
            "a new leader for partition 0",
            lambda: partition_state(client, "orders", 0)["leader"] not in (victim, -1),
            timeout=SESSION_MS / 1000 + 30,
        )
        state = partition_state(client, "orders", 0)
        assert state["leader_epoch"] > epoch
        assert victim not in state["isr"] and len(state["isr"]) == 2

        # Producers go on: two in-sync replicas meet min.insync.replicas=2.
        second = [b"second-%d" % i for i in range(300)]
        reports = produce(bootstrap(brokers), "orders", second, acks="all", enable_idempotence=True)
        assert all(err is None for err, _ in reports)

        # The dead broker comes back with its old log: it catches up and rejoins the ISR.
        brokers[victim] = broker(tmp_path, connect, victim).start()
        until(
            f"broker {victim} back in every ISR",
            lambda: all(victim in partition_state(client, "orders", p)["isr"] for p in (0, 1)),
            timeout=60,
        )
        got = consume_all(bootstrap(brokers), "orders", 2, 600)
        values = [v for p in (0, 1) for v in got[p]]
        assert sorted(values) == sorted(first + second)  # each exactly once
        for p in (0, 1):  # in order per partition: as produced
            assert [v for v in got[p] if v.startswith(b"first")] == [
                v for v in first if v in set(got[p])
            ]

        # And it holds them: with the others gone it serves every message itself.
        for other in [i for i in brokers if i != victim]:
            brokers[other].kill()
        survivors = {victim: brokers[victim]}
        got = consume_all(bootstrap(survivors), "orders", 2, 600)
        assert sorted(v for p in (0, 1) for v in got[p]) == sorted(first + second)
    finally:
        stop_all(brokers)


def test_acks_all_needs_min_insync_replicas(tmp_path: Path, zk: tuple[str, KazooClient]) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1])
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("strict", 1, 2, config={"min.insync.replicas": "2"})])[
            "strict"
        ].result(30)
        leader = partition_state(client, "strict", 0)["leader"]
        follower = 1 - leader
        reports = produce(bootstrap(brokers), "strict", [b"ok"], acks="all")
        assert reports[0][0] is None

        brokers[follower].kill()
        until(
            "the dead follower out of the ISR",
            lambda: partition_state(client, "strict", 0)["isr"] == [leader],
            timeout=SESSION_MS / 1000 + 30,
        )
        servers = brokers[leader].bootstrap
        reports = produce(servers, "strict", [b"refused"], acks="all", retries=0)
        assert reports[0][0].code() == KafkaError.NOT_ENOUGH_REPLICAS
        # acks=1 does not need the followers.
        reports = produce(servers, "strict", [b"one"], acks=1)
        assert reports[0][0] is None
    finally:
        stop_all(brokers)


def test_a_diverged_replica_truncates_to_its_new_leaders_log(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """The leader takes acks=1 records its follower never fetched, then dies; the follower
    leads; the old leader comes back, finds its log diverged at the leader epoch, cuts
    the records nobody else has and takes the new leader's."""
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1], "replica.lag.time.max.ms=60000")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("t", 1, 2)])["t"].result(30)
        old = partition_state(client, "t", 0)["leader"]
        new = 1 - old
        assert produce(bootstrap(brokers), "t", [b"both-%d" % i for i in range(5)], acks="all")
        servers = brokers[old].bootstrap
        pid = brokers[new].proc.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGSTOP)  # the follower stops fetching (ZooKeeper keeps it)
        try:
            lost = produce(servers, "t", [b"lost-%d" % i for i in range(5)], acks=1)
            assert all(err is None for err, _ in lost)
            brokers[old].kill()
        finally:
            os.kill(pid, signal.SIGCONT)
        until(
            f"broker {new} leads",
            lambda: partition_state(client, "t", 0)["leader"] == new,
            timeout=SESSION_MS / 1000 + 30,
        )
        kept = produce(brokers[new].bootstrap, "t", [b"after-%d" % i for i in range(5)], acks="all")
        assert all(err is None for err, _ in kept)

        brokers[old] = broker(tmp_path, connect, old).start()
        until(
            f"broker {old} back in the ISR",
            lambda: old in partition_state(client, "t", 0)["isr"],
            timeout=60,
        )
        brokers[new].kill()  # now the truncated replica serves alone
        until(
            f"broker {old} leads again",
            lambda: partition_state(client, "t", 0)["leader"] == old,
            timeout=SESSION_MS / 1000 + 30,
        )
        got = consume_all(brokers[old].bootstrap, "t", 1, 10)
        assert got[0] == [b"both-%d" % i for i in range(5)] + [b"after-%d" % i for i in range(5)]
    finally:
        stop_all(brokers)
