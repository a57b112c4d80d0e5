"""A KIP-848 consumer group through the death of its coordinator (issue 34): three brokers
in a ZooKeeper cluster, ``__consumer_offsets`` with replication factor 3, three
confluent-kafka consumers with ``group.protocol=consumer``. The coordinator's broker is
killed with SIGKILL; the new leader of the group's offsets partition reads the group's
records back, so the members' heartbeats carry on at their epochs: no partition is
revoked or lost, each consumer keeps what it had, and the group reads on from its
committed offsets with nothing lost. Real ZooKeeper, real broker processes; every wait is
a deadline on a condition."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from trio_broker.server.groups.storage import partition_for

from .test_replication import bootstrap, partition_state, produce, start, stop_all
from .test_zookeeper_cluster import SESSION_MS, until

GROUP = "survivors"
TOPIC = "orders"
PARTITIONS = 6
MESSAGES = 300  # before the kill, and as many after
CONSUMER_SETTINGS = (
    "offsets.topic.replication.factor=3",
    "offsets.topic.num.partitions=3",
    "group.consumer.min.session.timeout.ms=1000",
    # longer than the failover (ZooKeeper session expiry, election, load): the members
    # are not expired by the new coordinator before their first heartbeat reaches it
    "group.consumer.session.timeout.ms=30000",
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=500",
)


class Tracker:
    """What each consumer holds, every revocation and loss, and every value read."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: dict[str, set[int]] = {}
        self.taken_away: list[tuple[str, str, list[int]]] = []
        self.values: list[bytes] = []

    def callbacks(self, name: str) -> dict[str, Any]:
        self.held[name] = set()

        def on_assign(_: Any, parts: list[TopicPartition]) -> None:
            with self.lock:
                self.held[name] |= {tp.partition for tp in parts}

        def taken(kind: str) -> Any:
            def callback(_: Any, parts: list[TopicPartition]) -> None:
                with self.lock:
                    if parts:
                        self.taken_away.append((name, kind, sorted(tp.partition for tp in parts)))
                    self.held[name] -= {tp.partition for tp in parts}

            return callback

        return {"on_assign": on_assign, "on_revoke": taken("revoked"), "on_lost": taken("lost")}

    def holdings(self) -> dict[str, frozenset[int]]:
        with self.lock:
            return {n: frozenset(h) for n, h in self.held.items()}


def poll(consumers: dict[str, Consumer], tracker: Tracker) -> None:
    """One round of polls; each value read is committed at once (synchronously)."""
    for c in consumers.values():
        msg = c.poll(0.05)
        if msg is None:
            continue
        if msg.error() is not None:
            assert msg.error().code() == KafkaError._PARTITION_EOF or msg.error().retriable(), (
                msg.error()
            )
            continue
        with tracker.lock:
            tracker.values.append(msg.value())
        commit(c, msg)


def commit(c: Consumer, msg: Any) -> None:
    """Commit ``msg`` synchronously. A commit refused STALE_MEMBER_EPOCH (the member's epoch
    moved on at the new coordinator while the commit was on its way) is sent again once the
    member's next heartbeat has brought its epoch, as KIP-848 has a client do (Kafka's Java
    client retries it itself; librdkafka hands it to the application)."""
    for _ in range(20):
        try:
            c.commit(message=msg, asynchronous=False)
            return
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                raise
        time.sleep(0.25)  # half of the heartbeat interval set above: its next one brings it
    c.commit(message=msg, asynchronous=False)


def poll_until(
    consumers: dict[str, Consumer], tracker: Tracker, what: str, done: Any, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        poll(consumers, tracker)


def test_a_consumer_group_carries_on_when_its_coordinator_dies(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2], *CONSUMER_SETTINGS)
    consumers: dict[str, Consumer] = {}
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
        first = [b"before-%d" % i for i in range(MESSAGES)]
        produce(bootstrap(brokers), TOPIC, first, acks="all")
        tracker = Tracker()
        for name in ("c1", "c2", "c3"):
            c = Consumer(
                {
                    "bootstrap.servers": bootstrap(brokers),
                    "group.id": GROUP,
                    "group.protocol": "consumer",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            c.subscribe([TOPIC], **tracker.callbacks(name))
            consumers[name] = c

        def balanced() -> bool:
            held = tracker.holdings().values()
            return sorted(len(h) for h in held) == [2, 2, 2]

        poll_until(
            consumers,
            tracker,
            "2/2/2 and every message before the kill read",
            lambda: balanced() and len(set(tracker.values)) == MESSAGES,
            timeout=90,
        )
        assignment = tracker.holdings()
        settled = len(tracker.taken_away)

        offsets_partition = partition_for(GROUP, 3)
        coordinator = partition_state(client, "__consumer_offsets", offsets_partition)["leader"]
        brokers[coordinator].kill()  # SIGKILL
        until(
            "a new coordinator",
            lambda: (
                partition_state(client, "__consumer_offsets", offsets_partition)["leader"]
                not in (coordinator, -1)
            ),
            timeout=SESSION_MS / 1000 + 30,
        )
        second = [b"after-%d" % i for i in range(MESSAGES)]
        produce(bootstrap(brokers), TOPIC, second, acks="all")
        poll_until(
            consumers,
            tracker,
            "every message after the kill read",
            lambda: set(second) <= set(tracker.values),
            timeout=90,
        )
        # nothing lost, and the group went on from its committed offsets: what was read
        # before the kill was not read again
        assert set(tracker.values) == set(first) | set(second)
        assert len(tracker.values) == 2 * MESSAGES, "read twice"
        # the survivors kept their partitions: no revocation, nothing lost
        assert tracker.taken_away[settled:] == []
        assert tracker.holdings() == assignment
    finally:
        for c in consumers.values():
            c.close()
        stop_all(brokers)
