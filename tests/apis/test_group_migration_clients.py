"""KIP-848's online migration with real clients (issue 34): confluent-kafka (librdkafka)
consumers with ``group.protocol=classic`` consume a group, a ``group.protocol=consumer``
consumer joins the same group (it becomes a consumer group, the classic consumers go on
inside it), then leaves (it is a classic group again and the classic consumers go on).

Each consumer commits each message it reads, synchronously, before it counts as read.
What is checked: every produced message is read (none lost); no message whose commit
succeeded is read again (committed offsets are honoured across both conversions); no
partition is given to a consumer while another still holds it (the consumers' own
callbacks); every consumer reads in each phase it is in; the admin client sees a
consumer group after the upgrade and a classic group after the downgrade. Waits are
bounded by deadlines on conditions, never fixed sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from ..support.brokers import BrokerThread, broker_with_topic
from .test_consumer_groups_clients import HEARTBEAT_MS, SETTINGS, Owners

TOPIC = "migrating"
PARTITIONS = 6
PER_PHASE = 60
DEADLINE_S = 60.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with broker_with_topic(tmp_path / "data", SETTINGS, TOPIC, PARTITIONS) as b:
        yield b


class Reader:
    """One consumer: what it read, and which of its reads were committed."""

    def __init__(
        self,
        broker: BrokerThread,
        name: str,
        protocol: str,
        owners: Owners,
        log: list[tuple[str, bytes]],
    ) -> None:
        extra: dict[str, Any] = {}
        if protocol == "classic":
            extra = {"session.timeout.ms": 6000, "heartbeat.interval.ms": HEARTBEAT_MS}
        self.name = name
        self.consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "migrating-group",
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **extra,
            }
        )
        self.consumer.subscribe([TOPIC], **owners.callbacks(name))
        self.read: list[bytes] = []
        self.log = log  # every consumer's reads and commits, in the order they happened
        self.failed_commits = 0

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is None:
            return
        error = msg.error()
        if error is not None:
            assert error.code() == KafkaError._PARTITION_EOF, error
            return
        value = msg.value()
        assert value is not None
        self.read.append(value)
        self.log.append(("read", value))
        try:
            self.consumer.commit(message=msg, asynchronous=False)
        except KafkaException:  # e.g. its generation moved on: it may be read again
            self.failed_commits += 1
            return
        self.log.append(("committed", value))


def produce(broker: BrokerThread, phase: int) -> set[bytes]:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    values = {f"p{phase}-{i}".encode() for i in range(PER_PHASE)}
    for i, v in enumerate(sorted(values)):
        producer.produce(TOPIC, v, partition=i % PARTITIONS)
    assert producer.flush(15) == 0
    return values


def run_until(readers: list[Reader], done: Any, what: str) -> None:
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < DEADLINE_S, f"not within {DEADLINE_S} s: {what}"
        for r in readers:
            r.poll()


def group_type(broker: BrokerThread) -> tuple[Any, int]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    d = admin.describe_consumer_groups(["migrating-group"])["migrating-group"].result(timeout=15)
    return d.type, len(d.members)


def check_reads(readers: list[Reader], log: list[tuple[str, bytes]], produced: set[bytes]) -> None:
    """Every produced message read; none read again once its commit succeeded."""
    read = [v for r in readers for v in r.read]
    assert set(read) == produced
    done: set[bytes] = set()
    again = []
    for event, value in log:
        if event == "read" and value in done:
            again.append(value)
        elif event == "committed":
            done.add(value)
    assert again == [], f"committed, then read again: {again[:5]}"
    assert done == produced


def test_classic_consumers_upgrade_and_downgrade_without_loss(broker: BrokerThread) -> None:
    owners = Owners()
    log: list[tuple[str, bytes]] = []
    c1 = Reader(broker, "c1", "classic", owners, log)
    c2 = Reader(broker, "c2", "classic", owners, log)
    everyone = [c1, c2]

    def all_read(values: set[bytes]) -> Any:
        return lambda: values <= {v for r in everyone for v in r.read}

    phase1 = produce(broker, 1)
    run_until(everyone, lambda: owners.of("c1") and owners.of("c2"), "c1 and c2 share")
    run_until(everyone, all_read(phase1), "phase 1 read")
    assert group_type(broker) == (ConsumerGroupType.CLASSIC, 2)

    # a consumer-protocol member joins: the group is upgraded, all three consume
    c3 = Reader(broker, "c3", "consumer", owners, log)
    everyone.append(c3)
    run_until(
        everyone,
        lambda: all(len(owners.of(n)) == 2 for n in ("c1", "c2", "c3")),
        "2, 2 and 2 after the upgrade",
    )
    assert group_type(broker) == (ConsumerGroupType.CONSUMER, 3)
    before = {r.name: len(r.read) for r in everyone}
    phase2 = produce(broker, 2)
    run_until(everyone, all_read(phase2), "phase 2 read")
    assert all(len(r.read) > before[r.name] for r in everyone), "each of the three reads"

    # the consumer-protocol member leaves: classic again, c1 and c2 take everything
    c3.consumer.close()
    everyone.remove(c3)
    run_until(
        everyone,
        lambda: (
            len(owners.of("c1")) + len(owners.of("c2")) == PARTITIONS
            and owners.of("c1")
            and owners.of("c2")
        ),
        "c1 and c2 share everything after the downgrade",
    )
    assert group_type(broker) == (ConsumerGroupType.CLASSIC, 2)
    before = {r.name: len(r.read) for r in everyone}
    phase3 = produce(broker, 3)
    run_until(everyone, all_read(phase3), "phase 3 read")
    assert all(len(r.read) > before[r.name] for r in everyone), "both read after it"

    check_reads([c1, c2, c3], log, phase1 | phase2 | phase3)
    assert owners.violations == []
    for r in (c1, c2):
        r.consumer.close()


def test_a_classic_group_is_upgraded_member_by_member(broker: BrokerThread) -> None:
    """Issue 34's rolling upgrade: each classic consumer is replaced in turn by a
    consumer-protocol one (a classic consumer's close is a LeaveGroup to the consumer
    group); messages produced between the steps are all read, none read again after
    its commit, and at the end the group is a consumer group of consumer-protocol
    members only."""
    owners = Owners()
    log: list[tuple[str, bytes]] = []
    readers = [
        Reader(broker, "c1", "classic", owners, log),
        Reader(broker, "c2", "classic", owners, log),
    ]
    live = list(readers)
    produced: set[bytes] = set()

    def step(phase: int, what: str) -> None:
        values = produce(broker, phase)
        produced.update(values)
        run_until(live, lambda: values <= {v for r in readers for v in r.read}, what)

    run_until(live, lambda: owners.of("c1") and owners.of("c2"), "c1 and c2 share")
    step(1, "classic group read")
    for phase, (old, new) in enumerate((("c1", "n1"), ("c2", "n2")), start=2):
        fresh = Reader(broker, new, "consumer", owners, log)
        readers.append(fresh)
        live.append(fresh)
        run_until(live, lambda new=new: bool(owners.of(new)), f"{new} gets partitions")
        (leaving,) = [r for r in live if r.name == old]
        leaving.consumer.close()
        live.remove(leaving)
        run_until(
            live,
            lambda: (
                sum(len(owners.of(r.name)) for r in live) == PARTITIONS
                and all(owners.of(r.name) for r in live)
            ),
            f"{old} gone, its partitions taken",
        )
        step(phase, f"read after {old} was replaced by {new}")
    assert group_type(broker) == (ConsumerGroupType.CONSUMER, 2)
    check_reads(readers, log, produced)
    assert owners.violations == []
    for r in live:
        r.consumer.close()
