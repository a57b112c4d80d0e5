"""Leaderships moved on purpose in a ZooKeeper cluster: controlled shutdown on SIGTERM and
preferred elections (ElectLeaders), with real ZooKeeper, real broker processes and
confluent-kafka clients."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from .test_replication import (
    bootstrap,
    consume_all,
    partition_state,
    start,
    stop_all,
)
from .test_zookeeper_cluster import SESSION_MS, broker, metadata, until

PARTITIONS = 6


def _create(brokers: dict[int, Any], topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
    new = NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)


def test_a_stopping_leader_hands_its_partitions_over_first(
    tmp_path: Path,
    zk: tuple[str, KazooClient],
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    try:
        _create(brokers, "moves")
        victim = partition_state(client, "moves", 0)["leader"]
        led = [
            p for p in range(PARTITIONS) if partition_state(client, "moves", p)["leader"] == victim
        ]
        others = {i: b for i, b in brokers.items() if i != victim}
        # (the producer addresses partitions by number: its brokers must know them all)
        until(
            "every partition known",
            lambda: all(
                len(metadata(b).topics["moves"].partitions) == PARTITIONS for b in others.values()
            ),
        )

        acked: list[bytes] = []
        failures: list[Any] = []
        stop = threading.Event()

        def produce() -> None:
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap(others),
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 5,
                }
            )

            def report(err: Any, msg: Any) -> None:
                (failures.append(err) if err is not None else acked.append(msg.value()))

            n = 0
            deadline = time.monotonic() + 60
            while not stop.is_set() and time.monotonic() < deadline and n < 20000:
                producer.produce("moves", b"m-%d" % n, partition=n % PARTITIONS, on_delivery=report)
                producer.poll(0.002)  # (also the pace: about 500 messages a second)
                n += 1
            producer.flush(60)

        thread = threading.Thread(target=produce)
        thread.start()
        until("some messages acknowledged", lambda: len(acked) > 200)

        began = time.monotonic()
        proc = brokers[victim].proc
        assert proc is not None
        proc.terminate()  # SIGTERM
        # While it is still running, the partitions it led get other leaders.
        moved_alive = until(
            "its leaderships moved",
            lambda: (
                all(partition_state(client, "moves", p)["leader"] not in (victim, -1) for p in led)
                and proc.poll() is None
            ),
            timeout=20,
        )
        assert moved_alive
        proc.wait(30)
        took = time.monotonic() - began
        assert proc.returncode == 0
        assert took < SESSION_MS / 1000, f"shutdown took {took:.1f} s"
        assert any("controlled shutdown of broker" in line for line in brokers[victim].log)

        mark = len(acked)  # the producer goes on against the new leaders
        until("acknowledgements after the move", lambda: len(acked) > mark + 200)
        stop.set()
        thread.join(90)
        assert not failures, failures[:5]
        for p in led:
            state = partition_state(client, "moves", p)
            assert victim not in state["isr"]

        got = consume_all(bootstrap(others), "moves", PARTITIONS, len(acked))
        values = [v for p in range(PARTITIONS) for v in got[p]]
        assert sorted(values) == sorted(acked)  # each exactly once
    finally:
        stop_all(brokers)


def test_a_preferred_election_gives_the_leadership_back(
    tmp_path: Path,
    zk: tuple[str, KazooClient],
) -> None:
    connect, client = zk
    # No automatic balance: the admin's election is what moves it back.
    brokers = start(tmp_path, connect, [0, 1, 2], "auto.leader.rebalance.enable=false")
    try:
        _create(brokers, "pref")
        preferred = {p: _assignment(client, "pref")[p][0] for p in range(PARTITIONS)}
        victim = preferred[0]
        brokers[victim].terminate()  # its leaderships go to other replicas
        until(
            "no partition led by the stopped broker",
            lambda: all(
                partition_state(client, "pref", p)["leader"] != victim for p in range(PARTITIONS)
            ),
        )
        brokers[victim] = broker(tmp_path, connect, victim).start()
        until(
            f"broker {victim} back in every ISR",
            lambda: all(
                victim in partition_state(client, "pref", p)["isr"] for p in range(PARTITIONS)
            ),
            timeout=60,
        )
        assert partition_state(client, "pref", 0)["leader"] != victim

        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        asked = [TopicPartition("pref", p) for p in range(PARTITIONS)] + [TopicPartition("nope", 0)]
        results = admin.elect_leaders(ElectionType.PREFERRED, asked).result(30)
        codes = {(tp.topic, tp.partition): _code(e) for tp, e in results.items()}
        for p in range(PARTITIONS):
            if preferred[p] == victim:
                assert codes[("pref", p)] is None, codes  # elected back
            else:
                assert codes[("pref", p)] == KafkaError.ELECTION_NOT_NEEDED, codes
        assert codes[("nope", 0)] == KafkaError.UNKNOWN_TOPIC_OR_PART
        for p in range(PARTITIONS):
            assert partition_state(client, "pref", p)["leader"] == preferred[p]
        # All partitions: none needs an election now (those are left out of the answer).
        assert admin.elect_leaders(ElectionType.PREFERRED, None).result(30) == {}
    finally:
        stop_all(brokers)


def _assignment(client: KazooClient, topic: str) -> dict[int, list[int]]:
    import json

    data, _ = client.get(f"/brokers/topics/{topic}")
    return {int(p): r for p, r in json.loads(data)["partitions"].items()}


def _code(error: Any) -> int | None:
    """A result's error code (None: elected); a KafkaError, or a KafkaException holding one."""
    if error is None:
        return None
    return int(error.code() if hasattr(error, "code") else error.args[0].code())


