"""A log dir that fails goes offline as Kafka's does; the broker's other dirs keep serving.

A real broker process with two log dirs; one of them is removed from under it (a disk
pulled out). The broker notices at the next operation that touches the folder (here a
segment roll, as Kafka notices at its next I/O error; records written into the unlinked
files before that go with the disk). From then on every partition of that dir is
offline: producers get KAFKA_STORAGE_ERROR and never another acknowledgement, Metadata
gives those partitions no leader (LEADER_NOT_AVAILABLE) and DescribeLogDirs reports the dir
with KAFKA_STORAGE_ERROR, while the partitions of the other dir go on taking and serving
records.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from ..support.brokers import BrokerProcess

DEADLINE_S = 30
PARTITIONS = 4


def produce(bootstrap: str, partition: int, count: int, errors: int = 0) -> list[int]:
    """``count`` records of 100 bytes, one batch each: the error code of each (0: done);
    with ``errors``, it stops once that many have failed."""
    results: list[int] = []

    def done(err: Any, msg: Any) -> None:
        results.append(0 if err is None else err.code())

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,  # see each KAFKA_STORAGE_ERROR, not the retries
            "linger.ms": 0,
            "message.timeout.ms": 3_000,
        }
    )
    for i in range(count):
        p.produce("disks", value=b"%03d" % i + b"x" * 97, partition=partition, on_delivery=done)
        p.flush(DEADLINE_S)
        if errors and sum(1 for r in results if r) >= errors:
            break
    return results


def read_back(bootstrap: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of ``partition``, from the start to its end."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "checker",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        c.assign([TopicPartition("disks", partition, 0)])
        got: list[tuple[int, bytes]] = []
        while True:
            m = c.poll(DEADLINE_S)
            assert m is not None, "consumer stalled"
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return got
            got.append((m.offset(), m.value()))
    finally:
        c.close()


def test_a_failed_log_dir_goes_offline_and_the_other_keeps_serving(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    b = BrokerProcess(first, [f"log.dirs={first},{second}", "log.segment.bytes=2048"]).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("disks", PARTITIONS, 1)])["disks"].result(DEADLINE_S)
        lost = sorted(int(p.name.rsplit("-", 1)[1]) for p in second.glob("disks-*"))
        kept = sorted(set(range(PARTITIONS)) - set(lost))
        assert lost and kept, (lost, kept)
        for partition in range(PARTITIONS):  # every partition in use, its epoch recorded
            assert produce(b.bootstrap, partition, 3) == [0, 0, 0]

        shutil.rmtree(second)

        # The first partition of the failed dir finds the failure (at its next roll):
        # offline from its first error on, never acknowledged again.
        results = produce(b.bootstrap, lost[0], 60, errors=4)  # 3 segments' worth
        assert KafkaError.KAFKA_STORAGE_ERROR in results, results
        first_error = results.index(KafkaError.KAFKA_STORAGE_ERROR)
        assert 0 not in results[first_error:], results
        # The whole dir went with it: its other partitions have no leader before any write
        # of theirs failed, and take nothing more (refused, or timed out without a leader).
        topic = admin.list_topics(timeout=DEADLINE_S).topics["disks"]
        for partition in lost:
            meta = topic.partitions[partition]
            assert meta.leader == -1 and meta.error.code() == KafkaError.LEADER_NOT_AVAILABLE
        for partition in kept:
            assert topic.partitions[partition].leader == 0
            assert topic.partitions[partition].error is None
        for partition in lost[1:]:
            assert 0 not in produce(b.bootstrap, partition, 3)
        for partition in kept:
            assert produce(b.bootstrap, partition, 60) == [0] * 60

        other = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=30_000)
        try:
            (answer,) = other.describe_log_dirs()
        finally:
            other.close()
        errors = {Path(r["log_dir"]).name: r["error_code"] for r in answer["log_dirs"]}
        assert errors == {"first": 0, "second": KafkaError.KAFKA_STORAGE_ERROR}, answer

        # The dir that did not fail serves all it took, in order.
        for partition in kept:
            got = read_back(b.bootstrap, partition)
            assert [o for o, _ in got] == list(range(63))
    finally:
        b.terminate()
