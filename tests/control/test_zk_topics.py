"""Topics in a ZooKeeper cluster grow and are placed rack by rack: CreatePartitions adds
partitions placed as Kafka places them (the existing replication factor), the controller
sees the assignment change at once and the new partitions get leaders, in-sync followers
and clients; brokers with a broker.rack get Kafka's rack-aware placement, and a cluster
where only some brokers have one refuses automatic placement. Real ZooKeeper, real broker
processes, confluent-kafka clients."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from kazoo.client import KazooClient

from nemesis.replicas import replica_log
from trio_broker.protocol.messages.configs import DescribeConfigsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerProcess
from ..support.wire import WireClient
from .test_replication import bootstrap, consume_all, partition_state, produce, stop_all
from .test_zookeeper_cluster import broker, metadata, until


def error_of(future: object) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(30)  # type: ignore[attr-defined]
    err: KafkaError = info.value.args[0]
    return err


def assignment(client: KazooClient, topic: str) -> dict[int, list[int]]:
    doc = json.loads(client.get(f"/brokers/topics/{topic}")[0])
    return {int(p): r for p, r in doc["partitions"].items()}


def three_brokers(tmp_path: Path, connect: str) -> dict[int, BrokerProcess]:
    """Brokers 0, 1 and 2 started, once broker 0's Metadata names all three."""
    brokers = {i: broker(tmp_path, connect, i).start() for i in (0, 1, 2)}
    try:
        until("every broker named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1, 2])
    except BaseException:
        stop_all(brokers)
        raise
    return brokers


def test_create_partitions_grows_an_rf2_topic_across_the_cluster(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    connect, client = zk
    brokers = three_brokers(tmp_path, connect)
    try:
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


def test_a_topic_config_change_asked_of_any_broker_is_in_force_on_its_leader(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    # As librdkafka's 0011 does on a cluster: IncrementalAlterConfigs makes a topic
    # compacted through a broker that holds none of it; its leader then refuses null
    # keys, and every broker describes the change.
    connect, client = zk
    brokers = three_brokers(tmp_path, connect)
    try:
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        made = NewTopic("conf", 1, replica_assignment=[[2]], config={"retention.ms": "3600000"})
        admin.create_topics([made])["conf"].result(30)
        asked = AdminClient({"bootstrap.servers": brokers[1].bootstrap})  # holds none of it
        resource = ConfigResource(
            "topic",
            "conf",
            incremental_configs=[
                ConfigEntry(
                    "cleanup.policy",
                    "compact",
                    incremental_operation=AlterConfigOpType.APPEND,
                )
            ],
        )
        asked.incremental_alter_configs([resource])[resource].result(30)
        stored = json.loads(client.get("/config/topics/conf")[0])["config"]
        assert stored == {"retention.ms": "3600000", "cleanup.policy": "delete,compact"}

        def described(b: int) -> dict[str, tuple[str | None, int]]:
            """DescribeConfigs of the topic asked of broker ``b`` itself (an AdminClient
            sends it to any broker it knows)."""
            res = DescribeConfigsRequest.Resource(
                resource_type=2, resource_name="conf", configuration_keys=None
            )
            req = DescribeConfigsRequest(resources=[res], include_synonyms=False)
            with WireClient(brokers[b].bootstrap) as wire:
                (result,) = wire.request(req, 4).results
            assert result.error_code == 0, result.error_message
            return {e.name: (e.value, e.config_source) for e in result.configs}

        dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        for b in (0, 1, 2):
            until(
                f"broker {b} describes the change",
                lambda b=b: described(b)["cleanup.policy"] == ("delete,compact", dynamic),
            )
            assert described(b)["retention.ms"] == ("3600000", dynamic)

        # In force on the leader: a record without a key is refused, one with a key is not.
        p = Producer({"bootstrap.servers": bootstrap(brokers), "enable.idempotence": False})
        errors: list[object] = []
        p.produce("conf", value=b"no key", on_delivery=lambda e, m: errors.append(e))
        assert p.flush(30) == 0  # each in its own batch: Kafka refuses a batch whole
        p.produce("conf", key=b"k", value=b"keyed", on_delivery=lambda e, m: errors.append(e))
        assert p.flush(30) == 0
        assert [e.code() if e is not None else None for e in errors] == [
            KafkaError.INVALID_RECORD,
            None,
        ]

        # Taken back (through broker 0): the leader takes null keys again.
        back = ConfigResource(
            "topic",
            "conf",
            incremental_configs=[
                ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE)
            ],
        )
        admin.incremental_alter_configs([back])[back].result(30)

        default = ConfigSource.DEFAULT_CONFIG.value
        until(
            "the leader (broker 2) has taken it back",
            lambda: described(2)["cleanup.policy"] == ("delete", default),
        )
        p.produce("conf", value=b"no key again", on_delivery=lambda e, m: errors.append(e))
        assert p.flush(30) == 0
        assert errors[-1] is None
    finally:
        stop_all(brokers)


def find_a_group_coordinator(bootstrap_servers: str, tp: TopicPartition) -> None:
    """Until a group's committed offsets can be read: its FindCoordinator made
    __consumer_offsets (in a cluster, through the creation path) and its coordinator has
    loaded (NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS meanwhile)."""
    group = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "g"})

    def answered() -> bool:
        try:
            group.committed([tp], timeout=10)
        except KafkaException:
            return False
        return True

    try:
        until("a group coordinator answers", answered, timeout=60)
    finally:
        group.close()


