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
import threading
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from .test_zookeeper_cluster import SESSION_MS, broker, metadata, until


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


def parked_fetches(b: BrokerProcess) -> int:
    assert b.admin_url is not None
    size: int = httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json()["purgatories"]["fetch"][
        "size"
    ]
    return size


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
        # The leader writes the ISR to ZooKeeper first and then takes it in: a produce
        # in between is appended, then refused (AFTER_APPEND); from then on, refused first.
        codes: list[int] = []

        def refused_before_append() -> bool:
            reports = produce(servers, "strict", [b"refused"], acks="all", retries=0)
            codes.append(reports[0][0].code())
            return codes[-1] == KafkaError.NOT_ENOUGH_REPLICAS

        until("acks=all refused before the append", refused_before_append, timeout=30)
        after = KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert set(codes[:-1]) <= {after}, codes
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
    brokers = start(
        tmp_path,
        connect,
        [0, 1],
        "replica.lag.time.max.ms=60000",
        "admin.listeners=http://127.0.0.1:0",
    )
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
            # Its last fetch, parked at the leader, is answered (empty) before the records
            # come: it must not carry them to the frozen follower's socket.
            # (Twice in a row: a fetch sent just before the stop is parked by the second.)
            quiet: list[bool] = []
            until(
                "no fetch parked at the leader",
                lambda: quiet.append(parked_fetches(brokers[old]) == 0) or quiet[-2:] == [True] * 2,
            )
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


def test_a_frozen_follower_leaves_the_isr_and_comes_back(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """SIGSTOP: the follower's ZooKeeper session outlives the freeze, so only the leader's
    lag check can take it out of the ISR; acks=all then needs only the leader, and after
    SIGCONT the follower catches up and is added back."""
    connect, client = zk
    lag_ms = 2000
    brokers = start(
        tmp_path,
        connect,
        [0, 1],
        f"replica.lag.time.max.ms={lag_ms}",
        "zookeeper.session.timeout.ms=30000",
    )
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("f", 1, 2)])["f"].result(30)
        leader = partition_state(client, "f", 0)["leader"]
        follower = 1 - leader
        assert produce(bootstrap(brokers), "f", [b"before"], acks="all")[0][0] is None
        pid = brokers[follower].proc.pid  # type: ignore[union-attr]
        os.kill(pid, signal.SIGSTOP)
        try:
            until(
                "the frozen follower out of the ISR",
                lambda: partition_state(client, "f", 0)["isr"] == [leader],
                timeout=lag_ms / 1000 * 3 + 10,
            )
            until(  # the controller told the brokers (UpdateMetadata)
                "Metadata's ISR shrunk",
                lambda: metadata(brokers[leader]).topics["f"].partitions[0].isrs == [leader],
            )
            during = produce(brokers[leader].bootstrap, "f", [b"during"], acks="all")
            assert during[0][0] is None
        finally:
            os.kill(pid, signal.SIGCONT)
        until(
            "the follower back in the ISR",
            lambda: sorted(partition_state(client, "f", 0)["isr"]) == [0, 1],
            timeout=30,
        )
        # And the expansion reached every broker's Metadata.
        until(
            "Metadata's ISR updated",
            lambda: sorted(metadata(brokers[follower]).topics["f"].partitions[0].isrs) == [0, 1],
        )
    finally:
        stop_all(brokers)


