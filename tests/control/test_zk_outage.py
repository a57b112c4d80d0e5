"""Calm after a ZooKeeper outage (issue 35): ZooKeeper's JVM stopped with SIGSTOP for
longer than the session timeout, then SIGCONT, expires every broker's session at once.
The first broker to register again becomes controller; it waits (at most one session
timeout) for the brokers registered before it instead of taking every leadership and
shrinking every ISR to itself. Measured from every partition's state node, read from
ZooKeeper every 50 ms across the outage: leader changes per partition and the smallest
ISR. Real ZooKeeper (its own per module: this one is paused), real broker processes,
confluent-kafka clients. Without the wait: 2 leader changes for most partitions and ISRs
of 1 (see docs/operations.md)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from trio_broker.tools.zookeeper import ZooKeeperServer

from .test_replication import bootstrap, consume_all, produce, start, stop_all
from .test_zookeeper_cluster import until

PARTITIONS = 6
# The broker's 4 s session timeout is raised to ZooKeeper's least, 2 ticks (6 s with the
# Debian server's 3 s tick): the outage lasts well beyond it, as long as issue 35 asks.
OUTAGE_S = 25.0
# After ZooKeeper is back: sessions expire, brokers register again, the controller's
# first leader balance check comes 5 s into its term. Long enough to see a move back.
SETTLE_S = 20.0


class StateWatcher(threading.Thread):
    """Reads every partition's state node every 50 ms (through the outage: a read that
    fails is tried again) and keeps each distinct (leader, isr) in order."""

    def __init__(self, connect: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.client = KazooClient(
            hosts=connect, timeout=30, connection_retry={"max_tries": -1, "max_delay": 1.0}
        )
        self.client.start(30)
        self.topic = topic
        self.seen: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.05):
            for p in range(PARTITIONS):
                path = f"/brokers/topics/{self.topic}/partitions/{p}/state"
                try:
                    state = json.loads(self.client.get(path)[0])
                except KazooException:
                    continue
                now = (state["leader"], tuple(state["isr"]))
                history = self.seen.setdefault(p, [])
                if not history or history[-1] != now:
                    history.append(now)

    def close(self) -> None:
        self.stopped.set()
        self.join(30)
        self.client.stop()
        self.client.close()

    def leader_changes(self) -> dict[int, int]:
        out = {}
        for p, history in self.seen.items():
            leaders = [leader for leader, _ in history]
            out[p] = sum(1 for a, b in itertools.pairwise(leaders) if a != b)
        return out

    def smallest_isr(self) -> dict[int, int]:
        return {p: min(len(isr) for _, isr in history) for p, history in self.seen.items()}


def test_after_a_zookeeper_outage_no_partition_changes_leader_twice(
    tmp_path: Path, zookeeper: ZooKeeperServer, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    watcher: StateWatcher | None = None
    paused = False
    try:
        servers = bootstrap(brokers)
        admin = AdminClient({"bootstrap.servers": servers})
        config = {"min.insync.replicas": "2"}
        admin.create_topics([NewTopic("orders", PARTITIONS, 3, config=config)])["orders"].result(30)

        def full() -> bool:
            for p in range(PARTITIONS):
                found = client.exists(f"/brokers/topics/orders/partitions/{p}/state")
                if found is None:
                    return False
                data = json.loads(client.get(f"/brokers/topics/orders/partitions/{p}/state")[0])
                if data["leader"] < 0 or len(data["isr"]) != 3:
                    return False
            return True

        until("every partition led with its three replicas in sync", full)
        first = [b"before-%d" % i for i in range(300)]
        reports = produce(servers, "orders", first, acks="all", enable_idempotence=True)
        assert all(err is None for err, _ in reports)
        sessions = {b: client.exists(f"/brokers/ids/{b}").ephemeralOwner for b in brokers}
        watcher = StateWatcher(connect, "orders")
        watcher.start()
        until("the watcher has read every partition", lambda: len(watcher.seen) == PARTITIONS)

        assert zookeeper.proc is not None
        os.kill(zookeeper.proc.pid, signal.SIGSTOP)
        paused = True
        # The outage is the fault itself: nothing to wait on but its length.
        threading.Event().wait(OUTAGE_S)
        os.kill(zookeeper.proc.pid, signal.SIGCONT)
        paused = False
        resumed_at = time.monotonic()

        def registered_again() -> bool:
            owners: dict[int, Any] = {}
            for b in brokers:
                stat = watcher.client.exists(f"/brokers/ids/{b}")
                owners[b] = None if stat is None else stat.ephemeralOwner
            return all(owners[b] not in (None, sessions[b]) for b in brokers)

        until("every broker registered again in a new session", registered_again, timeout=60)
        registered_s = time.monotonic() - resumed_at
        threading.Event().wait(max(0.0, SETTLE_S - (time.monotonic() - resumed_at)))
        until("every partition led with its three replicas in sync", full, timeout=60)
        watcher.close()

        changes, smallest = watcher.leader_changes(), watcher.smallest_isr()
        print(f"leader changes per partition: {changes}; smallest ISR: {smallest}")
        print(f"states seen: {watcher.seen}")
        print(f"registered again {registered_s:.1f} s after ZooKeeper was back")
        assert max(changes.values()) <= 1, watcher.seen
        assert min(smallest.values()) >= 2, watcher.seen

        # Nothing acknowledged was lost, and producers go on.
        second = [b"after-%d" % i for i in range(300)]
        reports = produce(servers, "orders", second, acks="all", enable_idempotence=True)
        assert all(err is None for err, _ in reports)
        got = consume_all(servers, "orders", PARTITIONS, len(first) + len(second))
        assert sorted(v for values in got.values() for v in values) == sorted(first + second)
    finally:
        if paused and zookeeper.proc is not None:
            os.kill(zookeeper.proc.pid, signal.SIGCONT)
        if watcher is not None and not watcher.stopped.is_set():
            watcher.close()
        stop_all(brokers)


def test_an_admin_request_that_meets_an_expired_session_gets_a_retriable_error(
    tmp_path: Path,
) -> None:
    """Found by the nemesis admin workload: a CreateTopics pending in a broker while
    ZooKeeper is away meets the broker's expired session when ZooKeeper returns (paused
    longer than the session timeout, ZooKeeper expires every session as it wakes). It was
    answered UNKNOWN_SERVER_ERROR, a broker failure with a traceback in its log; it is
    answered REQUEST_TIMED_OUT, retriable, with a message that says why (since the broker
    waits for ZooKeeper at most one session timeout, that wait may end first: the same
    answer). A ZooKeeper of the test's own, since it is paused."""
    zookeeper = ZooKeeperServer(tmp_path / "zk").start()
    try:
        brokers = start(tmp_path, zookeeper.connect, [0])
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
            admin.create_topics([NewTopic("before", 1, 1)])["before"].result(30)
            assert zookeeper.proc is not None
            os.kill(zookeeper.proc.pid, signal.SIGSTOP)
            try:
                pending = admin.create_topics([NewTopic("during", 1, 1)], request_timeout=60)
                # The outage is the fault itself: longer than the session timeout (4 s).
                threading.Event().wait(8)
            finally:
                os.kill(zookeeper.proc.pid, signal.SIGCONT)
            with pytest.raises(KafkaException) as info:
                pending["during"].result(60)
            err = info.value.args[0]
            assert err.code() == KafkaError.REQUEST_TIMED_OUT, err
            assert "ZooKeeper cannot be reached" in err.str(), err
        finally:
            stop_all(brokers)
    finally:
        zookeeper.stop()


