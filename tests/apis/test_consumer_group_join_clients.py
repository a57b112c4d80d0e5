"""KIP-848's promise with real clients (issue 34's done-when): six confluent-kafka consumers
with ``group.protocol=consumer`` split 12 partitions 2/2/2 (exactly two each); a seventh
joins while a producer writes to every partition and the six keep consuming.

Each consumer polls in its own thread and notes when each message arrives. What is
checked: no existing member goes longer than one heartbeat interval (the group's
``group.consumer.heartbeat.interval.ms``, ``HEARTBEAT_MS``) without a message from the
seventh's subscribe until the group has settled and every member has read on after it; the
seventh gets partitions and reads from them; no partition is given to one consumer while
another still holds it (the consumers' own assign and revoke callbacks). An assignment
that moved the members' partitions instead of keeping them would stop a member for a
heartbeat round or more (revoke, acknowledge, wait for what others release, be given it
on a later heartbeat): with the ``uniform`` assignor made non-sticky this test fails,
members going 1.2 and 2.1 s without a message.

Classic groups in the same scenario are compared in ``bench/rebalance.py``, not here.
Waits are bounded by deadlines on conditions (who owns what, who read how much), never
fixed sleeps.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from ..support.brokers import BrokerThread, broker_with_topic
from .test_consumer_groups_clients import Owners

TOPIC = "joined"
PARTITIONS = 12
HEARTBEAT_MS = 1000
SETTINGS = {
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "group.consumer.min.session.timeout.ms": "10000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
}
PRODUCE_EVERY_S = 0.05  # one message to every partition each 50 ms: 240 messages/s
DEADLINE_S = 30.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    with broker_with_topic(tmp_path / "data", SETTINGS, TOPIC, PARTITIONS) as b:
        yield b


class Reader(threading.Thread):
    """One consumer polling in its own thread; ``arrivals`` are the monotonic times at
    which it received messages."""

    def __init__(
        self, broker: BrokerThread, name: str, owners: Owners, changed: threading.Condition
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "seven",
                "group.protocol": "consumer",
                "auto.offset.reset": "latest",
                "enable.partition.eof": False,
            }
        )
        self.owners = owners
        self.changed = changed
        self.arrivals: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.subscribed_at = 0.0

    def run(self) -> None:
        self.subscribed_at = time.monotonic()
        callbacks = self.owners.callbacks(self.name)
        self.consumer.subscribe([TOPIC], **{k: self._notify(f) for k, f in callbacks.items()})
        try:
            while not self.stop.is_set():
                msg = self.consumer.poll(0.1)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.errors.append(str(msg.error()))
                    continue
                with self.changed:
                    self.arrivals.append(time.monotonic())
                    self.changed.notify_all()
        finally:
            self.consumer.close()

    def _notify(self, f: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
        def callback(c: Any, parts: Any) -> None:
            f(c, parts)
            with self.changed:
                self.changed.notify_all()

        return callback

    def read_since(self, t: float) -> int:
        return len(self.arrivals) - bisect.bisect_left(self.arrivals, t)  # in time order

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time without a message between ``start`` and ``end``."""
        before = [a for a in self.arrivals if a < start]
        points = [before[-1] if before else start]
        points += [a for a in self.arrivals if start <= a <= end] + [end]
        return max(b - a for a, b in itertools.pairwise(points))


def produce_until(broker: BrokerThread, stop: threading.Event, errors: list[str]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    i = 0
    while not stop.wait(PRODUCE_EVERY_S):
        for p in range(PARTITIONS):
            producer.produce(TOPIC, f"m{i}".encode(), partition=p)
            i += 1
        producer.poll(0)
    if producer.flush(15) != 0:
        errors.append("producer: messages not delivered")


def test_a_seventh_member_joins_while_six_keep_consuming(broker: BrokerThread) -> None:
    owners = Owners()
    changed = threading.Condition()

    def wait_for(what: str, done: Callable[[], bool]) -> None:
        with changed:
            assert changed.wait_for(done, DEADLINE_S), f"not within {DEADLINE_S} s: {what}"

    stop_producing = threading.Event()
    producer_errors: list[str] = []
    producer = threading.Thread(
        target=produce_until, args=(broker, stop_producing, producer_errors), daemon=True
    )
    six = [Reader(broker, f"c{i}", owners, changed) for i in range(1, 7)]
    readers = list(six)
    try:
        for r in six:
            r.start()
        wait_for("2/2/2", lambda: all(len(owners.of(r.name)) == 2 for r in six))
        split = {r.name: sorted(owners.of(r.name)) for r in six}
        assert sorted(p for ps in split.values() for p in ps) == list(range(PARTITIONS))
        producer.start()
        steady = time.monotonic()
        wait_for("all six read", lambda: all(r.read_since(steady) >= 20 for r in six))
        steady_gap = max(r.longest_gap(steady, time.monotonic()) for r in six)

        seventh = Reader(broker, "c7", owners, changed)
        readers.append(seventh)
        seventh.start()

        def settled() -> bool:
            held = [len(owners.of(r.name)) for r in readers]
            return sum(held) == PARTITIONS and min(held) >= 1 and max(held) <= 2

        wait_for("the seventh gets partitions, 12 held once each", settled)
        settled_at = time.monotonic()
        wait_for("the seventh reads", lambda: seventh.read_since(settled_at) >= 1)
        wait_for("all read on", lambda: all(r.read_since(settled_at) >= 20 for r in six))
        end = time.monotonic()
        gaps = {r.name: round(r.longest_gap(seventh.subscribed_at, end), 3) for r in six}
    finally:
        stop_producing.set()
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join(15)
        if producer.ident is not None:
            producer.join(20)
    assert owners.violations == []
    assert [e for r in readers for e in r.errors] == [] and producer_errors == []
    bound = HEARTBEAT_MS / 1000
    assert max(gaps.values()) < bound, (
        f"a member stopped for longer than one heartbeat interval ({bound} s): {gaps}; "
        f"longest gap before the join {steady_gap:.3f} s; took {end - seventh.subscribed_at:.1f} s"
    )
    print(f"longest gaps across the join: {gaps}; before it {steady_gap:.3f} s")
