"""Replication throttles (KIP-73) in a ZooKeeper cluster: a new replica of a partition
holding a few megabytes catches up no faster than the throttle allows, on the follower's
side or the leader's, while without a throttle it is done at once; ``trio-broker-controller
reassign --throttle`` sets the throttles of a move and ``--verify`` removes them; in-sync
replicas are never throttled; bad throttled-replicas lists are refused naming the key.
Real ZooKeeper, real broker processes, confluent-kafka clients.

Sizes are small (3 MB at 1 MB/s) so that each throttled copy lasts about two seconds: the
first megabyte goes at once (one fetch of ``replica.fetch.max.bytes`` before the rate is
over), the rest at the rate."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kazoo.client import KazooClient

from trio_broker.protocol.messages.configs import DescribeConfigsRequest
from trio_broker.tools import controller
from trio_broker.tools.client import WireClient
from trio_broker.tools.cluster_ops import ClusterOps

from ..support.brokers import BrokerProcess
from .test_replication import bootstrap, start, stop_all
from .test_zookeeper_cluster import until

RATE = 1_000_000  # bytes/s
SIZE = 3_000_000  # bytes in each partition moved
FETCH = 1_048_576  # replica.fetch.max.bytes: what goes before the rate is over
SLOWEST = (SIZE - FETCH) / RATE  # the least a throttled copy can take, in seconds
LEADER_LIST = "leader.replication.throttled.replicas"
FOLLOWER_LIST = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


def _fill(brokers: dict[int, BrokerProcess], topic: str, replicas: list[int], size: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap(brokers), "linger.ms": 20, "acks": "all"})
    value = b"v" * 1000
    for _ in range(size // len(value)):
        while True:
            try:
                p.produce(topic, value=value, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(30) == 0


def _alter(brokers: dict[int, BrokerProcess], kind: str, name: str, **settings: Any) -> None:
    """IncrementalAlterConfigs: SET each setting (``_`` for ``.``), DELETE a None."""
    entries = [
        ConfigEntry(
            k.replace("_", "."),
            None if v is None else str(v),
            incremental_operation=AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET,
        )
        for k, v in settings.items()
    ]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
    admin.incremental_alter_configs([resource])[resource].result(30)


def _described(b: BrokerProcess, kind: int, name: str) -> dict[str, str | None]:
    """DescribeConfigs asked of broker ``b`` itself: what is in force there."""
    res = DescribeConfigsRequest.Resource(
        resource_type=kind, resource_name=name, configuration_keys=None
    )
    with WireClient(b.bootstrap) as wire:
        (result,) = wire.request(DescribeConfigsRequest(resources=[res]), 1).results
    assert result.error_code == 0, result.error_message
    return {e.name: e.value for e in result.configs}


def _moved(client: KazooClient, topic: str, target: list[int]) -> bool:
    node = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    return bool(node["partitions"] == {"0": target} and not node.get("adding_replicas"))


def _move(brokers: dict[int, BrokerProcess], client: KazooClient, topic: str) -> float:
    """Seconds until ``topic``-0 has moved from [0] to [0, 1] (its new replica is in sync)."""
    began = time.monotonic()
    assert ClusterOps(brokers[0].bootstrap).reassign(topic, 0, [0, 1]) == "ok"
    until(f"{topic} moved", lambda: _moved(client, topic, [0, 1]), timeout=60)
    return time.monotonic() - began


def _throttles(b: BrokerProcess) -> dict[str, Any]:
    assert b.admin_url is not None
    snapshot = httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json()
    figures: dict[str, Any] = snapshot["cluster"]["replication"]["throttles"]
    return figures


def test_a_new_replica_catches_up_at_the_follower_or_the_leader_throttle(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1], "admin.listeners=http://127.0.0.1:0")
    try:
        for topic in ("free", "follower", "leader"):
            _fill(brokers, topic, [0], SIZE)

        free = _move(brokers, client, "free")
        assert free < SLOWEST / 2, free

        # The follower's side: broker 1's rate, the topic's follower list naming it.
        _alter(brokers, "broker", "1", follower_replication_throttled_rate=RATE)
        _alter(brokers, "topic", "follower", **{FOLLOWER_LIST: "0:1"})
        until(
            "broker 1 has the follower list in force",
            lambda: _described(brokers[1], 2, "follower")[FOLLOWER_LIST] == "0:1",
        )
        took = _move(brokers, client, "follower")
        assert took >= 0.9 * SLOWEST, took
        follower = _throttles(brokers[1])["follower"]
        assert follower["rate_limit"] == RATE and follower["held_back"] > 0
        assert follower["bytes"] >= SIZE and follower["byte_rate"] > 0
        assert _throttles(brokers[0])["leader"]["held_back"] == 0
        _alter(brokers, "broker", "1", follower_replication_throttled_rate=None)

        # The leader's side: broker 0's rate, the topic's leader list naming it.
        _alter(brokers, "broker", "0", leader_replication_throttled_rate=RATE)
        _alter(brokers, "topic", "leader", **{LEADER_LIST: "0:0"})
        until(
            "broker 0 has the leader list in force",
            lambda: _described(brokers[0], 2, "leader")[LEADER_LIST] == "0:0",
        )
        took = _move(brokers, client, "leader")
        assert took >= 0.9 * SLOWEST, took
        leader = _throttles(brokers[0])["leader"]
        assert leader["rate_limit"] == RATE and leader["held_back"] > 0
        assert leader["bytes"] >= SIZE
        assert brokers[0].admin_url is not None
        text = httpx.get(f"{brokers[0].admin_url}/metrics", timeout=10).text
        assert 'kafka_server_replication_throttled_rate{side="leader"} 1e+06' in text
        assert "kafka_server_leader_replication_byte_rate " in text
        assert 'kafka_server_replication_throttle_held_back_total{side="leader"}' in text
    finally:
        stop_all(brokers)


def test_the_controller_tool_throttles_a_move_and_verify_removes_the_throttles(
    tmp_path: Path, zk: tuple[str, KazooClient], capsys: pytest.CaptureFixture[str]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1])
    cluster = [f"--cluster={tmp_path / f'b{i}' / 'listeners.json'}" for i in (0, 1)]
    try:
        _fill(brokers, "moved", [0], SIZE)
        began = time.monotonic()
        args = ["reassign", "moved", "0", "--to", "0,1", "--throttle", str(RATE)]
        assert controller.main([*cluster, *args]) == 0
        out = capsys.readouterr().out
        assert f"throttled at {RATE} B/s on brokers [0, 1]" in out and "moved-0: ok" in out
        # As Kafka's tool: the current replicas throttled as leaders, the new as followers.
        for b in (0, 1):
            own = _described(brokers[b], 4, str(b))
            assert own[LEADER_RATE] == own[FOLLOWER_RATE] == str(RATE)
            until(
                f"broker {b} has the topic's lists",
                lambda b=b: (
                    (d := _described(brokers[b], 2, "moved"))[LEADER_LIST] == "0:0"
                    and d[FOLLOWER_LIST] == "0:1"
                ),
            )

        verify = [*cluster, "reassign", "moved", "0", "--verify"]

        def verified() -> bool:
            assert controller.main(verify) == 0
            return "done" in capsys.readouterr().out

        until("the move verified done", verified, timeout=60)
        assert time.monotonic() - began >= 0.9 * SLOWEST
        assert _moved(client, "moved", [0, 1])
        for b in (0, 1):  # the throttles are gone
            own = _described(brokers[b], 4, str(b))
            assert own[LEADER_RATE] == own[FOLLOWER_RATE] == str(2**63 - 1)
            until(
                f"broker {b} has the lists removed",
                lambda b=b: (
                    (d := _described(brokers[b], 2, "moved"))[LEADER_LIST] == ""
                    and d[FOLLOWER_LIST] == ""
                ),
            )
    finally:
        stop_all(brokers)


def test_in_sync_replicas_are_not_throttled_and_bad_lists_are_refused(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, _ = zk
    brokers = start(tmp_path, connect, [0, 1])
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        made = NewTopic("busy", 1, replica_assignment=[[0, 1]], config={"min.insync.replicas": "2"})
        admin.create_topics([made])["busy"].result(30)
        slow = 50_000  # 3 MB would take a minute at this rate
        for b in ("0", "1"):
            _alter(brokers, "broker", b, leader_replication_throttled_rate=slow)
            _alter(brokers, "broker", b, follower_replication_throttled_rate=slow)
        _alter(brokers, "topic", "busy", **{LEADER_LIST: "*", FOLLOWER_LIST: "*"})
        for b in (0, 1):
            until(
                f"broker {b} has the lists in force",
                lambda b=b: _described(brokers[b], 2, "busy")[FOLLOWER_LIST] == "*",
            )
        began = time.monotonic()
        p = Producer({"bootstrap.servers": bootstrap(brokers), "acks": "all", "linger.ms": 20})
        value = b"v" * 1000
        for _ in range(SIZE // len(value)):
            while True:
                try:
                    p.produce("busy", value=value, partition=0)
                    break
                except BufferError:
                    p.poll(0.05)
        assert p.flush(60) == 0
        took = time.monotonic() - began
        assert took < SIZE / slow / 6, took  # acks=all at full speed (10 s would be slow)

        for key in (LEADER_LIST, FOLLOWER_LIST):
            for bad in ("0:x", "*,0:1", "all"):
                with pytest.raises(KafkaException) as info:
                    _alter(brokers, "topic", "busy", **{key: bad})
                error = info.value.args[0]
                assert error.name() == "INVALID_CONFIG" and key in error.str(), error
            assert _described(brokers[0], 2, "busy")[key] == "*"  # unchanged
    finally:
        stop_all(brokers)
