"""Brokers that share a ZooKeeper form one cluster (issue 18, first parts): one cluster id,
every broker registered where Kafka's tools look, one controller elected, and every
broker's Metadata naming the live brokers and that controller; a killed controller is
replaced, and a broker that does not belong is refused at start-up. Real ZooKeeper (the
Debian package), real broker processes, confluent-kafka's AdminClient."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess

SESSION_MS = 4000  # how soon a killed broker's registration expires


def broker(tmp_path: Path, connect: str, broker_id: int, *more: str) -> BrokerProcess:
    data = tmp_path / f"b{broker_id}"
    return BrokerProcess(
        data,
        [
            f"log.dirs={data}",
            f"broker.id={broker_id}",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name=CONTROLLER",
            f"zookeeper.connect={connect}",
            f"zookeeper.session.timeout.ms={SESSION_MS}",
            # A last broker's partitions cannot move: its three attempts wait 0.5 s apart.
            "controlled.shutdown.retry.backoff.ms=500",
            *more,
        ],
    )


def until(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    """Poll another process's state until ``check()`` is truthy (no event crosses the
    process boundary); fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        threading.Event().wait(0.1)


def metadata(b: BrokerProcess) -> Any:
    return AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)


def test_two_brokers_form_one_cluster_with_one_controller(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    admin_api = "admin.listeners=http://127.0.0.1:0"
    b0 = broker(tmp_path, connect, 0, admin_api).start()
    b1 = broker(tmp_path, connect, 1, admin_api).start()
    try:
        # Registered where Kafka's tools look, in Kafka's format.
        assert sorted(client.get_children("/brokers/ids")) == ["0", "1"]
        reg = json.loads(client.get("/brokers/ids/1")[0])
        assert reg["version"] == 5 and reg["port"] == int(b1.bootstrap.rsplit(":", 1)[1])
        assert f"PLAINTEXT://{b1.bootstrap}" in reg["endpoints"]
        cluster_id = json.loads(client.get("/cluster/id")[0])["id"]
        controller = json.loads(client.get("/controller")[0])["brokerid"]
        assert controller in (0, 1)

        def told(b: BrokerProcess) -> Any:
            md = metadata(b)
            return md if sorted(md.brokers) == [0, 1] and md.controller_id == controller else None

        for b in (b0, b1):  # each broker names both, and the one controller
            md = until(f"{b.bootstrap} names both brokers", lambda b=b: told(b))
            assert md.cluster_id == cluster_id
            assert md.brokers[1].port == int(b1.bootstrap.rsplit(":", 1)[1])
        # The operator's view: GET /v1/cluster and Kafka's controller gauges.
        for b in (b0, b1):
            assert b.admin_url is not None
            seen = httpx.get(b.admin_url + "/v1/cluster", timeout=10).json()
            me = int(b is b1)
            assert seen["mode"] == "zookeeper" and seen["broker_id"] == me
            assert seen["controller_id"] == controller and seen["cluster_id"] == cluster_id
            assert seen["active_controller"] == (me == controller)
            assert seen["zookeeper"]["state"] == "connected" and seen["zookeeper"]["registered"]
            assert [x["id"] for x in seen["brokers"]] == [0, 1]
            text = httpx.get(b.admin_url + "/metrics", timeout=10).text
            active = 1.0 if me == controller else 0.0
            assert f"kafka_controller_active_controller_count {active}" in text
            assert "kafka_controller_offline_partitions_count 0.0" in text
    finally:
        b0.terminate()
        b1.terminate()
    assert client.get_children("/brokers/ids") == []  # a clean stop deregisters at once


def test_a_killed_controller_is_replaced_and_leaves_the_cluster(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i).start() for i in (0, 1)}
    try:
        first = (
            until("a controller", lambda: client.exists("/controller"))
            and json.loads(client.get("/controller")[0])["brokerid"]
        )
        survivor = brokers[1 - first]
        epoch = int(client.get("/controller_epoch")[0])
        brokers[first].kill()  # kill -9: its session expires after SESSION_MS

        def taken_over() -> Any:
            md = metadata(survivor)
            return md if md.controller_id == 1 - first and list(md.brokers) == [1 - first] else None

        until("the survivor is controller and alone", taken_over, timeout=SESSION_MS / 1000 + 30)
        assert int(client.get("/controller_epoch")[0]) == epoch + 1
        assert client.get_children("/brokers/ids") == [str(1 - first)]
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.terminate()