# (topic, what a broker on its own and a one-broker ZooKeeper cluster both answer)
ONE_PATH_CASES = [
    (NewTopic("bad name", 1, 1), "TOPIC_EXCEPTION"),
    (NewTopic("no-partitions", 0, 1), "INVALID_PARTITIONS"),
    (NewTopic("rf2", 1, 2), "INVALID_REPLICATION_FACTOR"),
    (NewTopic("rf0", 1, 0), "INVALID_REPLICATION_FACTOR"),
    (NewTopic("bad-config", 1, 1, config={"retention.ms": "soon"}), "INVALID_CONFIG"),
    (NewTopic("unknown-config", 1, 1, config={"no.such.key": "1"}), "INVALID_CONFIG"),
    (NewTopic("elsewhere", 2, replica_assignment=[[0], [7]]), "INVALID_REPLICA_ASSIGNMENT"),
    (NewTopic("repeat", 1, replica_assignment=[[0, 0]]), "INVALID_REPLICA_ASSIGNMENT"),
    (NewTopic("exists", 1, 1), "TOPIC_ALREADY_EXISTS"),
    (NewTopic("fine", 2, 1), "NONE"),
    (NewTopic("assigned", 3, replica_assignment=[[0], [0], [0]]), "NONE"),
]


def answers(admin: AdminClient, *, validate_only: bool) -> dict[str, str]:
    futures = admin.create_topics([t for t, _ in ONE_PATH_CASES], validate_only=validate_only)
    out = {}
    for name, future in futures.items():
        try:
            future.result(30)
            out[name] = "NONE"
        except KafkaException as exc:
            out[name] = exc.args[0].name()
    grow = admin.create_partitions([NewPartitions("__consumer_offsets", 99)])
    out["grow __consumer_offsets"] = error_of(grow["__consumer_offsets"]).name()
    if not validate_only:  # DeleteTopics has no validate_only
        deleted = admin.delete_topics(["__consumer_offsets", "no-such-topic"])
        for name, future in deleted.items():
            out[f"delete {name}"] = error_of(future).name()
    return out


