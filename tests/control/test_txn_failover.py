"""Transactions complete on the partitions' new leaders (issue 35): a commit whose marker
target is a paused broker (SIGSTOP: its TCP connections hang, nothing answers) completes
once the controller has moved that leadership, and a coordinator that takes over a
prepared transaction writes its markers and COMPLETE_COMMIT without waiting for the old
coordinator's broker (the transaction is held in PREPARE_COMMIT by a min.insync.replicas
above the replication factor, which every marker append refuses with NOT_ENOUGH_REPLICAS,
until the test lowers it again). Both fail with markers sent to each leader in turn, with
no deadline but the channel's 30 s and no watch on the leadership. Real ZooKeeper, real broker processes, confluent-kafka's
transactional producer and read_committed consumer."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kazoo.client import KazooClient

from ..support.brokers import BrokerProcess
from .test_replication import bootstrap, start, stop_all
from .test_txn_cluster import TXN_STATE, leader_of, read
from .test_zookeeper_cluster import SESSION_MS, until

ADMIN = "admin.listeners=http://127.0.0.1:0"
PARTITIONS = 3
MAX_GAP_S = 15.0  # the bound: session timeout, election and retries


def controller_of(client: KazooClient) -> int:
    broker: int = json.loads(client.get("/controller")[0])["brokerid"]
    return broker


def replicas_of(client: KazooClient, topic: str, partition: int) -> list[int]:
    replicas: list[int] = json.loads(client.get(f"/brokers/topics/{topic}")[0])["partitions"][
        str(partition)
    ]
    return replicas


def coordinator_figures(b: BrokerProcess) -> dict[str, Any]:
    assert b.admin_url is not None
    figures: dict[str, Any] = httpx.get(f"{b.admin_url}/v1/metrics", timeout=10).json()[
        "transactions"
    ]["coordinator"]
    return figures


def pause(b: BrokerProcess) -> None:
    assert b.proc is not None
    os.kill(b.proc.pid, signal.SIGSTOP)


def resume(b: BrokerProcess) -> None:
    assert b.proc is not None
    os.kill(b.proc.pid, signal.SIGCONT)


class Committer:
    """A transactional producer that commits one record per partition per transaction;
    what it committed, when, and every error it saw (a fatal one ends the test)."""

    def __init__(self, servers: str, transactional_id: str) -> None:
        self.p = Producer(
            {
                "bootstrap.servers": servers,
                "transactional.id": transactional_id,
                # A paused broker answers nothing: learn the new leaders soon, and give
                # up a request to the paused one (produce: request.timeout.ms; to the
                # transaction coordinator: socket.timeout.ms, 60 s by default) within
                # the bound the test holds the brokers to.
                "topic.metadata.refresh.interval.ms": 1000,
                "request.timeout.ms": 5000,
                "socket.timeout.ms": 5000,
            }
        )
        self.p.init_transactions(60)
        self.committed: list[bytes] = []
        self.commit_times: list[float] = []
        self.errors: list[Any] = []
        self.n = 0

    def one(self, before_commit: Any = None) -> bool:
        """One transaction; whether it committed (an abortable error: aborted)."""
        values = [b"t%04d-%d" % (self.n, q) for q in range(PARTITIONS)]
        self.n += 1
        try:
            self.p.begin_transaction()
            for q, v in enumerate(values):
                self.p.produce("orders", value=v, partition=q)
            self.p.flush(30)
            if before_commit is not None:
                before_commit()
            self._commit()
        except KafkaException as e:
            error = e.args[0]
            self.errors.append(error)
            assert not error.fatal(), f"fatal error: {error}"
            self.p.abort_transaction(60)
            return False
        self.committed += values
        self.commit_times.append(time.monotonic())
        return True

    def _commit(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                self.p.commit_transaction(30)
                return
            except KafkaException as e:
                error = e.args[0]
                if not error.retriable() or time.monotonic() > deadline:
                    raise
                self.errors.append(error)

    def max_gap(self, since: float) -> float:
        times = [since] + [t for t in self.commit_times if t > since]
        return max(b - a for a, b in itertools.pairwise(times))


def orders(
    brokers: dict[int, BrokerProcess], client: KazooClient
) -> tuple[str, AdminClient, Committer]:
    """The cluster's bootstrap servers, an admin client, and the app, once ``orders`` (3
    replicas, min.insync.replicas 2) has a leader for each partition."""
    servers = bootstrap(brokers)
    admin = AdminClient({"bootstrap.servers": servers})
    config = {"min.insync.replicas": "2"}
    admin.create_topics([NewTopic("orders", PARTITIONS, 3, config=config)])["orders"].result(30)
    until(
        "each partition led",
        lambda: all(leader_of(client, "orders", q) >= 0 for q in range(PARTITIONS)),
    )
    return servers, admin, Committer(servers, "orders-app")


def test_a_commit_completes_on_the_new_leader_while_a_marker_target_is_paused(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(
        tmp_path, connect, [0, 1, 2], ADMIN, "transaction.state.log.replication.factor=2"
    )
    try:
        servers, _, app = orders(brokers, client)
        coordinator = leader_of(client, TXN_STATE, 0)
        # The paused broker holds no replica of __transaction_state (replication factor
        # 2 here), so the transaction's PREPARE_COMMIT is written at once; it leads a
        # partition of the transaction, whose marker then goes to a broker that hangs.
        (victim,) = set(brokers) - set(replicas_of(client, TXN_STATE, 0))
        led = {q: leader_of(client, "orders", q) for q in range(PARTITIONS)}
        its = [q for q, b in led.items() if b == victim]
        assert its, led
        for _ in range(3):
            assert app.one()

        paused_at = time.monotonic()
        # Its record is written (acks=all): then it stops answering, and the commit's
        # marker for its partition goes to a leader that hangs.
        assert app.one(before_commit=lambda: pause(brokers[victim]))
        first_commit_s = app.commit_times[-1] - paused_at
        moved = until(
            "the paused broker's partitions led elsewhere",
            lambda: all(leader_of(client, "orders", q) not in (-1, victim) for q in its),
            timeout=SESSION_MS / 1000 + 30,
        )
        assert moved
        while time.monotonic() - paused_at < 3 * SESSION_MS / 1000:  # a while without it
            app.one()
        resume(brokers[victim])
        resumed_at = time.monotonic()
        while time.monotonic() - resumed_at < 2 * SESSION_MS / 1000:  # and once it is back
            app.one()
        assert app.one()

        # EndTxn is answered once the markers are written or after 5 s; the producer's
        # next transaction waits for the COMPLETE_COMMIT. Its markers waited for the
        # leadership to move (the session timeout), not for the paused broker nor for
        # request.timeout.ms (30 s; the gap was 30.8 s with markers sent to each leader
        # in turn and no watch on the leadership).
        assert first_commit_s < MAX_GAP_S, first_commit_s
        gap = app.max_gap(paused_at)
        assert gap < MAX_GAP_S, (gap, app.errors)
        given_up = coordinator_figures(brokers[coordinator])["marker_sends_given_up"]
        assert given_up["moved"] >= 1, given_up
        url = brokers[coordinator].admin_url
        text = httpx.get(f"{url}/metrics", timeout=10).text
        counter = 'kafka_transaction_coordinator_marker_sends_given_up_total{reason="moved"} '
        (line,) = [line for line in text.splitlines() if line.startswith(counter)]
        assert float(line.removeprefix(counter)) >= given_up["moved"]

        servers = bootstrap(brokers)
        got = read(servers, "orders", PARTITIONS, "read_committed")
        assert sorted(got) == sorted(app.committed)
        print(
            f"first commit after the pause: {first_commit_s:.1f} s; longest gap between "
            f"commits: {gap:.1f} s; {len(app.committed) // PARTITIONS} transactions "
            f"committed, errors seen: {[str(e) for e in app.errors]}"
        )
    finally:
        stop_all(brokers)


def txn_state(b: BrokerProcess, transactional_id: str) -> str | None:
    """The id's state at ``b``'s coordinator (None: not held there)."""
    assert b.admin_url is not None
    listing = httpx.get(f"{b.admin_url}/v1/transactions", timeout=10).json()["transactions"]
    states = [t["state"] for t in listing if t["transactional_id"] == transactional_id]
    return states[0] if states else None


def set_min_insync(admin: AdminClient, topic: str, value: int) -> None:
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(
                "min.insync.replicas", str(value), incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_b_a_new_coordinator_completes_a_prepared_commit_without_the_old_one(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2], ADMIN)
    try:
        servers, admin, app = orders(brokers, client)
        assert app.one()
        old = leader_of(client, TXN_STATE, 0)
        assert old in {leader_of(client, "orders", q) for q in range(PARTITIONS)}

        # The transaction's records are written; then no partition can take a marker (more
        # in-sync replicas asked than there are), so the commit stays PREPARE_COMMIT.
        values = [b"held-%d" % q for q in range(PARTITIONS)]
        app.p.begin_transaction()
        for q, v in enumerate(values):
            app.p.produce("orders", value=v, partition=q)
        assert app.p.flush(30) == 0
        set_min_insync(admin, "orders", 4)
        outcome: list[Any] = []
        committing = threading.Thread(target=lambda: outcome.append(commit(app.p)))
        committing.start()
        until(
            "PREPARE_COMMIT written",
            lambda: txn_state(brokers[old], "orders-app") == "PrepareCommit",
        )

        # Its coordinator stops answering; another broker takes over __transaction_state
        # and reads the PREPARE_COMMIT back.
        pause(brokers[old])
        paused_at = time.monotonic()
        until(
            "another coordinator",
            lambda: leader_of(client, TXN_STATE, 0) not in (-1, old),
            timeout=SESSION_MS / 1000 + 30,
        )
        new = leader_of(client, TXN_STATE, 0)
        until(
            "the prepared commit loaded",
            lambda: txn_state(brokers[new], "orders-app") == "PrepareCommit",
        )
        took_over_s = time.monotonic() - paused_at
        live = AdminClient({"bootstrap.servers": bootstrap({new: brokers[new]})})
        set_min_insync(live, "orders", 2)
        released_at = time.monotonic()
        until(
            "COMPLETE_COMMIT written by the new coordinator",
            lambda: txn_state(brokers[new], "orders-app") == "CompleteCommit",
            timeout=MAX_GAP_S,
        )
        completed_s = time.monotonic() - released_at
        committing.join(90)
        assert outcome == [None], outcome  # committed, no fatal error
        given_up = coordinator_figures(brokers[new])["marker_sends_given_up"]
        resume(brokers[old])

        servers = bootstrap(brokers)
        got = read(servers, "orders", PARTITIONS, "read_committed")
        assert sorted(got) == sorted(app.committed + values)
        print(
            f"new coordinator took over {took_over_s:.1f} s after the pause; markers and "
            f"COMPLETE_COMMIT {completed_s:.1f} s after they could be written; sends given "
            f"up: {given_up}; errors seen: {[str(e) for e in app.errors]}"
        )
    finally:
        stop_all(brokers)


def commit(p: Producer) -> Any:
    """commit_transaction, retried while its error is retriable: None, or the error."""
    deadline = time.monotonic() + 60
    while True:
        try:
            p.commit_transaction(30)
            return None
        except KafkaException as e:
            error = e.args[0]
            if error.fatal() or not error.retriable() or time.monotonic() > deadline:
                return error