def test_a_new_leader_says_offset_not_available_until_its_high_watermark_catches_up(
    tmp_path: Path,
    zk: tuple[str, KazooClient],
) -> None:
    """KIP-207. A follower learns the high watermark from its leader's fetch answers, so a
    new leader's high watermark can be below records its predecessor acknowledged, and
    stays there until its own followers fetch. Asked for the end meanwhile (librdkafka's
    query_watermark_offsets: ListOffsets "latest"), it answers OFFSET_NOT_AVAILABLE, which
    clients retry, as Kafka does: never that stale end, which a reader trusting it would
    stop short at (the balance proof's final read, after a leadership move under acks=all
    load, once missed an acknowledged record so). The window is a few milliseconds under
    acks=all; here it is held open: broker 2 is paused (still in the ISR, for 30 s), 50
    records are acknowledged with acks=1 by broker 0 and copied by broker 1, and the
    high watermark stays at 0 (broker 2 has none); broker 0 stops and broker 1 leads,
    its epoch beginning at 50 above its high watermark. Once broker 2 runs again the
    end is 50."""
    connect, client = zk
    # broker 2 paused stays in the ISR, and registered, for 30 s
    more = (
        "replica.lag.time.max.ms=30000",
        "zookeeper.session.timeout.ms=30000",
        "admin.listeners=http://127.0.0.1:0",
    )
    brokers = start(tmp_path, connect, [0, 1, 2], *more)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        new = NewTopic("kip207", 1, replica_assignment=[[0, 1, 2]])
        admin.create_topics([new])["kip207"].result(30)
        until("all three in sync", lambda: len(partition_state(client, "kip207", 0)["isr"]) == 3)
        os.kill(brokers[2].proc.pid, signal.SIGSTOP)  # type: ignore[union-attr]
        producer = Producer({"bootstrap.servers": brokers[0].bootstrap, "acks": 1})
        for i in range(50):
            producer.produce("kip207", b"v-%d" % i, partition=0)
        assert producer.flush(30) == 0
        del producer
        until("broker 1 holds the 50 records", lambda: _log_end(brokers[1], "kip207") == 50)
        brokers[0].terminate()  # its controlled shutdown hands the leadership to broker 1
        until("broker 1 leads", lambda: partition_state(client, "kip207", 0)["leader"] == 1)
        consumer = Consumer({"bootstrap.servers": brokers[1].bootstrap, "group.id": "kip207"})
        try:
            seen: list[Any] = []
            for _ in range(3):  # never the stale end while broker 2 sleeps
                try:
                    seen.append(consumer.get_watermark_offsets(TP("kip207", 0), timeout=5)[1])
                except KafkaException as exc:
                    seen.append(exc.args[0].code())
            assert set(seen) == {KafkaError.OFFSET_NOT_AVAILABLE}, seen
            os.kill(brokers[2].proc.pid, signal.SIGCONT)  # type: ignore[union-attr]
            assert until("the end known again", lambda: _end_or_none(consumer, "kip207")) == 50
        finally:
            consumer.close()
    finally:
        stop_all(brokers)


def _log_end(b: Any, topic: str) -> int | None:
    snapshot = httpx.get(f"{b.admin_url}/v1/metrics", timeout=5).json()
    ends = [p["log_end_offset"] for p in snapshot["partitions"] if p["topic"] == topic]
    return ends[0] if ends else None


def _end_or_none(consumer: Any, topic: str) -> int | None:
    try:
        return int(consumer.get_watermark_offsets(TP(topic, 0), timeout=5)[1])
    except KafkaException:
        return None
