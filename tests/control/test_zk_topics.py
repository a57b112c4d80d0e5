"""Topics in a ZooKeeper cluster grow and are placed rack by rack: CreatePartitions adds
partitions placed as Kafka places them (the existing replication factor), the controller
sees the assignment change at once and the new partitions get leaders, in-sync followers
and clients; brokers with a broker.rack get Kafka's rack-aware placement, and a cluster
where only some brokers have one refuses automatic placement. Real ZooKeeper, real broker
processes, confluent-kafka clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kazoo.client import KazooClient

from .test_replication import bootstrap, consume_all, partition_state, stop_all
from .test_zookeeper_cluster import broker, metadata, until


def error_of(future: object) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(30)  # type: ignore[attr-defined]
    err: KafkaError = info.value.args[0]
    return err


def assignment(client: KazooClient, topic: str) -> dict[int, list[int]]:
    doc = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    return {int(p): r for p, r in doc["partitions"].items()}


def test_create_partitions_grows_an_rf2_topic_across_the_cluster(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = {i: broker(tmp_path, connect, i).start() for i in (0, 1, 2)}
    try:
        until("every broker named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1, 2])
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("grow", 2, 2)])["grow"].result(30)
        before = assignment(client, "grow")
        topic_id = json.loads(client.get("/brokers/topics/grow")[0])["topic_id"]

        # validate_only checks and changes nothing; a count not above 2 is refused.
        admin.create_partitions([NewPartitions("grow", 5)], validate_only=True)["grow"].result(30)
        assert assignment(client, "grow") == before
        for count in (2, 1):
            err = error_of(admin.create_partitions([NewPartitions("grow", count)])["grow"])
            assert err.code() == KafkaError.INVALID_PARTITIONS
        bad = NewPartitions("grow", 3, replica_assignment=[[0, 7]])
        err = error_of(admin.create_partitions([bad])["grow"])
        assert err.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
        odd = NewPartitions("grow", 3, replica_assignment=[[0]])  # not partition 0's RF
        err = error_of(admin.create_partitions([odd])["grow"])
        assert err.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT

        # Placed, written with the same topic id; answered once this broker has leaders.
        admin.create_partitions([NewPartitions("grow", 5)])["grow"].result(30)
        after = assignment(client, "grow")
        assert {p: after[p] for p in before} == before and len(after) == 5
        assert all(len(set(r)) == 2 for r in after.values())
        assert json.loads(client.get("/brokers/topics/grow")[0])["topic_id"] == topic_id
        for p in range(2, 5):  # elected by the controller, followers caught up
            until(
                f"partition {p} with a leader and an ISR of 2",
                lambda p=p: len(partition_state(client, "grow", p)["isr"]) == 2,
            )
            assert partition_state(client, "grow", p)["leader"] == after[p][0]
        for b in brokers.values():
            md = until(
                f"{b.bootstrap} sees 5 partitions",
                lambda b=b: (t := metadata(b).topics.get("grow")) and len(t.partitions) == 5 and t,
            )
            assert all(len(p.isrs) == 2 for p in md.partitions.values())

        # A manual assignment for the next one is taken as given.
        manual = NewPartitions("grow", 6, replica_assignment=[[2, 0]])
        admin.create_partitions([manual])["grow"].result(30)
        assert assignment(client, "grow")[5] == [2, 0]
        until("partition 5 in sync", lambda: len(partition_state(client, "grow", 5)["isr"]) == 2)
        for b in brokers.values():  # UpdateMetadata reaches each broker on its own time
            until(
                f"{b.bootstrap} sees 6 partitions",
                lambda b=b: len(metadata(b).topics["grow"].partitions) == 6,
            )

        values = [b"v%d" % i for i in range(600)]
        reports: list[tuple[object, object]] = []
        p = Producer({"bootstrap.servers": bootstrap(brokers), "acks": "all"})
        for i, v in enumerate(values):  # to every partition, the new ones included
            p.produce("grow", value=v, partition=i % 6, on_delivery=lambda *r: reports.append(r))
            p.poll(0)
        assert p.flush(60) == 0
        assert [err for err, _ in reports if err is not None] == []
        got = consume_all(bootstrap(brokers), "grow", 6, len(values))
        assert all(len(got[p]) == 100 for p in range(6))
        assert sorted(v for vs in got.values() for v in vs) == sorted(values)
    finally:
        stop_all(brokers)


def test_brokers_on_racks_get_rack_aware_placement(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    # Racks named against the ids: the rack-alternated list is 1 (a), 2 (b), 0 (c), so
    # leaders of consecutive partitions go 1 -> 2 -> 0, where rack-unaware goes 0 -> 1 -> 2.
    racks = {0: "c", 1: "a", 2: "b"}
    brokers = {i: broker(tmp_path, connect, i, f"broker.rack={racks[i]}").start() for i in racks}
    try:
        until("every broker named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1, 2])
        for i, rack in racks.items():
            assert json.loads(client.get(f"/brokers/ids/{i}")[0])["rack"] == rack
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        follows = {1: 2, 2: 0, 0: 1}
        for topic, rf in (("rf3", 3), ("rf2", 2)):
            admin.create_topics([NewTopic(topic, 6, rf)])[topic].result(30)
            placed = assignment(client, topic)
            for p in range(5):
                assert placed[p + 1][0] == follows[placed[p][0]], placed
            for replicas in placed.values():
                assert len({racks[b] for b in replicas}) == rf
            assert sorted(r[0] for r in placed.values()) == [0, 0, 1, 1, 2, 2]
        admin.create_partitions([NewPartitions("rf2", 9)])["rf2"].result(30)
        grown = assignment(client, "rf2")
        # The new ones rack by rack too (their start is Kafka's: partition 0's leader's
        # index among the brokers by id, taken in the rack-alternated list).
        for p in range(6, 8):
            assert grown[p + 1][0] == follows[grown[p][0]], grown
        assert all(len({racks[b] for b in grown[p]}) == 2 for p in range(6, 9))
        until("partition 8 in sync", lambda: len(partition_state(client, "rf2", 8)["isr"]) == 2)

        # A broker without a rack joins: automatic placement is refused, as Kafka refuses it.
        brokers[3] = broker(tmp_path, connect, 3).start()
        until("broker 3 named", lambda: 3 in metadata(brokers[0]).brokers)
        err = error_of(admin.create_topics([NewTopic("mixed", 3, 2)])["mixed"])
        assert err.code() == KafkaError.UNKNOWN
        assert "rack" in err.str()
        admin.create_topics([NewTopic("manual", 1, replica_assignment=[[3, 0]])])["manual"].result(
            30
        )
    finally:
        stop_all(brokers)
