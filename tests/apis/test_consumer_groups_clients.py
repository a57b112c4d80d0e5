"""KIP-848's consumer protocol with a real client: confluent-kafka (librdkafka) consumers
with ``group.protocol=consumer`` against a real broker.

Ownership is checked from the consumers' own assign and revoke callbacks: a partition
given to one consumer while another has not yet given it up is a violation (the
coordinator must have the owner revoke it first). Waits are bounded by deadlines on
conditions (who owns what), never fixed sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupType,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerThread

PARTITIONS = 6
SESSION_MS = 3000
HEARTBEAT_MS = 300
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
}
DEADLINE_S = 30.0


@pytest.fixture
def kip848_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", SETTINGS).start()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic("orders", PARTITIONS, 1)]).values():
        f.result(timeout=15)
    yield b
    b.stop()
    assert b.errors == []


class Owners:
    """Which consumer holds each partition, as the consumers' callbacks tell it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.violations: list[str] = []

    def callbacks(self, name: str) -> dict[str, Callable[[Any, list[TopicPartition]], None]]:
        def on_assign(_: Any, parts: list[TopicPartition]) -> None:
            with self.lock:
                for tp in parts:
                    held = self.owner.get(tp.partition)
                    if held is not None and held != name:
                        self.violations.append(f"{tp.partition} to {name}, still {held}'s")
                    self.owner[tp.partition] = name

        def on_revoke(_: Any, parts: list[TopicPartition]) -> None:
            with self.lock:
                for tp in parts:
                    if self.owner.get(tp.partition) == name:
                        del self.owner[tp.partition]

        return {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_revoke}

    def of(self, name: str) -> set[int]:
        with self.lock:
            return {p for p, who in self.owner.items() if who == name}


def consumer(broker: BrokerThread, group: str, **extra: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )


def poll_until(consumers: list[Consumer], done: Callable[[], bool], what: str) -> float:
    """Poll every consumer until ``done()``; returns the seconds it took."""
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < DEADLINE_S, f"not within {DEADLINE_S} s: {what}"
        for c in consumers:
            msg = c.poll(0.05)
            assert (
                msg is None
                or msg.error() is None
                or msg.error().code() in (KafkaError._PARTITION_EOF,)
            ), msg.error()
    return time.monotonic() - start


def test_partitions_move_without_two_owners(kip848_broker: BrokerThread) -> None:
    owners = Owners()
    c1 = consumer(kip848_broker, "movers")
    c1.subscribe(["orders"], **owners.callbacks("c1"))
    poll_until([c1], lambda: len(owners.of("c1")) == PARTITIONS, "c1 gets everything")
    c2 = consumer(kip848_broker, "movers")
    c2.subscribe(["orders"], **owners.callbacks("c2"))
    half = PARTITIONS // 2
    poll_until(
        [c1, c2],
        lambda: len(owners.of("c1")) == half and len(owners.of("c2")) == half,
        "3 and 3",
    )
    assert owners.violations == []
    c2.close()  # leaves the group (epoch -1): c1 gets its partitions back
    poll_until([c1], lambda: len(owners.of("c1")) == PARTITIONS, "c1 takes everything back")
    assert owners.violations == []
    c1.close()


CHILD = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "killed",
              "group.protocol": "consumer", "auto.offset.reset": "earliest"})
c.subscribe(["orders"], on_assign=lambda c, ps: print("assigned", len(ps), flush=True))
while True:
    c.poll(0.1)
