"""compression.type per topic and per broker, with real clients: every codec is accepted on
CreateTopics; a producer's batches in another codec are stored recompressed (the segment
files hold the topic's codec) with offsets, timestamps and headers kept, and consumers of
both libraries read them back; ListOffsets by timestamp finds the exact record inside
compressed batches of every codec."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from trio_broker.records import iter_batches, iter_records
from trio_broker.records.header import Compression

from ..support.brokers import BrokerThread

CODECS = ("uncompressed", "gzip", "snappy", "lz4", "zstd")
N = 200


def stored_codecs(data: Path, topic: str) -> set[Compression]:
    found = set()
    for segment in (data / f"{topic}-0").glob("*.log"):
        found |= {h.compression for h, _ in iter_batches(segment.read_bytes())}
    return found


def produce(bootstrap: str, topic: str, codec: str, t0: int, pad: bytes = b"") -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 50})
    for i in range(N):
        p.produce(
            topic,
            b"value-%d" % i + pad,
            key=b"k%d" % i,
            timestamp=t0 + i,
            headers=[("i", b"%d" % i)],
        )
    assert p.flush(30) == 0


def test_every_codec_is_accepted_and_a_topic_recompresses_other_codecs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = BrokerThread(data, {}).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        futures = admin.create_topics(
            [
                NewTopic(f"c-{c}", 1, 1, config={"compression.type": c})
                for c in (*CODECS, "producer")
            ]
        )
        for f in futures.values():
            f.result(10)
        res = ConfigResource(ConfigResource.Type.TOPIC, "c-lz4")
        assert admin.describe_configs([res])[res].result(10)["compression.type"].value == "lz4"

        produce(b.bootstrap, "c-lz4", "zstd", 1_000)  # zstd in, lz4 stored
        produce(b.bootstrap, "c-uncompressed", "snappy", 1_000)
        # kept as sent; librdkafka sends a batch that zstd would not shrink uncompressed (a
        # batch of one short record, on a busy machine), so every record is compressible
        produce(b.bootstrap, "c-producer", "zstd", 1_000, pad=b"z" * 200)
        assert stored_codecs(data, "c-lz4") == {Compression.LZ4}
        assert stored_codecs(data, "c-uncompressed") == {Compression.NONE}
        assert stored_codecs(data, "c-producer") == {Compression.ZSTD}
        records = [
            r
            for seg in sorted((data / "c-lz4-0").glob("*.log"))
            for _h, batch in iter_batches(seg.read_bytes())
            for r in iter_records(batch)
        ]
        assert [(r.offset, r.timestamp_ms, r.key) for r in records] == [
            (i, 1_000 + i, b"k%d" % i) for i in range(N)
        ]
        assert list(records[7].headers) == [("i", b"7")]

        # Both client libraries read the recompressed batches back.
        c = Consumer(
            {"bootstrap.servers": b.bootstrap, "group.id": "x", "enable.auto.commit": False}
        )
        c.assign([TopicPartition("c-lz4", 0, 0)])
        got = []
        while len(got) < N:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m.value())
        c.close()
        assert got == [b"value-%d" % i for i in range(N)]
        k = KafkaConsumer(bootstrap_servers=b.bootstrap, consumer_timeout_ms=10_000)
        k.assign([KTopicPartition("c-lz4", 0)])
        k.seek_to_beginning()
        values = [m.value for _, m in zip(range(N), k, strict=False)]
        k.close()
        assert values == [b"value-%d" % i for i in range(N)]
    finally:
        b.stop()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_offsets_for_times_finds_the_record_inside_a_compressed_batch(
    tmp_path: Path, codec: str
) -> None:
    b = BrokerThread(tmp_path / "data", {}).start()
    try:
        produce(b.bootstrap, "times", codec, 10_000)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "t"})
        try:
            (found,) = c.offsets_for_times([TopicPartition("times", 0, 10_137)], timeout=10)
        finally:
            c.close()
        assert found.offset == 137
    finally:
        b.stop()


def test_a_broker_wide_compression_type_change_reaches_existing_topics(tmp_path: Path) -> None:
    data = tmp_path / "data"
    b = BrokerThread(data, {"admin.listeners": "http://127.0.0.1:0"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("late", 1, 1)])["late"].result(10)
        produce(b.bootstrap, "late", "zstd", 1_000)  # kept as sent: producer
        r = httpx.put(
            f"{b.admin_url}/v1/config", json={"settings": {"compression.type": "lz4"}}, timeout=10
        )
        assert r.is_success, r.text
        produce(b.bootstrap, "late", "zstd", 2_000)  # the running topic now recompresses
        assert stored_codecs(data, "late") == {Compression.ZSTD, Compression.LZ4}
    finally:
        b.stop()