def test_a_request_waiting_for_zookeeper_is_answered_while_it_is_away_and_sigterm_stops(
    tmp_path: Path,
) -> None:
    """A request that needs ZooKeeper while the broker's connection to it is down waits
    for an answer at most one session timeout, and a SIGTERM meanwhile stops the broker.
    Such a request used to wait in kazoo's queue for as long as ZooKeeper stayed away, past
    its client's timeout, and a SIGTERM waited behind it (found by the nemesis admin
    workload). A ZooKeeper of the test's own, since it is paused and stays paused."""
    zookeeper = ZooKeeperServer(tmp_path / "zk").start()
    assert zookeeper.proc is not None
    try:
        brokers = start(tmp_path, zookeeper.connect, [0])
        broker = brokers[0]
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
            admin.create_topics([NewTopic("before", 1, 1)])["before"].result(30)
            os.kill(zookeeper.proc.pid, signal.SIGSTOP)
            try:
                until(
                    "the broker has lost its connection to ZooKeeper",
                    lambda: any("ZooKeeper session suspended" in line for line in broker.log),
                    timeout=30,
                )
                asked = time.monotonic()
                pending = admin.create_topics([NewTopic("during", 1, 1)], request_timeout=60)
                with pytest.raises(KafkaException) as info:
                    pending["during"].result(30)  # a TimeoutError here: no answer while away
                answered_s = time.monotonic() - asked
                err = info.value.args[0]
                assert err.code() == KafkaError.REQUEST_TIMED_OUT, err
                assert "ZooKeeper cannot be reached" in err.str(), err
                # The session timeout is 4 s (test_zookeeper_cluster.py); the answer comes
                # within it and a few seconds of the client's own retries and backoff.
                assert answered_s < 20, answered_s

                asked = time.monotonic()
                broker.terminate(timeout=30)  # TimeoutExpired: the broker did not stop
                print(
                    f"answered in {answered_s:.1f} s, stopped in {time.monotonic() - asked:.1f} s"
                )
            finally:
                os.kill(zookeeper.proc.pid, signal.SIGCONT)
        finally:
            stop_all(brokers)
    finally:
        zookeeper.stop()
