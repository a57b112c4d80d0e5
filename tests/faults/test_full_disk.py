"""A full disk: producers get KAFKA_STORAGE_ERROR, the broker stays up, and recovers.

The broker runs as its own process; its file size limit (RLIMIT_FSIZE, set from outside
with ``resource.prlimit``) makes the kernel refuse, with EFBIG, any write past a size
just above what partition 0's segment holds: to the broker that is a disk that is full
for that file. Python ignores SIGXFSZ, so the write fails instead of killing the process.
"""

from __future__ import annotations

import resource
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ..data.test_durability import consume_all
from ..support.brokers import BrokerProcess


def produce(bootstrap: str, partition: int, values: list[bytes]) -> list[tuple[int, int]]:
    """Produce and wait: (error code, offset) per message, in order."""
    results: list[tuple[int, int]] = []

    def done(err, msg) -> None:  # type: ignore[no-untyped-def]
        results.append((0, msg.offset()) if err is None else (err.code(), -1))

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,  # KAFKA_STORAGE_ERROR is retriable: see it, not the retries
            "linger.ms": 0,
            "message.timeout.ms": 10000,
        }
    )
    for v in values:
        p.produce("disk", value=v, partition=partition, on_delivery=done)
        p.flush(10)  # one batch each
    assert len(results) == len(values)
    return results


def high_watermark(bootstrap: str, partition: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw"})
    _, high = c.get_watermark_offsets(TopicPartition("disk", partition), timeout=10)
    c.close()
    return int(high)


def test_full_disk_gives_storage_errors_then_recovers(tmp_path: Path) -> None:
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", f"log.dirs={tmp_path}", "admin.listeners="]
    broker = BrokerProcess(tmp_path, overrides).start()
    assert broker.proc is not None
    pid = broker.proc.pid
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("disk", 2, 1)])["disk"].result(10)
        assert all(e == 0 for e, _ in produce(broker.bootstrap, 0, [b"a" * 100] * 20))
        segment = tmp_path / "disk-0" / f"{0:020d}.log"
        size = segment.stat().st_size

        unlimited = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (size + 300, unlimited[1]))
        # Each batch of ~1 KB would cross the limit: refused, one by one.
        refused = produce(broker.bootstrap, 0, [b"b" * 1000] * 5)
        assert refused == [(KafkaError.KAFKA_STORAGE_ERROR, -1)] * 5
        assert segment.stat().st_size == size  # no half batch left in the file
        assert high_watermark(broker.bootstrap, 0) == 20  # the log end did not move
        # The broker is up: the other partition's smaller file still takes writes, and
        # what partition 0 holds is still served.
        assert [o for _, o in produce(broker.bootstrap, 1, [b"c"] * 3)] == [0, 1, 2]
        assert broker.proc.poll() is None
        failures = [line for line in broker.log if "append to disk-0 failed" in line]
        assert len(failures) == 1 and "File too large" in failures[0], failures

        resource.prlimit(pid, resource.RLIMIT_FSIZE, unlimited)  # space again
        assert produce(broker.bootstrap, 0, [b"d" * 1000] * 2) == [(0, 20), (0, 21)]
        assert any("append to disk-0 works again" in line for line in broker.log)

        got = consume_all(broker.bootstrap, "disk", 2)  # with check.crcs on
        assert [v for _, v in got[0]] == [b"a" * 100] * 20 + [b"d" * 1000] * 2
        assert [o for o, _ in got[0]] == list(range(22))
        assert [v for _, v in got[1]] == [b"c"] * 3
    finally:
        assert broker.terminate() == 0

    # After a restart nothing needs cutting: no partial batch was ever left on disk.
    again = BrokerProcess(tmp_path, overrides).start()
    try:
        assert high_watermark(again.bootstrap, 0) == 22
        assert not any("truncat" in line for line in again.log), again.log
    finally:
        assert again.terminate() == 0