def test_a_group_and_its_offsets_survive_the_death_of_its_coordinator(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """__consumer_offsets is a replicated topic of the cluster: a group's coordinator is the
    leader of its partition; when that broker dies, the new leader reads the partition
    back and serves the group with every committed offset."""
    from trio_broker.server.groups.storage import partition_for

    connect, client = zk
    brokers = start(
        tmp_path,
        connect,
        [0, 1, 2],
        "offsets.topic.replication.factor=3",
        "offsets.topic.num.partitions=3",
    )
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("g", 2, 3)])["g"].result(30)
        produce(bootstrap(brokers), "g", [b"m-%d" % i for i in range(40)], acks="all")
        conf = {
            "bootstrap.servers": bootstrap(brokers),
            "group.id": "grp",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        c = Consumer(conf)
        c.subscribe(["g"])
        seen: list[Any] = []
        until("20 messages consumed", lambda: _take(c, seen, 20), timeout=60)
        c.commit(asynchronous=False)
        committed = {tp.partition: tp.offset for tp in c.committed(c.assignment(), timeout=10)}
        c.close()
        assert sum(max(0, o) for o in committed.values()) == 20  # -1001: none committed

        offsets_partition = partition_for("grp", 3)
        coordinator = partition_state(client, "__consumer_offsets", offsets_partition)["leader"]
        assert json.loads(client.get("/brokers/topics/__consumer_offsets")[0])["partitions"]
        brokers[coordinator].kill()
        until(
            "a new coordinator",
            lambda: (
                partition_state(client, "__consumer_offsets", offsets_partition)["leader"]
                not in (coordinator, -1)
            ),
            timeout=SESSION_MS / 1000 + 30,
        )
        conf["bootstrap.servers"] = bootstrap(brokers)
        c = Consumer(conf)
        try:
            parts = [TopicPartition("g", p) for p in (0, 1)]
            again = {tp.partition: tp.offset for tp in c.committed(parts, timeout=30)}
            assert again == committed
            c.subscribe(["g"])
            rest: list[Any] = []
            until("the other 20 messages", lambda: _take(c, rest, 20), timeout=60)
            assert sorted(rest + seen) == sorted(b"m-%d" % i for i in range(40))
        finally:
            c.close()
    finally:
        stop_all(brokers)


def _take(c: Consumer, into: list[Any], count: int) -> bool:
    for msg in c.consume(count - len(into), timeout=0.5) if len(into) < count else []:
        if msg.error() is None:
            into.append(msg.value())
    return len(into) >= count


def test_leaders_killed_in_turn_under_load_lose_and_duplicate_nothing(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """The issue's drill: three brokers, an RF 3 topic with min.insync.replicas 2, an
    idempotent acks=all producer and a consumer group running; the leader of each
    partition is killed with SIGKILL in turn (and restarted, and back in the ISR, before
    the next). Every acknowledged message is in the log exactly once, in order per
    partition, and the group keeps consuming on the new leaders."""
    connect, client = zk
    extra = ["offsets.topic.replication.factor=3", "offsets.topic.num.partitions=2"]
    brokers = start(tmp_path, connect, [0, 1, 2], *extra)
    stop = threading.Event()
    acked: dict[int, list[int]] = {0: [], 1: []}
    consumed: set[bytes] = set()
    failures: list[str] = []
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("drill", 2, 3, config={"min.insync.replicas": "2"})])[
            "drill"
        ].result(30)
        servers = bootstrap(brokers)

        def producing() -> None:
            p = Producer(
                {
                    "bootstrap.servers": servers,
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                    "message.timeout.ms": 120000,
                }
            )

            def report(err: Any, msg: Any) -> None:
                if err is None:
                    acked[msg.partition()].append(int(msg.value()))
                else:
                    failures.append(str(err))

            n = 0
            while not stop.is_set() and n < 200_000:
                p.produce("drill", value=b"%d" % n, partition=n % 2, on_delivery=report)
                n += 1
                p.poll(0.002)
            p.flush(120)

        def consuming() -> None:
            c = Consumer(
                {
                    "bootstrap.servers": servers,
                    "group.id": "drill-group",
                    "auto.offset.reset": "earliest",
                }
            )
            c.subscribe(["drill"])
            while not stop.is_set():
                for msg in c.consume(100, timeout=0.2):
                    if msg.error() is None:
                        consumed.add(msg.value())
            c.close()

        threads = [threading.Thread(target=f, daemon=True) for f in (producing, consuming)]
        for t in threads:
            t.start()
        until("the producer under way", lambda: len(acked[0]) + len(acked[1]) > 200)
        for p in (0, 1):
            victim = partition_state(client, "drill", p)["leader"]
            before = len(acked[0]) + len(acked[1])
            brokers[victim].kill()
            until(
                f"partition {p} led by another broker",
                lambda p=p, v=victim: partition_state(client, "drill", p)["leader"] not in (v, -1),
                timeout=SESSION_MS / 1000 + 30,
            )
            until(
                "acknowledgements going on",
                lambda b=before: len(acked[0]) + len(acked[1]) > b + 200,
                timeout=60,
            )
            brokers[victim] = broker(tmp_path, connect, victim, *extra).start()
            until(
                f"broker {victim} back in every ISR",
                lambda v=victim: all(
                    v in partition_state(client, "drill", q)["isr"] for q in (0, 1)
                ),
                timeout=60,
            )
        # The group goes on too: it reads what was acknowledged after the last failover.
        mark = max(acked[0] + acked[1])
        until(
            "the group consuming on the new leaders",
            lambda: any(int(v) > mark for v in list(consumed)),
            timeout=60,
        )
        stop.set()
        for t in threads:
            t.join(150)
        assert not failures
        total = len(acked[0]) + len(acked[1])
        got = consume_all(bootstrap(brokers), "drill", 2, total)
        for p in (0, 1):
            values = [int(v) for v in got[p]]
            assert values == sorted(values)  # in order, no duplicate
            assert set(acked[p]) <= set(values)  # nothing acknowledged lost
    finally:
        stop.set()
        stop_all(brokers)