def test_a_broker_of_another_cluster_is_refused(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    other = tmp_path / "other"
    alone = BrokerProcess(other, [f"log.dirs={other}", "cluster.id=someOtherCluster"]).start()
    alone.terminate()
    b0 = broker(tmp_path, connect, 0).start()
    b0.terminate()
    code, lines = broker(tmp_path, connect, 1, f"log.dirs={other}").run_to_failure()
    assert code != 0
    cluster_id = json.loads(client.get("/cluster/id")[0])["id"]
    text = "\n".join(lines)
    assert "someOtherCluster" in text and cluster_id in text, text


def test_a_broker_without_zookeeper_says_so(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    code, lines = broker(tmp_path, dead, 0, "zookeeper.connection.timeout.ms=1500").run_to_failure()
    assert code != 0
    assert any(f"zookeeper.connect={dead}" in line for line in lines), lines


def test_topics_are_placed_across_the_cluster_and_served_by_their_leaders(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    b0 = broker(tmp_path, connect, 0).start()
    b1 = broker(tmp_path, connect, 1).start()
    try:
        until("both brokers named", lambda: sorted(metadata(b1).brokers) == [0, 1])
        admin = AdminClient({"bootstrap.servers": b0.bootstrap})
        admin.create_topics([NewTopic("orders", 4, 1, config={"retention.ms": "3600000"})])[
            "orders"
        ].result(30)
        # The controller placed the partitions round robin and every broker says so.
        assignment = json.loads(client.get("/brokers/topics/orders")[0])["partitions"]
        assert sorted(r[0] for r in assignment.values()) == [0, 0, 1, 1]
        for b in (b0, b1):
            md = until(
                f"{b.bootstrap} knows orders",
                lambda b=b: (
                    (t := metadata(b).topics.get("orders")) and len(t.partitions) == 4 and t
                ),
            )
            assert {p: md.partitions[p].leader for p in range(4)} == {
                int(p): r[0] for p, r in assignment.items()
            }
        state = json.loads(client.get("/brokers/topics/orders/partitions/0/state")[0])
        assert state["leader"] == assignment["0"][0] and state["leader_epoch"] == 0
        # Produced through one broker, each record goes to its partition's leader.
        p = Producer({"bootstrap.servers": b1.bootstrap})
        for i in range(40):
            p.produce("orders", value=b"%d" % i, partition=i % 4)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": b0.bootstrap, "group.id": "g"})
        c.assign([TopicPartition("orders", i, 0) for i in range(4)])
        got = set()
        while len(got) < 40:
            m = c.poll(10)
            assert m is not None and m.error() is None, m and m.error()
            got.add(m.value())
        c.close()
        assert got == {b"%d" % i for i in range(40)}
        # Each broker holds the logs of its own partitions only.
        for i in (0, 1):
            held = {d.name for d in (tmp_path / f"b{i}").glob("orders-*")}
            assert held == {f"orders-{p}" for p, r in assignment.items() if r == [i]}
        # The topic's config is the cluster's: a replica broker took it from ZooKeeper.
        leader_of_0 = {0: b0, 1: b1}[assignment["0"][0]]
        describer = AdminClient({"bootstrap.servers": leader_of_0.bootstrap})
        cfg = describer.describe_configs([ConfigResource("TOPIC", "orders")])
        (entries,) = [f.result(10) for f in cfg.values()]
        assert entries["retention.ms"].value == "3600000"
        # Deleted through the other broker: gone everywhere, ZooKeeper included.
        admin1 = AdminClient({"bootstrap.servers": b1.bootstrap})
        admin1.delete_topics(["orders"])["orders"].result(30)
        assert not client.exists("/brokers/topics/orders")
        for b in (b0, b1):
            until(f"{b.bootstrap} forgot orders", lambda b=b: "orders" not in metadata(b).topics)
    finally:
        b0.terminate()
        b1.terminate()


def test_a_dead_leaders_partitions_go_offline_and_come_back_with_it(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i).start() for i in (0, 1)}
    try:
        until("both brokers named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        admin.create_topics([NewTopic("t", 2, 1)])["t"].result(30)
        assignment = json.loads(client.get("/brokers/topics/t")[0])["partitions"]
        on_1 = [int(p) for p, r in assignment.items() if r == [1]]
        assert len(on_1) == 1
        brokers[1].kill()

        def offline() -> bool:
            md = metadata(brokers[0]).topics["t"]
            return md.partitions[on_1[0]].leader == -1

        until("broker 1's partition offline", offline, timeout=SESSION_MS / 1000 + 30)
        state = json.loads(client.get(f"/brokers/topics/t/partitions/{on_1[0]}/state")[0])
        assert (state["leader"], state["leader_epoch"]) == (-1, 1)
        brokers[1] = broker(tmp_path, connect, 1).start()  # same data dir

        def back() -> bool:
            md = metadata(brokers[0]).topics["t"]
            return md.partitions[on_1[0]].leader == 1

        until("broker 1 leads its partition again", back)
        state = json.loads(client.get(f"/brokers/topics/t/partitions/{on_1[0]}/state")[0])
        assert (state["leader"], state["leader_epoch"]) == (1, 2)
        p = Producer({"bootstrap.servers": brokers[0].bootstrap})
        p.produce("t", value=b"back", partition=on_1[0])
        assert p.flush(30) == 0
    finally:
        for b in brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.terminate()
