"""Per-partition load in a three-broker ZooKeeper cluster (issue 32): under a small produce
and consume load, each partition's figures show on its leader and on its followers as
they happened (bytes and messages in on the leader only, replication bytes on both
sides); a follower frozen with SIGSTOP lags on its leader's books and is back to 0 after
SIGCONT; Prometheus has the partition series; GET /v1/cluster names every broker's admin
API, as each broker's ZooKeeper registration carries it. Real ZooKeeper, real broker
processes, confluent-kafka clients, live snapshots checked against the JSON Schema."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from ..support.metrics import labels, prometheus_samples, validate_snapshot
from .test_replication import bootstrap, consume_all, partition_state, start, stop_all
from .test_zookeeper_cluster import until

PARTITIONS = 3
MESSAGES = 600


def snapshot(b: BrokerProcess) -> dict[str, Any]:
    assert b.admin_url is not None
    return validate_snapshot(httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json())


def produce(servers: str, counts: dict[int, int], acks: str) -> None:
    """``counts[p]`` messages of 200 bytes to each partition ``p``, every one acknowledged."""
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": servers, "linger.ms": 5, "acks": acks})
    for partition, n in counts.items():
        for i in range(n):
            p.produce(
                "load",
                value=b"%0200d" % i,
                partition=partition,
                on_delivery=lambda err, msg: errors.append(err),
            )
            p.poll(0)
    assert p.flush(60) == 0
    assert errors == [None] * sum(counts.values()), errors[:3]


def replicas(b: BrokerProcess, topic: str) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in snapshot(b)["partitions"] if p["topic"] == topic}


def test_each_partition_shows_its_load_on_its_leader_and_followers(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(
        tmp_path,
        connect,
        [0, 1, 2],
        "admin.listeners=http://127.0.0.1:0",
        "zookeeper.session.timeout.ms=30000",  # a frozen follower keeps its registration
    )
    try:
        # Every broker's registration carries its admin API, and each one's
        # GET /v1/cluster names all three.
        urls = {i: b.admin_url for i, b in brokers.items()}
        for i in brokers:
            registered = json.loads(client.get(f"/brokers/ids/{i}")[0])
            assert registered["admin_url"] == urls[i] and registered["version"] == 5
        for b in brokers.values():
            assert b.admin_url is not None
            seen = httpx.get(f"{b.admin_url}/v1/cluster", timeout=10).json()
            assert {x["id"]: x["admin"] for x in seen["brokers"]} == urls

        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("load", PARTITIONS, 3)])["load"].result(30)
        leaders = {p: partition_state(client, "load", p)["leader"] for p in range(PARTITIONS)}
        sent = {p: MESSAGES // PARTITIONS * (p + 1) // 2 for p in range(PARTITIONS)}
        produce(bootstrap(brokers), sent, "all")
        got = consume_all(bootstrap(brokers), "load", PARTITIONS, sum(sent.values()))
        assert {p: len(v) for p, v in got.items()} == sent

        def settled() -> dict[int, dict[int, dict[str, Any]]] | None:
            """Every replica at its leader's log end, the consumer's reads counted."""
            seen = {i: replicas(b, "load") for i, b in brokers.items()}
            for p, leader in leaders.items():
                led = seen[leader][p]
                if led["bytes_out"] < led["bytes_in"] or any(
                    seen[i][p]["log_end_offset"] != sent[p] for i in brokers
                ):
                    return None
            return seen

        seen = until("replicas caught up and the reads counted", settled)
        for p, leader in leaders.items():
            led = seen[leader][p]
            followers = [i for i in brokers if i != leader]
            assert (led["role"], led["leader"], sorted(led["isr"])) == ("leader", leader, [0, 1, 2])
            assert led["messages_in"] == sent[p] and led["bytes_in"] == led["log_size_bytes"]
            assert led["produce_requests"] > 0 and led["fetch_requests"] > 0
            assert led["bytes_out"] == led["bytes_in"]  # one consumer read it all, once
            assert led["replication_bytes_in"] == 0 and led["lag_messages"] == 0
            # Both followers fetched the whole log from it, and nothing twice.
            assert led["replication_bytes_out"] == 2 * led["log_size_bytes"]
            assert led["follower_lag_messages"] == {str(f): 0 for f in followers}
            for f in followers:
                r = seen[f][p]
                assert (r["role"], r["leader"]) == ("follower", leader)
                for key in ("messages_in", "bytes_in", "bytes_out", "produce_requests"):
                    assert r[key] == 0, (f, p, key)
                assert r["fetch_requests"] == 0 and r["replication_bytes_out"] == 0
                assert r["replication_bytes_in"] == r["log_size_bytes"] == led["log_size_bytes"]
                assert r["lag_messages"] == 0 and r["follower_lag_messages"] == {}
                assert r["high_watermark"] == sent[p]
        for i, b in brokers.items():
            s = snapshot(b)
            assert s["cluster"]["rack"] is None
            (d,) = s["log_dirs"]
            assert d["size_bytes"] >= sum(p["log_size_bytes"] for p in seen[i].values())

        # Prometheus on a leader and a follower of partition 0.
        leader0 = leaders[0]
        follower0 = next(i for i in brokers if i != leader0)
        zero = labels(topic="load", partition="0")
        text = httpx.get(f"{brokers[leader0].admin_url}/metrics", timeout=10).content
        prom = prometheus_samples(text)
        assert prom["kafka_server_partition_messages_in_total"][zero] == sent[0]
        assert prom["kafka_log_log_end_offset"][zero] == sent[0]
        assert prom["trio_broker_partition_is_leader"][zero] == 1
        text = httpx.get(f"{brokers[follower0].admin_url}/metrics", timeout=10).content
        prom = prometheus_samples(text)
        assert prom["kafka_server_partition_replication_bytes_in_total"][zero] > 0
        assert prom["kafka_server_fetcherlagmetrics_consumerlag"][zero] == 0
        assert prom["trio_broker_partition_is_leader"][zero] == 0

        # A follower of partition 0 freezes: the leader's books show it falling behind.
        pid = brokers[follower0].proc.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGSTOP)
        try:
            extra = 50
            produce(brokers[leader0].bootstrap, {0: extra}, "1")
            lag = until(
                "the frozen follower's lag on its leader",
                lambda: replicas(brokers[leader0], "load")[0]["follower_lag_messages"][
                    str(follower0)
                ],
            )
            assert 0 < lag <= extra
        finally:
            os.kill(pid, signal.SIGCONT)

        def caught_up() -> bool:
            led = replicas(brokers[leader0], "load")[0]
            back = replicas(brokers[follower0], "load")[0]
            return (
                set(led["follower_lag_messages"].values()) == {0}
                and back["lag_messages"] == 0
                and back["log_end_offset"] == led["log_end_offset"] == sent[0] + extra
            )

        until("the follower back to 0 lag after SIGCONT", caught_up)
    finally:
        stop_all(brokers)
