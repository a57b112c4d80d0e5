"""Transactions in a ZooKeeper cluster: the transaction coordinator is the leader of the
id's ``__transaction_state`` partition, sends markers to partitions led by other brokers
over the inter-broker listener, and moves with that leadership (a broker stopped in the
middle of a transaction: its successor reads the state back and the producer commits
there). Real ZooKeeper, broker processes, confluent-kafka clients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from .test_replication import bootstrap, start, stop_all
from .test_zookeeper_cluster import until

TXN_STATE = "__transaction_state"


def read(servers: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every record a consumer with ``isolation`` reads, up to the end of each partition."""
    c = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"check-{isolation}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes] = []
    ends = 0
    try:
        while ends < partitions:
            m = c.poll(30)
            assert m is not None, "no end of partition within 30 s"
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                ends += 1
                continue
            out.append(m.value())
    finally:
        c.close()
    return out


def leader_of(client: KazooClient, topic: str, partition: int) -> int:
    data, _ = client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    leader: int = json.loads(data)["leader"]
    return leader


def send(p: Producer, topic: str, values: list[bytes], partitions: int) -> None:
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=i % partitions)
    assert p.flush(30) == 0


def test_transactions_across_a_three_broker_cluster(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = start(tmp_path, connect, [0, 1, 2])
    try:
        servers = bootstrap(brokers)
        admin = AdminClient({"bootstrap.servers": servers})
        admin.create_topics([NewTopic("orders", 3, 2)])["orders"].result(30)
        until(
            "each partition led", lambda: all(leader_of(client, "orders", p) >= 0 for p in range(3))
        )
        leaders = {leader_of(client, "orders", p) for p in range(3)}
        assert len(leaders) > 1  # markers must reach other brokers than the coordinator

        conf: dict[str, Any] = {"bootstrap.servers": servers, "transactional.id": "orders-app"}
        p = Producer(conf)
        p.init_transactions(60)
        coordinator = leader_of(client, TXN_STATE, 0)
        assert coordinator in brokers

        committed = [b"c%02d" % i for i in range(30)]
        p.begin_transaction()
        send(p, "orders", committed, 3)
        p.commit_transaction(60)
        aborted = [b"a%02d" % i for i in range(9)]
        p.begin_transaction()
        send(p, "orders", aborted, 3)
        p.abort_transaction(60)

        assert sorted(read(servers, "orders", 3, "read_committed")) == committed
        assert sorted(read(servers, "orders", 3, "read_uncommitted")) == sorted(committed + aborted)

        # The coordinator stops in the middle of a transaction: the leadership of its
        # __transaction_state partition moves, and the new leader finishes the job.
        late = [b"l%02d" % i for i in range(6)]
        p.begin_transaction()
        send(p, "orders", late, 3)
        brokers[coordinator].terminate()
        until(
            "another coordinator",
            lambda: leader_of(client, TXN_STATE, 0) not in (-1, coordinator),
            timeout=60,
        )
        p.commit_transaction(60)
        servers = bootstrap(brokers)
        assert sorted(read(servers, "orders", 3, "read_committed")) == sorted(committed + late)
    finally:
        stop_all(brokers)
