"""Data survives restarts; after kill -9, every acknowledged message is there."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ..support.brokers import BrokerProcess


def consume_all(
    bootstrap: str, topic: str, partitions: int, **config: object
) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of every partition, read from offset 0 to the end (``config``: the
    consumer's settings beside these)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "checker",
            "enable.auto.commit": False,
            "check.crcs": True,
            "enable.partition.eof": True,
            **config,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    at_eof: set[int] = set()
    while len(at_eof) < partitions:
        m = c.poll(10)
        assert m is not None, "consumer stalled"
        if m.error() is not None:
            assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
            at_eof.add(m.partition())
            continue
        got[m.partition()].append((m.offset(), m.value()))
    c.close()
    return got


def test_everything_is_there_after_a_restart(tmp_path: Path) -> None:
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", f"log.dirs={tmp_path}"]
    broker = BrokerProcess(tmp_path, overrides).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("keep", 2, 1)])["keep"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(3000):
        p.produce("keep", value=b"%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    assert broker.terminate() == 0

    again = BrokerProcess(tmp_path, overrides).start()
    got = consume_all(again.bootstrap, "keep", 2)
    for part in (0, 1):
        assert [o for o, _ in got[part]] == list(range(1500))
        assert [int(v) for _, v in got[part]] == list(range(part, 3000, 2))
    assert "recovering" not in "".join(again.log)  # a clean shutdown needs no scan
    assert again.terminate() == 0


def test_kill_9_under_acks_all_loses_no_acknowledged_message(tmp_path: Path) -> None:
    overrides = [
        "listeners=PLAINTEXT://127.0.0.1:0",
        f"log.dirs={tmp_path}",
        "log.flush.interval.messages=1",
    ]
    broker = BrokerProcess(tmp_path, overrides).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("crash", 3, 1)])["crash"].result(10)
    acked: dict[tuple[int, int], bytes] = {}

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    p = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "linger.ms": 1,
            "message.timeout.ms": 3000,
            "retries": 0,
        }
    )
    i = 0
    while len(acked) < 4000:  # kill while the load is running, not after it
        p.produce("crash", value=b"m%07d" % i, partition=i % 3, on_delivery=on_delivery)
        i += 1
        p.poll(0)
    broker.kill()
    p.flush(5)  # the rest fail: the broker is gone
    snapshot = dict(acked)

    again = BrokerProcess(tmp_path, overrides).start()
    assert "recovering" in "".join(again.log)  # no clean marker: the tail was scanned
    got = consume_all(again.bootstrap, "crash", 3)
    stored = {(part, o): v for part, items in got.items() for o, v in items}
    missing = [k for k in snapshot if stored.get(k) != snapshot[k]]
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:5]}"
    for items in got.values():
        assert [o for o, _ in items] == list(range(len(items)))  # contiguous, no holes

    # Offsets keep growing from where they were.
    ends = {part: len(items) for part, items in got.items()}
    p2 = Producer({"bootstrap.servers": again.bootstrap, "acks": "all"})
    after: list[tuple[int, int]] = []
    for part in range(3):
        p2.produce(
            "crash",
            value=b"after",
            partition=part,
            on_delivery=lambda err, msg: after.append((msg.partition(), msg.offset())),
        )
    assert p2.flush(10) == 0
    assert sorted(after) == [(part, ends[part]) for part in range(3)]
    assert again.terminate() == 0
