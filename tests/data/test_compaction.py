"""Log compaction with real clients: confluent-kafka creates compacted topics, produces
keys many times and tombstones; the broker's cleaner keeps the last value per key across
segments and restarts, drops tombstones after delete.retention.ms, refuses records
without a key, and a cleanup.policy changed at run time takes effect at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from ..support.brokers import BrokerThread

SETTINGS = {"log.cleaner.backoff.ms": "20", "admin.listeners": "http://127.0.0.1:0"}
# Every batch in a segment of its own: many sealed segments to clean.
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1500",
}
KEYS = [b"k%d" % i for i in range(6)]
DEADLINE_S = 30


def wait_for(what: str, check: Callable[[], Any]) -> Any:
    """Poll ``check`` until it returns something true, within the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def produce(
    bootstrap: str, topic: str, pairs: list[tuple[bytes | None, bytes | None]]
) -> list[Any]:
    """Each record in a batch of its own; returns (offset, error) per record."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    out: list[Any] = []
    for key, value in pairs:
        p.produce(topic, value, key, on_delivery=lambda err, m: out.append((m.offset(), err)))
        p.flush(10)
    return out


def consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record from the beginning to the high watermark: (offset, key, value)."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + DEADLINE_S
        while not got or got[-1][0] < high - 1:
            assert time.monotonic() < deadline, f"consumed {got} of {high}"
            m = c.poll(1)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append((m.offset(), m.key(), m.value()))
        return got
    finally:
        c.close()


def cleaner(b: BrokerThread, topic: str) -> dict[str, Any]:
    assert b.broker is not None
    figures = b.call(b.broker.metrics_snapshot)["log_cleaner"]
    return figures["partitions"].get(f"{topic}-0", {})  # type: ignore[no-any-return]


def test_compacted_topic_keeps_the_last_value_per_key_across_segments_and_restarts(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    b = BrokerThread(data, SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("state", 1, 1, config=TOPIC_CONFIG)])["state"].result(10)
        res = ConfigResource(ConfigResource.Type.TOPIC, "state")
        assert admin.describe_configs([res])[res].result(10)["cleanup.policy"].value == "compact"

        pairs: list[tuple[bytes | None, bytes | None]] = [
            (k, b"%s-v%d" % (k, r)) for r in range(3) for k in KEYS
        ]
        pairs += [(KEYS[0], None), (KEYS[1], None)]  # tombstones
        pairs += [(b"last", b"active")]  # keeps the tombstones out of the active segment
        delivered = produce(b.bootstrap, "state", pairs)
        assert all(err is None for _, err in delivered)
        offsets = [o for o, _ in delivered]

        latest = {k: (offsets[i], k, v) for i, (k, v) in enumerate(pairs)}
        with_tombstones = sorted(latest.values())
        without = [r for r in with_tombstones if r[2] is not None]

        # The cleaner runs on its own: tombstones first stay, then go after the horizon.
        wait_for("a cleaning pass", lambda: cleaner(b, "state").get("passes", 0) >= 1)
        # Offsets are the ones the producer was told: never renumbered.
        wait_for(
            "the latest value per key",
            lambda: consume_all(b.bootstrap, "state") in (with_tombstones, without),
        )
        wait_for("tombstones removed", lambda: consume_all(b.bootstrap, "state") == without)
        # kafka-python reads the compacted log (offset gaps, emptied segments) too.
        k = KafkaConsumer(bootstrap_servers=b.bootstrap, consumer_timeout_ms=10_000)
        k.assign([KTopicPartition("state", 0)])
        k.seek_to_beginning()
        got = [(m.offset, m.key, m.value) for _, m in zip(range(len(without)), k, strict=False)]
        k.close()
        assert got == without
        figures = cleaner(b, "state")
        assert figures["bytes_cleaned"] > 0 and figures["last_run_ms"] is not None
        assert 0.0 <= figures["dirty_ratio"] <= 1.0
        # The admin API shows the same figures.
        served = httpx.get(f"{b.admin_url}/v1/log-cleaner", timeout=10).json()
        assert served["enabled"] is True and served["threads"] == 1
        assert served["partitions"]["state-0"]["passes"] >= figures["passes"]
        prometheus = httpx.get(f"{b.admin_url}/metrics", timeout=10).text
        assert 'kafka_log_cleaner_partition_dirty_ratio{partition="0",topic="state"}' in prometheus

        # __consumer_offsets is compacted too.
        offsets_res = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets")
        described = admin.describe_configs([offsets_res])[offsets_res].result(10)
        assert described["cleanup.policy"].value == "compact"
    finally:
        b.stop()

    b = BrokerThread(data, SETTINGS).start()
    try:
        assert consume_all(b.bootstrap, "state") == without
    finally:
        b.stop()


def test_records_without_a_key_are_refused_with_invalid_record(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("keyed", 1, 1, config={"cleanup.policy": "compact,delete"})])[
            "keyed"
        ].result(10)
        [(_, err)] = produce(b.bootstrap, "keyed", [(None, b"no key")])
        assert err is not None and err.code() == KafkaError.INVALID_RECORD
        [(offset, err)] = produce(b.bootstrap, "keyed", [(b"k", b"keyed")])
        assert err is None and offset == 0
    finally:
        b.stop()


def test_a_cleanup_policy_changed_at_run_time_takes_effect(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data", SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        plain = {k: v for k, v in TOPIC_CONFIG.items() if k != "cleanup.policy"}
        admin.create_topics([NewTopic("later", 1, 1, config=plain)])["later"].result(10)
        pairs: list[tuple[bytes | None, bytes | None]] = [(b"a", b"1"), (b"a", b"2"), (b"b", b"1")]
        produce(b.bootstrap, "later", pairs)
        assert len(consume_all(b.bootstrap, "later")) == 3
        assert cleaner(b, "later") == {}  # not compacted: the cleaner leaves it alone

        res = ConfigResource(ConfigResource.Type.TOPIC, "later")
        res.add_incremental_config(
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        )
        admin.incremental_alter_configs([res])[res].result(10)
        wait_for(
            "the first record to be compacted away",
            lambda: consume_all(b.bootstrap, "later") == [(1, b"a", b"2"), (2, b"b", b"1")],
        )

        # The cleaner's threads change at run time too (PUT /v1/config, as AlterConfigs).
        r = httpx.put(
            f"{b.admin_url}/v1/config", json={"settings": {"log.cleaner.threads": "2"}}, timeout=10
        )
        assert r.status_code == 200, r.text
        assert httpx.get(f"{b.admin_url}/v1/log-cleaner", timeout=10).json()["threads"] == 2
    finally:
        b.stop()


def test_consumer_offsets_are_compacted_and_replayed_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = {**SETTINGS, "offsets.topic.num.partitions": "1"}
    b = BrokerThread(data, settings).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("src", 1, 1)])["src"].result(10)
        res = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets")
        for key in ("segment.bytes", "min.cleanable.dirty.ratio"):
            res.add_incremental_config(
                ConfigEntry(key, TOPIC_CONFIG[key], incremental_operation=AlterConfigOpType.SET)
            )
        admin.incremental_alter_configs([res])[res].result(10)
        c = Consumer(
            {"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False}
        )
        for offset in range(1, 21):  # each commit a batch, each batch a segment
            c.commit(offsets=[TopicPartition("src", 0, offset)], asynchronous=False)
        c.close()
        figures = wait_for(
            "__consumer_offsets to be cleaned",
            lambda: (f := cleaner(b, "__consumer_offsets")).get("records_removed", 0) >= 18 and f,
        )
        assert figures["passes"] >= 1
    finally:
        b.stop()

    b = BrokerThread(data, settings).start()
    try:
        c = Consumer(
            {"bootstrap.servers": b.bootstrap, "group.id": "g", "enable.auto.commit": False}
        )
        [committed] = c.committed([TopicPartition("src", 0)], timeout=10)
        c.close()
        assert committed.offset == 20
    finally:
        b.stop()


def test_tombstones_with_a_horizon_and_empty_producer_batches_reach_clients(
    tmp_path: Path,
) -> None:
    b = BrokerThread(tmp_path / "data", SETTINGS).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        config = {**TOPIC_CONFIG, "delete.retention.ms": "3600000"}
        admin.create_topics([NewTopic("mixed", 1, 1, config=config)])["mixed"].result(10)
        idempotent = Producer(
            {"bootstrap.servers": b.bootstrap, "linger.ms": 0, "enable.idempotence": True}
        )
        acks: list[Any] = []
        idempotent.produce(
            "mixed", b"from-idempotent", b"a", on_delivery=lambda e, m: acks.append(e)
        )
        idempotent.flush(10)
        produce(b.bootstrap, "mixed", [(b"a", b"plain"), (b"gone", b"x"), (b"gone", None)])
        produce(b.bootstrap, "mixed", [(b"z", b"active")])
        expected = [(1, b"a", b"plain"), (3, b"gone", None), (4, b"z", b"active")]
        wait_for("a cleaning pass", lambda: consume_all(b.bootstrap, "mixed") == expected)

        # The idempotent producer's emptied batch keeps its sequence: it goes on.
        idempotent.produce("mixed", b"again", b"a", on_delivery=lambda e, m: acks.append(e))
        idempotent.flush(10)
        assert acks == [None, None]
        k = KafkaConsumer(bootstrap_servers=b.bootstrap, consumer_timeout_ms=10_000)
        k.assign([KTopicPartition("mixed", 0)])
        k.seek_to_beginning()
        got = [(m.offset, m.key, m.value, m.timestamp) for _, m in zip(range(4), k, strict=False)]
        k.close()
        assert [g[:3] for g in got] == [*expected, (5, b"a", b"again")]
        # The tombstone's batch carries its delete horizon; its record keeps its timestamp.
        assert abs(got[1][3] - time.time() * 1000) < 60_000
    finally:
        b.stop()


def test_a_compacted_topic_of_small_segments_under_steady_updates_keeps_few_files(
    tmp_path: Path,
) -> None:
    """bench/compaction_segments.py, shortened: 64 KiB segments, 1,000 updates a second
    over 100 keys for 12 s (about 15 segments' worth), the cleaner on Kafka's default
    backoff (15 s). Each roll wakes it and each pass makes the cleaned segments one, so
    the folder never holds more than a few segments; every key keeps its last value."""
    data = tmp_path / "data"
    b = BrokerThread(data).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        config = {"cleanup.policy": "compact", "segment.bytes": "65536"}
        admin.create_topics([NewTopic("changelog", 1, 1, config=config)])["changelog"].result(10)
        folder = data / "changelog-0"
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        told: dict[bytes, tuple[int, bytes]] = {}

        def delivered(err: Any, m: Any) -> None:
            assert err is None, err
            told[m.key()] = (m.offset(), m.value())

        counts: list[int] = []
        began = time.monotonic()
        sent = 0
        while (now := time.monotonic()) - began < 12:
            while sent < (now - began) * 1000:  # paced: 1,000 updates a second
                key = b"key-%03d" % (sent % 100)
                p.produce("changelog", b"%012d" % sent + b"v" * 52, key, on_delivery=delivered)
                sent += 1
            p.poll(0)
            counts.append(len(list(folder.glob("*.log"))))
            time.sleep(0.01)  # the load's pace, not a wait for a condition
        assert p.flush(30) == 0
        passes = cleaner(b, "changelog").get("passes", 0)
        # Well over ten segments were written; a few at a time remained (3 here when the
        # machine was busy; 16 without the grouping or without the wake).
        assert sent >= 11_000 and passes >= 5, (sent, passes)
        assert max(counts) <= 6, counts
        # Every key's latest value is the one the producer was told, at its offset.
        got = {k: (o, v) for o, k, v in consume_all(b.bootstrap, "changelog")}
        assert got == told
    finally:
        b.stop()