def test_a_broker_back_within_its_session_timeout_is_told_everything_again(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """kill -9 and an immediate restart: the new process registers as soon as the old
    session expires, so the controller can find the same brokers registered as before.
    It must still see a new broker (a new session: Kafka's broker epoch), move its
    leaderships away and tell it its partitions again. The controller is frozen (its
    session outlives the freeze) from the kill until the new registration, so that it
    can only tell by the session."""
    connect, client = zk
    brokers = {0: broker(tmp_path, connect, 0, "zookeeper.session.timeout.ms=30000").start()}
    brokers[1] = broker(tmp_path, connect, 1).start()  # SESSION_MS
    try:
        until("both named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("b", 1, replica_assignment=[[1, 0]])])["b"].result(30)
        until("both in sync", lambda: partition_state(client, "b", 0)["isr"] == [1, 0])
        assert produce(bootstrap(brokers), "b", [b"before"], acks="all")[0][0] is None
        before = partition_state(client, "b", 0)
        controller_id = json.loads(client.get("/controller")[0])["brokerid"]
        assert (before["leader"], controller_id) == (1, 0)
        old_session = client.exists("/brokers/ids/1").ephemeralOwner
        controller = brokers[0].proc.pid  # type: ignore[union-attr]
        os.kill(controller, signal.SIGSTOP)
        try:
            brokers[1].kill()
            brokers[1] = broker(tmp_path, connect, 1).start()  # same data dir
            until(
                "broker 1 registered under a new session",
                lambda: (s := client.exists("/brokers/ids/1")) and s.ephemeralOwner != old_session,
                timeout=SESSION_MS / 1000 + 30,
            )
        finally:
            os.kill(controller, signal.SIGCONT)
        until(
            "leadership moved away from the restarted broker, then it followed again",
            lambda: (
                (s := partition_state(client, "b", 0))["leader_epoch"] > before["leader_epoch"]
                and sorted(s["isr"]) == [0, 1]
            ),
        )
        assert partition_state(client, "b", 0)["leader"] == 0
        assert produce(bootstrap(brokers), "b", [b"after"], acks="all")[0][0] is None
        got = consume_all(bootstrap(brokers), "b", 1, 2)
        assert got == {0: [b"before", b"after"]}
    finally:
        stop_all(brokers)
