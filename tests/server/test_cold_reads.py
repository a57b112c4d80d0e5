"""Cold reads never stall the event loop: a consumer reads segments that are not in the
page cache (dropped with ``posix_fadvise(DONTNEED)`` after writing), the disk reads happen
on the io threads (the broker's process reads the bytes from disk, its event loop's thread
reads next to nothing), and the loop's stall p99 stays under 20 ms all the while. Real broker, real producer and consumer."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from confluent_kafka import Consumer, Producer, TopicPartition

from ..support.brokers import BrokerThread

MESSAGES = 256
VALUE = b"c" * (256 << 10)  # 64 MiB in all


def drop_from_page_cache(data: Path) -> int:
    """Write back and drop every segment file's pages; returns the bytes dropped."""
    dropped = 0
    for path in data.rglob("*.log"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # only clean pages can be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return dropped


def disk_read_bytes(thread_id: int | None = None) -> int:
    """Bytes this process (the broker runs in a thread of it), or one of its threads, read
    from the disk (Linux's per-task I/O accounting)."""
    where = "/proc/self/io" if thread_id is None else f"/proc/self/task/{thread_id}/io"
    for line in Path(where).read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    raise AssertionError(f"no read_bytes in {where}")


def test_cold_segments_are_read_without_stalling_the_loop(tmp_path: Path) -> None:
    b = BrokerThread(
        tmp_path / "data",
        {
            "admin.listeners": "http://127.0.0.1:0",
            "metrics.window.seconds": "2",
            "log.segment.bytes": str(8 << 20),
        },
    ).start()
    try:
        producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, "acks": "all"})
        for _ in range(MESSAGES):
            producer.produce("cold", value=VALUE, partition=0)
        assert producer.flush(60) == 0
        assert drop_from_page_cache(tmp_path / "data") >= MESSAGES * len(VALUE)
        loop_thread = b.thread_id  # the thread that runs the broker's event loop
        read_before, loop_read_before = disk_read_bytes(), disk_read_bytes(loop_thread)

        consumer = Consumer(
            {"bootstrap.servers": b.bootstrap, "group.id": "cold", "fetch.max.bytes": 8 << 20}
        )
        consumer.assign([TopicPartition("cold", 0, 0)])
        got = 0
        while got < MESSAGES:
            msgs = consumer.consume(64, timeout=30)
            assert msgs, f"no messages after {got}"
            assert all(m.error() is None for m in msgs)
            got += len(msgs)
        with httpx.Client(base_url=b.admin_url, timeout=10) as http:
            loop = http.get("/v1/metrics").json()["event_loop"]
        consumer.close()

        # the data really came from the disk, and the loop never waited for it: over the
        # last second (the read) and over the window (2 s, the read's whole time)
        assert disk_read_bytes() - read_before >= MESSAGES * len(VALUE) // 2
        assert disk_read_bytes(loop_thread) - loop_read_before < 1 << 20  # io threads did
        assert loop["last_second"]["stall_p99_ms"] < 20, loop
        assert loop["stall_ms"]["p99"] < 20, loop
    finally:
        b.stop()
