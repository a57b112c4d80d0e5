"""Transactions in a ZooKeeper cluster: markers written at the leader wait for the ISR, the
follower rebuilds the same producer state, last stable offset and aborted index from the
leader's batches, and serves read_committed the same once it leads. Real ZooKeeper, broker
processes, wire requests for what no client sends (there is no coordinator yet) and a
confluent-kafka read_committed consumer."""

from __future__ import annotations

import os
import select
import signal
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from trio_broker.protocol.messages.txn_markers import WriteTxnMarkersRequest

from ..data.test_transactions import (
    A,
    B,
    C,
    Marker,
    MarkerTopic,
    committed_fetch,
    confluent_values,
    plain,
    txn_batch,
    values_of,
)
from ..data.test_wire_data_path import produce_req
from ..support.wire import WireClient
from .test_replication import bootstrap, partition_state, start, stop_all
from .test_zookeeper_cluster import SESSION_MS, until


def produce(c: WireClient, records: bytes, txn_id: str | None = "tx-1") -> int:
    req = produce_req("tx", records, acks=-1)
    req.transactional_id = txn_id
    (p,) = c.request(req, 9).responses[0].partition_responses
    assert p.error_code == 0, p
    return p.base_offset  # type: ignore[no-any-return]


def first_append(c: WireClient, records: bytes, txn_id: str | None = None) -> bool:
    """Whether the partition's first records were taken (at offset 0); False while the
    broker does not hold the partition yet, or not as its leader yet."""
    req = produce_req("tx", records, acks=-1)
    req.transactional_id = txn_id
    (p,) = c.request(req, 9).responses[0].partition_responses
    if p.error_code in (3, 6):  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER: not yet
        return False
    assert (p.error_code, p.base_offset) == (0, 0), p
    return True


def markers(c: WireClient, *wanted: tuple[int, bool]) -> list[int]:
    req = WriteTxnMarkersRequest(
        markers=[
            Marker(
                producer_id=pid,
                producer_epoch=0,
                transaction_result=commit,
                topics=[MarkerTopic(name="tx", partition_indexes=[0])],
                coordinator_epoch=0,
            )
            for pid, commit in wanted
        ]
    )
    return [m.topics[0].partitions[0].error_code for m in c.request(req, 1).markers]


def read_committed(c: WireClient) -> Any:
    (p,) = c.request(committed_fetch(0), 11).responses[0].partitions
    return p


def test_a_follower_serves_read_committed_the_same_after_a_leader_move(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1])
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("tx", 1, 2)])["tx"].result(30)
        until("both replicas in the ISR", lambda: len(partition_state(client, "tx", 0)["isr"]) == 2)
        old = partition_state(client, "tx", 0)["leader"]
        new = 1 - old
        with WireClient(brokers[old].bootstrap) as c:
            # ZooKeeper names the leader before the controller's LeaderAndIsr reaches it.
            until("the leader holds the partition", lambda: first_append(c, plain(b"a")))
            assert produce(c, txn_batch(A, 0, b"A1", b"A2")) == 1
            assert produce(c, txn_batch(B, 0, b"B1")) == 3
            assert markers(c, (A, False), (B, True)) == [0, 0]  # once the ISR has them
            assert produce(c, plain(b"b"), None) == 6
            assert produce(c, txn_batch(C, 0, b"C1")) == 7
            assert produce(c, plain(b"c"), None) == 8
            p = read_committed(c)
            assert (p.high_watermark, p.last_stable_offset) == (9, 7)

        brokers[old].terminate()  # controlled shutdown: the follower leads
        until(
            f"broker {new} leads",
            lambda: partition_state(client, "tx", 0)["leader"] == new,
            timeout=SESSION_MS / 1000 + 30,
        )
        with WireClient(brokers[new].bootstrap) as c:
            p = until(
                "the new leader's high watermark",
                lambda: (p := read_committed(c)).high_watermark == 9 and p,
            )
            assert p.last_stable_offset == 7
            assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(A, 1)]
            assert values_of(p.records) == [b"a", b"A1", b"A2", b"B1", b"b"]
            seen = confluent_values(brokers[new].bootstrap, "read_committed")
            assert seen == [b"a", b"B1", b"b"]
            # The follower remembered C's open transaction: its marker completes it.
            assert markers(c, (C, True)) == [0]
            assert read_committed(c).last_stable_offset == 10
        seen = confluent_values(brokers[new].bootstrap, "read_committed")
        assert seen == [b"a", b"B1", b"b", b"C1", b"c"]
    finally:
        stop_all(brokers)


def test_a_marker_is_answered_once_the_isr_holds_it(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1], "replica.lag.time.max.ms=60000")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("tx", 1, 2)])["tx"].result(30)
        until("both replicas in the ISR", lambda: len(partition_state(client, "tx", 0)["isr"]) == 2)
        leader = partition_state(client, "tx", 0)["leader"]
        follower = brokers[1 - leader].proc
        assert follower is not None
        with WireClient(brokers[leader].bootstrap) as c:
            # ZooKeeper names the leader before the controller's LeaderAndIsr reaches it.
            until(
                "the leader holds the partition",
                lambda: first_append(c, txn_batch(A, 0, b"A1"), "tx-1"),
            )
            os.kill(follower.pid, signal.SIGSTOP)  # in the ISR, but fetching nothing
            try:
                c.send(
                    WriteTxnMarkersRequest(
                        markers=[
                            Marker(
                                producer_id=A,
                                producer_epoch=0,
                                transaction_result=True,
                                topics=[MarkerTopic(name="tx", partition_indexes=[0])],
                                coordinator_epoch=0,
                            )
                        ]
                    ),
                    1,
                )
                readable, _, _ = select.select([c.sock], [], [], 1.0)
                assert not readable, "answered before the follower had the marker"
            finally:
                os.kill(follower.pid, signal.SIGCONT)
            _, resp = c.receive()
            assert resp.markers[0].topics[0].partitions[0].error_code == 0
            p = read_committed(c)
            assert (p.high_watermark, p.last_stable_offset) == (2, 2)
    finally:
        stop_all(brokers)
