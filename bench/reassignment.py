"""Partition reassignment drill: a partition holding ``--mb`` MB moves to other brokers
while a consumer reads it and a producer writes to it; nothing may be lost or repeated.

What it does, on one local ZooKeeper and three broker processes (``bench/replication.py``'s
``Cluster``: ``python -m trio_broker`` from this checkout, data dirs under ``--data-dir``,
by default ``/dev/shm``):

1. creates a one-partition topic on brokers [a, b] (a leads) and writes ``--mb`` MB (100)
   of numbered ``--size`` (1 KiB) messages with one confluent-kafka producer (acks=all,
   idempotence on); then a paced producer goes on at ``--rate`` msg/s (1000) and a
   consumer starts reading the partition from offset 0;
2. asks for the move to [b, c] (AlterPartitionReassignments through kafka-python's admin
   client: confluent-kafka has no such call) and measures, from the request: when broker
   c is in the ISR (the copy of the whole log), and when the reassignment is complete
   (ListPartitionReassignments empty, the assignment [b, c], broker a's partition
   directory deleted);
3. lets the producer run ``--after-seconds`` (3) more against the new leader, stops it,
   waits for the consumer to reach the end, stops broker a (it holds nothing now) and
   reads the partition again from offset 0 from the new replicas alone.

Checked: every acknowledged message was read exactly once, in order, by the consumer that
read across the move, and is in the moved partition at the offset its acknowledgement gave
(counts: acknowledged, read, duplicates, missing, offsets that differ). Printed: the move's
times, the copy rate (MB moved / time until c was in sync) and the check.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/reassignment.py              # 100 MB: about a minute
    .venv/bin/python bench/reassignment.py --mb 20      # quicker

Every load stops by itself: the message count, the producer's rate and time, and every
wait are bounded.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import default_data_dir, header, log, table, wait_quiet, watermarks, write_json
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP
from replication import Check, Cluster, PacedProducer, _producer, check, read_back, until

TITLE = "reassignment: a partition moves to other brokers while it is read and written"
TOPIC = "bench-reassign"
FILL_NUMBERS = 10**11  # the fill's messages are numbered from here, the paced producer's from 0


def fill(cluster: Cluster, mb: float, size: int) -> tuple[PacedProducer, float]:
    """Write ``mb`` MB of numbered messages; a PacedProducer-shaped record of them (its
    ``acked`` filled) and the seconds it took."""
    record = PacedProducer(cluster.bootstrap(), TOPIC, size, 1, 1)  # its lists only
    producer = _producer(cluster.bootstrap(), 5)
    pad = os.urandom(max(0, size - 12))
    count = int(mb * 1_000_000 / size)
    t0 = time.perf_counter()
    for seq in range(count):
        while True:
            try:
                value = b"%012d" % (FILL_NUMBERS + seq) + pad
                producer.produce(TOPIC, value, on_delivery=record._delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(300)
    record.sent, record.unflushed = count, left
    return record, time.perf_counter() - t0


class Reader:
    """A consumer thread reading the partition from offset 0 until told the end."""

    def __init__(self, bootstrap: str) -> None:
        self.got: list[tuple[int, int]] = []
        self.end: int | None = None
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-reassign-reader",
                "enable.auto.commit": False,
            }
        )
        self._thread = threading.Thread(target=self._run, name="reader", daemon=True)

    def _run(self) -> None:
        self._consumer.assign([TP(TOPIC, 0, 0)])
        deadline = time.perf_counter() + 600
        while time.perf_counter() < deadline:
            if self.end is not None and self.got and self.got[-1][1] >= self.end - 1:
                break
            for m in self._consumer.consume(1000, 0.2):
                offset = m.offset()
                if m.error() is None and offset is not None:
                    self.got.append((int((m.value() or b"")[:12]), offset))
        self._consumer.close()

    def start(self) -> Reader:
        self._thread.start()
        return self

    def finish(self, end: int, timeout: float) -> None:
        self.end = end
        self._thread.join(timeout)


def in_order(got: list[tuple[int, int]]) -> bool:
    return all(a[1] < b[1] for a, b in itertools.pairwise(got))


def drill(cluster: Cluster, args: argparse.Namespace) -> dict[str, Any]:
    controller = cluster.controller()
    c = max(i for i in cluster.brokers if i != controller)
    a, b = sorted(i for i in cluster.brokers if i != c)
    cluster.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[a, b]])])
    until(
        "the topic's replicas in sync",
        lambda: len((cluster.state(TOPIC) or {"isr": []})["isr"]) == 2,
        30,
    )
    busy = wait_quiet(args.wait_quiet)
    log(f"writing {args.mb:g} MB to {TOPIC} on brokers {[a, b]}")
    filled, fill_s = fill(cluster, args.mb, args.size)
    paced = PacedProducer(cluster.bootstrap(), TOPIC, args.size, args.rate, 600)
    paced.start()
    reader = Reader(cluster.bootstrap()).start()

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), request_timeout_ms=30000)
    assert admin.list_partition_reassignments() == {}
    log(f"moving {TOPIC}-0 from {[a, b]} to {[b, c]}")
    t0 = time.perf_counter()
    accepted = admin.alter_partition_reassignments({KTP(TOPIC, 0): [b, c]})
    if accepted != {KTP(TOPIC, 0): None}:
        raise RuntimeError(f"reassignment refused: {accepted}")
    until(
        f"broker {c} in the ISR",
        lambda: c in (cluster.state(TOPIC) or {"isr": []})["isr"],
        args.move_timeout,
    )
    in_sync = time.perf_counter() - t0
    gone = cluster.brokers[a].log_dir
    until(
        "the reassignment complete",
        lambda: (
            admin.list_partition_reassignments() == {}
            and (cluster.state(TOPIC) or {"leader": -1})["leader"] in (b, c)
            and not any(gone.glob(f"**/{TOPIC}-0"))
        ),
        args.move_timeout,
    )
    done = time.perf_counter() - t0
    admin.close()
    time.sleep(args.after_seconds)  # the producer goes on against the new leader
    paced.stop()
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "bench-end"})
    _, high = watermarks(consumer, TP(TOPIC, 0))
    consumer.close()
    reader.finish(high, 120)
    cluster.brokers[a].stop()  # it holds nothing of the topic now
    moved = read_back(cluster.bootstrap(), TOPIC, 120)

    paced.acked = filled.acked + paced.acked
    paced.failed = filled.failed + paced.failed
    paced.sent += filled.sent
    across: Check = check(paced, reader.got)
    after: Check = check(paced, moved)
    return {
        "from": [a, b],
        "to": [b, c],
        "mb": args.mb,
        "background_busy": busy,
        "fill_s": fill_s,
        "in_sync_s": in_sync,
        "complete_s": done,
        "copy_mb_s": args.mb / in_sync if in_sync > 0 else float("nan"),
        "end_offset": high,
        "reader_in_order": in_order(reader.got),
        "reader": across.__dict__,
        "moved": after.__dict__,
        "counts": dict(Counter(seq for seq, _ in moved).most_common(1)),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=TITLE)
    p.add_argument(
        "--mb", type=float, default=100, help="MB in the partition before the move (100)"
    )
    p.add_argument("--size", type=int, default=1024, help="message size in bytes (1024)")
    p.add_argument("--rate", type=float, default=1000, help="msg/s written during the move (1000)")
    p.add_argument("--after-seconds", type=float, default=3, help="writing after the move (3)")
    p.add_argument(
        "--move-timeout", type=float, default=300, help="most seconds for the move (300)"
    )
    p.add_argument("--session-timeout-ms", type=int, default=6000)
    p.add_argument(
        "--wait-quiet", type=float, default=30, help="most s waiting for a quiet machine"
    )
    p.add_argument("--data-dir", default=default_data_dir(), help="where the brokers' dirs go")
    p.add_argument("--json", help="also write the results here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(header(TITLE, {k: v for k, v in vars(args).items() if k != "json"}), flush=True)
    base = Path(tempfile.mkdtemp(prefix="trio-broker-bench-reassign-", dir=args.data_dir))
    cluster = Cluster(base, args.session_timeout_ms, [])
    try:
        cluster.start()
        result = drill(cluster, args)
    finally:
        cluster.stop()
    r, m = result["reader"], result["moved"]
    print()
    print(
        table(
            ["MB", "from", "to", "fill s", "c in sync s", "complete s", "copy MB/s"],
            [
                [
                    f"{result['mb']:g}",
                    result["from"],
                    result["to"],
                    f"{result['fill_s']:.1f}",
                    f"{result['in_sync_s']:.2f}",
                    f"{result['complete_s']:.2f}",
                    f"{result['copy_mb_s']:.0f}",
                ]
            ],
        )
    )
    print()
    print(
        table(
            [
                "read by",
                "acknowledged",
                "read",
                "missing",
                "duplicates",
                "offsets differ",
                "in order",
            ],
            [
                [
                    "the consumer across the move",
                    r["acknowledged"],
                    r["read"],
                    r["missing"],
                    r["duplicates"],
                    r["offset_mismatches"],
                    result["reader_in_order"],
                ],
                [
                    "a new consumer, old replica stopped",
                    m["acknowledged"],
                    m["read"],
                    m["missing"],
                    m["duplicates"],
                    m["offset_mismatches"],
                    "-",
                ],
            ],
        )
    )
    print(
        f"\nOther work on the machine before the fill: {result['background_busy']:.0%} of the CPUs"
    )
    write_json(args.json, TITLE, vars(args), result)
    bad = r["missing"] or r["duplicates"] or m["missing"] or m["duplicates"] or m["failed"]
    bad = bad or r["offset_mismatches"] or not result["reader_in_order"]
    if bad:
        print("PROBLEM: something acknowledged was lost, repeated or moved", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
