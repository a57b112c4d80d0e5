"""Leaderships moved on purpose in a ZooKeeper cluster: controlled shutdown on SIGTERM and
preferred elections (ElectLeaders), with real ZooKeeper, real broker processes and
confluent-kafka clients."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, KafkaError, Producer, TopicPartition
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
