"""Data produced by real clients is stored, read back identical and in order."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from ..support.brokers import BrokerThread


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(name, partitions, 1, config=configs)])
    fs[name].result(10)


def test_kcat_round_trip_of_100k_lines(broker: BrokerThread, tmp_path) -> None:  # type: ignore[no-untyped-def]
    lines = [f"line {i} {uuid.UUID(int=i)}" for i in range(100_000)]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    create_topic(broker.bootstrap, "kcat-lines")
    subprocess.run(
        ["kcat", "-P", "-b", broker.bootstrap, "-t", "kcat-lines", "-p", "0", "-l", str(src)],
        check=True,
        timeout=120,
    )
    out = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            broker.bootstrap,
            "-t",
            "kcat-lines",
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%o %s\n",
        ],
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert len(out) == len(lines)
    offsets = [int(line.split(" ", 1)[0]) for line in out]
    assert offsets == list(range(len(lines)))  # contiguous
    assert [line.split(" ", 1)[1] for line in out] == lines  # identical, in order


@pytest.mark.parametrize("compression", ["lz4", "zstd", "gzip", "snappy", "none"])
def test_confluent_acks_all_round_trip(broker: BrokerThread, compression: str) -> None:
    topic = f"ck-{compression}"
    create_topic(broker.bootstrap, topic, partitions=3)
    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "compression.type": compression,
            "linger.ms": 5,
        }
    )
    delivered: list[tuple[int, int]] = []
    errors: list[object] = []

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))

    sent = {i: f"value-{i}".encode() * (1 + i % 7) for i in range(20_000)}
    for i, value in sent.items():
        p.produce(topic, key=str(i).encode(), value=value, partition=i % 3, on_delivery=on_delivery)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors and len(delivered) == len(sent)

    c = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([TopicPartition(topic, part, 0) for part in range(3)])
    got: dict[int, list[tuple[int, bytes, bytes]]] = {0: [], 1: [], 2: []}
    total = 0
    while total < len(sent):
        msgs = c.consume(1000, timeout=10)
        assert msgs, f"stalled after {total} messages"
        for m in msgs:
            assert m.error() is None, m.error()
            got[m.partition()].append((m.offset(), m.key(), m.value()))
            total += 1
    c.close()
    for part, items in got.items():
        assert [o for o, _, _ in items] == list(range(len(items)))
        keys = [int(k) for _, k, _ in items]
        assert keys == sorted(keys) and all(k % 3 == part for k in keys)
        assert all(v == sent[int(k)] for _, k, v in items)


def test_kafka_python_round_trip(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "kp", partitions=2)
    # The plain (non-idempotent) path; idempotence has its own tests.
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, acks="all", linger_ms=2, enable_idempotence=False
    )
    futures = [
        producer.send("kp", key=str(i).encode(), value=f"v{i}".encode(), partition=i % 2)
        for i in range(5000)
    ]
    producer.flush(30)
    metas = [f.get(10) for f in futures]
    producer.close()
    assert sorted(m.offset for m in metas if m.partition == 0) == list(range(2500))
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    from kafka import TopicPartition as KTP

    consumer.assign([KTP("kp", 0), KTP("kp", 1)])
    consumer.seek_to_beginning()
    seen = [(m.partition, m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    assert len(seen) == 5000
    for part in (0, 1):
        mine = [s for s in seen if s[0] == part]
        assert [s[1] for s in mine] == list(range(2500))
        assert [int(s[2]) for s in mine] == list(range(part, 5000, 2))


def test_a_consumer_on_an_empty_partition_waits_instead_of_spinning(broker: BrokerThread) -> None:
    create_topic(broker.bootstrap, "quiet")
    before = broker.call(lambda: broker.broker.fetch_purgatory.expired_count)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=400,
        group_id=None,
        enable_auto_commit=False,
    )
    from kafka import TopicPartition as KTP

    consumer.assign([KTP("quiet", 0)])
    assert consumer.poll(timeout_ms=2000) == {}
    consumer.close()
    expired = broker.call(lambda: broker.broker.fetch_purgatory.expired_count) - before
    # ~2 s of polling with 400 ms waits: a handful of parked fetches, not a spin.
    assert 2 <= expired <= 8