"""


def test_a_killed_member_is_expired_after_the_session_timeout(
    kip848_broker: BrokerThread,
) -> None:
    owners = Owners()
    c1 = consumer(kip848_broker, "killed")
    c1.subscribe(["orders"], **owners.callbacks("c1"))
    poll_until([c1], lambda: len(owners.of("c1")) == PARTITIONS, "c1 gets everything")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, kip848_broker.bootstrap],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        got = threading.Event()

        def read() -> None:
            for line in child.stdout:  # type: ignore[union-attr]
                if line.startswith("assigned") and int(line.split()[1]) > 0:
                    got.set()

        threading.Thread(target=read, daemon=True).start()
        poll_until([c1], got.is_set, "the child gets partitions")
        poll_until([c1], lambda: len(owners.of("c1")) == PARTITIONS // 2, "c1 gave half")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    took = poll_until([c1], lambda: len(owners.of("c1")) == PARTITIONS, "c1 takes it all")
    # expired by its session timeout: not at once (its last heartbeat was at most one
    # heartbeat interval before the kill), and not much later
    assert took >= (SESSION_MS - HEARTBEAT_MS) / 1000 - 0.1
    assert took <= SESSION_MS / 1000 + 5
    assert owners.violations == []
    c1.close()


def test_committed_offsets_are_read_back_by_a_new_member(kip848_broker: BrokerThread) -> None:
    producer = Producer({"bootstrap.servers": kip848_broker.bootstrap})
    for i in range(12):
        producer.produce("orders", f"m{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    first = consumer(kip848_broker, "committers")
    first.subscribe(["orders"])
    seen: list[bytes] = []
    start = time.monotonic()
    while len(seen) < 12:
        assert time.monotonic() - start < DEADLINE_S
        msg = first.poll(0.1)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    first.commit(asynchronous=False)  # OffsetCommit with its member epoch
    first.close()

    second = consumer(kip848_broker, "committers")
    wanted = [TopicPartition("orders", p) for p in range(PARTITIONS)]
    committed = second.committed(wanted, timeout=15)
    assert {tp.partition: tp.offset for tp in committed} == dict.fromkeys(range(PARTITIONS), 2)
    producer.produce("orders", b"new", partition=0)
    assert producer.flush(15) == 0
    second.subscribe(["orders"])
    start = time.monotonic()
    msg = None
    while msg is None or msg.error() is not None:
        assert time.monotonic() - start < DEADLINE_S
        msg = second.poll(0.1)
    assert msg.value() == b"new"  # nothing committed is read again
    second.close()


def test_a_classic_and_a_consumer_group_side_by_side(kip848_broker: BrokerThread) -> None:
    producer = Producer({"bootstrap.servers": kip848_broker.bootstrap})
    for i in range(PARTITIONS):
        producer.produce("orders", f"m{i}".encode(), partition=i)
    assert producer.flush(15) == 0
    modern = consumer(kip848_broker, "modern")
    classic = Consumer(
        {
            "bootstrap.servers": kip848_broker.bootstrap,
            "group.id": "classic",
            "auto.offset.reset": "earliest",
        }
    )
    counts = {"modern": 0, "classic": 0}
    for c in (modern, classic):
        c.subscribe(["orders"])
    start = time.monotonic()
    while counts["modern"] < PARTITIONS or counts["classic"] < PARTITIONS:
        assert time.monotonic() - start < DEADLINE_S, counts
        for name, c in (("modern", modern), ("classic", classic)):
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                counts[name] += 1
    admin = AdminClient({"bootstrap.servers": kip848_broker.bootstrap})
    listed = admin.list_consumer_groups().result(timeout=15)
    types = {g.group_id: g.type for g in listed.valid}
    assert types["modern"] == ConsumerGroupType.CONSUMER
    assert types["classic"] == ConsumerGroupType.CLASSIC
    described = admin.describe_consumer_groups(["modern", "classic"])
    modern_d = described["modern"].result(timeout=15)
    classic_d = described["classic"].result(timeout=15)
    assert modern_d.type == ConsumerGroupType.CONSUMER
    assert len(modern_d.members) == 1
    (member,) = modern_d.members
    assert sorted(tp.partition for tp in member.assignment.topic_partitions) == list(
        range(PARTITIONS)
    )
    assert classic_d.type == ConsumerGroupType.CLASSIC and len(classic_d.members) == 1
    modern.close()
    classic.close()