def test_one_creation_path_answers_alike_on_one_broker_and_in_a_cluster(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """CreateTopics, CreatePartitions and DeleteTopics take the one path
    (topics.TopicCreation) whether topics are written to the broker's own catalog or to
    ZooKeeper: the same refusals, the same acceptances, validate_only creates nothing in
    either, and neither deletes a coordinator's topic."""
    connect, _ = zk
    alone = BrokerProcess(tmp_path / "alone", [f"log.dirs={tmp_path / 'alone'}"]).start()
    member = broker(tmp_path, connect, 0, "offsets.topic.replication.factor=1").start()
    try:
        seen = {}
        for where, b in (("alone", alone), ("cluster", member)):
            admin = AdminClient({"bootstrap.servers": b.bootstrap})
            admin.create_topics([NewTopic("exists", 1, 1)])["exists"].result(30)
            # A group's first FindCoordinator makes __consumer_offsets (in the cluster,
            # through the same path), so that deleting it is refused for being internal.
            find_a_group_coordinator(b.bootstrap, TopicPartition("exists", 0))
            until(
                "__consumer_offsets exists",
                lambda a=admin: "__consumer_offsets" in a.list_topics(timeout=10).topics,
            )
            dry = answers(admin, validate_only=True)
            assert not {"fine", "assigned"} & set(admin.list_topics(timeout=10).topics)
            seen[where] = answers(admin, validate_only=False)
            assert dry == {k: v for k, v in seen[where].items() if not k.startswith("delete ")}
            topics = admin.list_topics(timeout=10).topics
            assert len(topics["fine"].partitions) == 2 and len(topics["assigned"].partitions) == 3
        expected = {t.topic: answer for t, answer in ONE_PATH_CASES}
        expected["grow __consumer_offsets"] = "TOPIC_EXCEPTION"
        expected["delete __consumer_offsets"] = "TOPIC_EXCEPTION"
        expected["delete no-such-topic"] = "UNKNOWN_TOPIC_OR_PART"
        assert seen["alone"] == seen["cluster"] == expected
    finally:
        stop_all({0: member, 1: alone})


def test_an_internal_topic_held_elsewhere_is_internal_in_metadata(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """A broker that holds no partition of __consumer_offsets describes it as the controller
    told it, internal flag included (Metadata's is_internal, which admin clients use to
    hide the coordinators' topics)."""
    connect, _ = zk
    one = ("offsets.topic.replication.factor=1", "offsets.topic.num.partitions=1")
    brokers = {i: broker(tmp_path, connect, i, *one).start() for i in (0, 1)}
    try:
        until("both brokers named", lambda: sorted(metadata(brokers[0]).brokers) == [0, 1])
        admin = AdminClient({"bootstrap.servers": bootstrap(brokers)})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        find_a_group_coordinator(bootstrap(brokers), TopicPartition("t", 0))
        for b in brokers.values():
            with WireClient(b.bootstrap) as wire:
                topics = {t.name: t for t in wire.request(MetadataRequest(topics=None), 9).topics}
            assert topics["__consumer_offsets"].is_internal
            assert not topics["t"].is_internal
    finally:
        stop_all(brokers)


def test_a_topic_deleted_while_a_replica_was_down_is_not_listed_by_it_again(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """Found by the nemesis admin workload: broker 2 stops (SIGSTOP) until its ZooKeeper
    session expires, a topic with a replica on it is deleted (the StopReplica goes to the
    live replicas only), broker 2 wakes and registers again, and still holds the topic. Its Metadata must not list the topic: once
    the controller has described the cluster, a broker lists only the topics it described."""
    connect, client = zk
    brokers = three_brokers(tmp_path, connect)
    try:
        admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
        for name in ("gone", "t"):
            admin.create_topics([NewTopic(name, 1, 3)])[name].result(30)
        until("gone led", lambda: (partition_state(client, "gone", 0) or {}).get("leader", -1) >= 0)
        assert brokers[2].proc is not None
        os.kill(brokers[2].proc.pid, signal.SIGSTOP)  # a broker cut off, as by a partition
        try:
            until("broker 2's session gone", lambda: not client.exists("/brokers/ids/2"))
            admin.delete_topics(["gone"])["gone"].result(30)
            until("gone removed from ZooKeeper", lambda: not client.exists("/brokers/topics/gone"))
        finally:
            os.kill(brokers[2].proc.pid, signal.SIGCONT)
        until("broker 2 registered again", lambda: client.exists("/brokers/ids/2"))
        assert (tmp_path / "b2" / "gone-0").is_dir()  # its log is still there

        def listed_by(b: int) -> set[str]:
            with WireClient(brokers[b].bootstrap) as wire:  # this broker's own answer
                return {t.name for t in wire.request(MetadataRequest(topics=None), 9).topics}

        # Until the controller describes the cluster to it again, broker 2 answers from
        # what it was told before the pause; then the topic must go, and stay gone.
        until("broker 2 no longer lists the deleted topic", lambda: "gone" not in listed_by(2))
        assert "t" in listed_by(2) and "gone" not in listed_by(0)
    finally:
        stop_all(brokers)


def test_a_topic_created_again_over_a_replica_that_missed_its_deletion_holds_only_new_records(
    tmp_path: Path, zk: tuple[str, KazooClient]
) -> None:
    """Broker 2 is away (SIGSTOP until its session expires) while a topic with a replica on
    it is deleted, so it keeps that log; back, it is made a replica of a new topic of the
    same name (a new topic id). The old log must not serve as the new one's: its records
    would stand at the new partition's offsets on broker 2 (and be served if it led), or
    its fetches be refused for the old topic id. Kafka's topic ids (KIP-516) tell the two
    apart; read from every broker's files after they stopped."""
    connect, client = zk
    brokers = three_brokers(tmp_path, connect)
    try:
        servers = bootstrap(brokers)
        admin = AdminClient({"bootstrap.servers": servers})
        admin.create_topics([NewTopic("again", 1, 3)])["again"].result(30)
        until(
            "again led", lambda: (partition_state(client, "again", 0) or {}).get("leader", -1) >= 0
        )
        old = [b"%d" % (1000 + i) for i in range(50)]
        assert all(err is None for err, _ in produce(servers, "again", old, acks="all"))
        until("broker 2 in sync", lambda: 2 in partition_state(client, "again", 0)["isr"])
        assert brokers[2].proc is not None
        os.kill(brokers[2].proc.pid, signal.SIGSTOP)
        try:
            until("broker 2's session gone", lambda: not client.exists("/brokers/ids/2"))
            admin.delete_topics(["again"])["again"].result(30)
            until("again removed", lambda: not client.exists("/brokers/topics/again"))
        finally:
            os.kill(brokers[2].proc.pid, signal.SIGCONT)
        until("broker 2 registered again", lambda: client.exists("/brokers/ids/2"))
        admin.create_topics([NewTopic("again", 1, 3)])["again"].result(30)
        new = [b"%d" % i for i in range(10)]
        assert all(err is None for err, _ in produce(servers, "again", new, acks="all"))
        until(
            "broker 2 in sync with the new topic",
            lambda: sorted((partition_state(client, "again", 0) or {}).get("isr", [])) == [0, 1, 2],
        )
    finally:
        stop_all(brokers)
    copies = {b: replica_log(tmp_path / f"b{b}", "again", 0) for b in brokers}
    assert copies == {b: dict(enumerate(range(10))) for b in brokers}, copies
