"""Consumer groups with real clients: confluent-kafka (librdkafka), kafka-python and aiokafka
join, split partitions, rebalance, commit, survive a broker crash, time out, and come back
as static members without disturbing the others."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerProcess, BrokerThread

ROOT = Path(__file__).resolve().parents[2]
# Short timeouts: a new group's first rebalance waits 300 ms, sessions may be 500 ms.
FAST = {"group.initial.rebalance.delay.ms": "300", "group.min.session.timeout.ms": "500"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path / "data", FAST).start()
    yield b
    b.stop()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 5})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, value=f"{part}:{i}".encode(), partition=part)
    assert p.flush(30) == 0


def confluent(bootstrap: str, group: str, **extra: Any) -> Consumer:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
    }
    conf.update(extra)
    return Consumer(conf)


def poll_until(
    consumers: list[Consumer], done: Callable[[], bool], timeout: float = 20
) -> list[Message]:
    """Poll until ``done()``; the messages polled meanwhile under each consumer's last
    assignment (a rebalance restarts it from the committed offsets, so what it returned
    under an earlier one comes again), in the order polled."""
    deadline = time.monotonic() + timeout
    kept: dict[int, tuple[list[int], list[Message]]] = {}
    while not done():
        assert time.monotonic() < deadline, [
            sorted(p.partition for p in c.assignment()) for c in consumers
        ]
        for i, c in enumerate(consumers):
            m = c.poll(0.05)
            assert m is None or m.error() is None, m.error()
            assignment = owned(c)
            if kept.get(i, (None, []))[0] != assignment:
                kept[i] = (assignment, [])
            if m is not None:
                kept[i][1].append(m)
    return [m for _, ms in kept.values() for m in ms]


def owned(c: Consumer) -> list[int]:
    return sorted(p.partition for p in c.assignment())


def test_confluent_consumers_split_rebalance_and_resume_after_a_crash(tmp_path: Path) -> None:
    overrides = [
        "listeners=PLAINTEXT://127.0.0.1:0",
        f"log.dirs={tmp_path}",
        *(f"{k}={v}" for k, v in FAST.items()),
    ]
    broker = BrokerProcess(tmp_path, overrides).start()
    try:
        create_topic(broker.bootstrap, "six", 6)
        produce(broker.bootstrap, "six", 60, 6)
        cs = [confluent(broker.bootstrap, "readers", **{"client.id": f"c{i}"}) for i in range(3)]
        for c in cs:
            c.subscribe(["six"])
        poll_until(cs, lambda: [len(c.assignment()) for c in cs] == [2, 2, 2])
        assert sorted(p for c in cs for p in owned(c)) == list(range(6))

        cs[2].close()  # leaves the group: the other two take its partitions
        early = poll_until(cs[:2], lambda: [len(c.assignment()) for c in cs[:2]] == [3, 3])
        assert sorted(owned(cs[0]) + owned(cs[1])) == list(range(6))

        # read and commit the first 30 records of every partition, one by one (starting
        # with any the last rebalance's polls already returned)
        committed: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while sum(committed.values()) < 6 * 30:
            assert time.monotonic() < deadline, committed
            for c in cs[:2]:
                m = early.pop(0) if early else c.poll(0.05)
                if m is None or m.offset() >= 30:
                    continue
                assert m.error() is None and m.offset() == committed.get(m.partition(), 0)
                owner = next(o for o in cs[:2] if m.partition() in owned(o))
                owner.commit(message=m, asynchronous=False)
                committed[m.partition()] = m.offset() + 1
        for c in cs[:2]:
            c.close()
    finally:
        broker.kill()  # SIGKILL: no clean shutdown

    again = BrokerProcess(tmp_path, overrides).start()
    try:
        c = confluent(again.bootstrap, "readers")
        c.subscribe(["six"])
        got: dict[int, list[int]] = {p: [] for p in range(6)}
        deadline = time.monotonic() + 30
        while sum(len(v) for v in got.values()) < 6 * 30:
            assert time.monotonic() < deadline, {p: len(v) for p, v in got.items()}
            m = c.poll(0.1)
            if m is not None:
                assert m.error() is None, m.error()
                got[m.partition()].append(m.offset())
        # nothing re-read, nothing skipped
        assert got == {p: list(range(30, 60)) for p in range(6)}
        assert c.poll(0.5) is None
        c.close()
    finally:
        assert again.terminate() == 0


def test_kafka_python_consumers_join_commit_and_rejoin(broker: BrokerThread) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    create_topic(broker.bootstrap, "kp", 2)
    produce(broker.bootstrap, "kp", 20, 2)

    def consumer() -> KafkaConsumer:
        return KafkaConsumer(
            "kp",
            bootstrap_servers=broker.bootstrap,
            group_id="kp-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            consumer_timeout_ms=10_000,
        )

    first = consumer()
    seen = []
    for record in first:
        seen.append((record.partition, record.offset))
        if len(seen) == 24:
            break
    first.commit()
    positions = {p: first.committed(KTP("kp", p)) for p in (0, 1)}
    assert sum(positions.values()) == 24
    first.close()

    second = consumer()
    rest = []
    for record in second:
        rest.append((record.partition, record.offset))
        if len(rest) == 16:
            break
    second.commit()
    assert sorted(seen + rest) == sorted((p, o) for p in (0, 1) for o in range(20))
    assert all(o >= positions[p] for p, o in rest)
    assert {p: second.committed(KTP("kp", p)) for p in (0, 1)} == {0: 20, 1: 20}
    second.close()


def test_kafka_python_and_librdkafka_share_a_group(broker: BrokerThread) -> None:
    from kafka import KafkaConsumer

    create_topic(broker.bootstrap, "mixed", 4)
    kp = KafkaConsumer(
        "mixed",
        bootstrap_servers=broker.bootstrap,
        group_id="mixed-group",
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
    )
    rdk = confluent(broker.bootstrap, "mixed-group")
    rdk.subscribe(["mixed"])
    try:
        deadline = time.monotonic() + 20
        while not (len(kp.assignment()) == 2 and len(rdk.assignment()) == 2):
            assert time.monotonic() < deadline, (kp.assignment(), rdk.assignment())
            kp.poll(timeout_ms=50)
            rdk.poll(0.05)
        assert sorted([p.partition for p in kp.assignment()] + owned(rdk)) == [0, 1, 2, 3]
    finally:
        kp.close()
        rdk.close()


def test_aiokafka_consumers_join_commit_and_rejoin(broker: BrokerThread) -> None:
    from aiokafka import AIOKafkaConsumer

    create_topic(broker.bootstrap, "aio", 3)
    produce(broker.bootstrap, "aio", 10, 3)

    async def read(n: int) -> list[tuple[int, int]]:
        consumer = AIOKafkaConsumer(
            "aio",
            bootstrap_servers=broker.bootstrap,
            group_id="aio-group",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
        await consumer.start()
        try:
            got: list[tuple[int, int]] = []
            async with asyncio.timeout(20):
                while len(got) < n:
                    batch = await consumer.getmany(timeout_ms=200)
                    for records in batch.values():
                        got.extend((r.partition, r.offset) for r in records)
            assert len(got) == n  # (all it fetched: whole partitions, 10 records each)
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    async def main() -> None:
        a = await read(30)
        assert sorted(a) == sorted((p, o) for p in range(3) for o in range(10))
        # a rejoining consumer starts from the committed offsets: nothing left to read
        produce(broker.bootstrap, "aio", 1, 3)
        b = await read(3)
        assert sorted(b) == [(0, 10), (1, 10), (2, 10)]

    asyncio.run(main())


class MemberProcess:
    """``group_member`` in a subprocess: a consumer we can SIGKILL."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, session_ms: int, instance: str | None = None
    ):
        args = [
            sys.executable,
            "-m",
            "tests.data.group_member",
            bootstrap,
            group,
            topic,
            str(session_ms),
        ]
        if instance:
            args.append(instance)
        self.proc = subprocess.Popen(
            args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.assignments: list[list[int]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.assignments.append(json.loads(line)["assigned"])

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def test_a_killed_consumer_loses_its_partitions_after_its_session_timeout(
    broker: BrokerThread,
) -> None:
    create_topic(broker.bootstrap, "k6", 6)
    other = MemberProcess(broker.bootstrap, "kill-group", "k6", 1500)
    me = confluent(broker.bootstrap, "kill-group", **{"session.timeout.ms": 1500})
    try:
        me.subscribe(["k6"])
        poll_until(
            [me],
            lambda: (
                len(me.assignment()) == 3
                and bool(other.assignments)
                and len(other.assignments[-1]) == 3
            ),
        )
        other.kill()  # no LeaveGroup: only its silence tells
        killed = time.monotonic()
        poll_until([me], lambda: len(me.assignment()) == 6)
        took = time.monotonic() - killed
        assert took > 1.0, took  # after the session timeout, not at once
    finally:
        other.kill()
        me.close()


def test_a_static_member_restarting_within_its_session_gets_its_partitions_back(
    broker: BrokerThread,
) -> None:
    create_topic(broker.bootstrap, "s6", 6)
    group = "static-group"
    events: list[str] = []
    me = confluent(
        broker.bootstrap, group, **{"group.instance.id": "me", "session.timeout.ms": 6000}
    )
    me.subscribe(
        ["s6"],
        on_assign=lambda c, ps: events.append("assign"),
        on_revoke=lambda c, ps: events.append("revoke"),
    )
    first = MemberProcess(broker.bootstrap, group, "s6", 6000, instance="other")
    second: MemberProcess | None = None
    try:
        poll_until(
            [me],
            lambda: (
                len(me.assignment()) == 3
                and bool(first.assignments)
                and len(first.assignments[-1]) == 3
            ),
        )
        mine = owned(me)
        theirs = first.assignments[-1]
        generation = broker.call(
            lambda: broker.broker.group_coordinator.groups[group].generation_id
        )  # type: ignore[union-attr]
        before = list(events)

        first.kill()  # static members do not leave: the group keeps its place
        second = MemberProcess(broker.bootstrap, group, "s6", 6000, instance="other")
        deadline = time.monotonic() + 10
        while not second.assignments:
            assert time.monotonic() < deadline
            me.poll(0.1)
        assert second.assignments[-1] == theirs
        for _ in range(10):  # the other member noticed nothing
            me.poll(0.1)
        assert owned(me) == mine and events == before
        assert (
            broker.call(lambda: broker.broker.group_coordinator.groups[group].generation_id)
            == generation
        )  # type: ignore[union-attr]
    finally:
        first.kill()
        if second is not None:
            second.kill()
        me.close()
