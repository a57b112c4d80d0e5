"""A compacted topic under steady updates keeps a bounded number of segment files.

What it measures: one broker (``bench/_common.BrokerProcess``, its defaults but for the
options below), one compacted topic of one partition with ``segment.bytes`` 65536
(``--segment-bytes``), and one confluent-kafka producer sending ``--rate`` updates a
second (1,000) over ``--keys`` keys (100), each value ``--value-bytes`` bytes (64), for
``--minutes`` (60; ``--seconds`` for short runs). Every ``--sample`` seconds (1) it
counts the partition folder's ``.log`` files (segments) and the broker's open file
descriptors (``/proc/<pid>/fd``). It reports the segment count's maximum, median and last
value after the first ``--warmup`` seconds (30), the cleaner's passes (from the admin API's
``/v1/log-cleaner``), and at the end it reads the topic from the start and checks that
every key's value is the last one the producer was told was written, at its offset.

The cleaner looks for due logs every ``log.cleaner.backoff.ms`` when idle (Kafka's
default, 15 s, unless ``--backoff-ms``): segments that roll in between wait for the next
look, so the bound is about the segments rolled in one backoff plus the cleaned one and
the active one. There is no reference broker here: librdkafka's mock keeps no segment
files (it holds at most 5 MiB of a partition in memory), so the figure is absolute.

Run from the repository::

    .venv/bin/python bench/compaction_segments.py                 # 60 minutes
    .venv/bin/python bench/compaction_segments.py --seconds 120 --json out.json

Every load stops by itself: the run lasts the time asked, then the reading is bounded by
the high watermark.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from typing import Any

from _common import (
    BrokerProcess,
    default_data_dir,
    header,
    log,
    median,
    table,
    wait_quiet,
    write_json,
)

TOPIC = "compacted"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--seconds", type=float, help="run this long instead of --minutes")
    p.add_argument("--rate", type=int, default=1000, help="updates a second")
    p.add_argument("--keys", type=int, default=100)
    p.add_argument("--value-bytes", type=int, default=64)
    p.add_argument("--segment-bytes", type=int, default=65536)
    p.add_argument("--backoff-ms", type=int, help="log.cleaner.backoff.ms (Kafka's 15000)")
    p.add_argument("--sample", type=float, default=1.0, help="seconds between readings")
    p.add_argument("--warmup", type=float, default=30.0, help="seconds not in the figures")
    p.add_argument("--data-dir", default=default_data_dir())
    p.add_argument("--wait-quiet", type=float, default=30.0)
    p.add_argument("--json", help="write the results here")
    return p.parse_args(argv)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cleaner_passes(admin_url: str) -> int:
    with urllib.request.urlopen(f"{admin_url}/v1/log-cleaner", timeout=10) as resp:
        doc = json.loads(resp.read())
    return int(doc.get("partitions", {}).get(f"{TOPIC}-0", {}).get("passes", 0))


def read_back(bootstrap: str) -> dict[bytes, tuple[int, bytes]]:
    """Each key's last record in the topic, from offset 0 to the high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    )
    try:
        _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        c.assign([TopicPartition(TOPIC, 0, 0)])
        seen: dict[bytes, tuple[int, bytes]] = {}
        last = -1
        deadline = time.monotonic() + 120
        while last < high - 1 and time.monotonic() < deadline:
            for m in c.consume(1000, 1.0):
                if m.error() is not None:
                    raise RuntimeError(str(m.error()))
                seen[m.key()] = (m.offset(), m.value())
                last = m.offset()
        return seen
    finally:
        c.close()


def run(args: argparse.Namespace) -> dict[str, Any]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    duration = args.seconds if args.seconds is not None else args.minutes * 60
    overrides = ["admin.listeners=http://127.0.0.1:0"]
    if args.backoff_ms is not None:
        overrides.append(f"log.cleaner.backoff.ms={args.backoff_ms}")
    with BrokerProcess(overrides, base_dir=args.data_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        config = {"cleanup.policy": "compact", "segment.bytes": str(args.segment_bytes)}
        admin.create_topics([NewTopic(TOPIC, 1, 1, config=config)])[TOPIC].result(30)
        folder = broker.log_dir / f"{TOPIC}-0"
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": "all"})
        told: dict[bytes, tuple[int, bytes]] = {}
        errors: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                told[msg.key()] = (msg.offset(), msg.value())

        samples: list[dict[str, float]] = []
        began = time.monotonic()
        next_sample = began
        sent = 0
        tick = 0.01
        padding = b"v" * max(0, args.value_bytes - 12)
        while (now := time.monotonic()) - began < duration:
            due = int((now - began) * args.rate)
            while sent < due:
                key = b"key-%04d" % (sent % args.keys)
                producer.produce(TOPIC, b"%012d" % sent + padding, key, on_delivery=delivered)
                sent += 1
            producer.poll(0)
            if now >= next_sample:
                segments = len(list(folder.glob("*.log")))
                samples.append(
                    {"t": now - began, "segments": segments, "fds": open_fds(broker.pid)}
                )
                next_sample += args.sample
            time.sleep(max(0.0, tick - (time.monotonic() - now)))
        producer.flush(60)
        elapsed = time.monotonic() - began
        passes = cleaner_passes(broker.admin_url)
        final_segments = len(list(folder.glob("*.log")))
        got = read_back(broker.bootstrap)
    lost = sorted(k.decode() for k, v in told.items() if got.get(k) != v)
    measured = [s for s in samples if s["t"] >= min(args.warmup, duration / 2)]
    return {
        "duration_s": elapsed,
        "updates": sent,
        "updates_per_s": sent / elapsed,
        "delivery_errors": len(errors),
        "cleaner_passes": passes,
        "segments_max": max((s["segments"] for s in measured), default=float("nan")),
        "segments_median": median(s["segments"] for s in measured),
        "segments_final": final_segments,
        "fds_max": max((s["fds"] for s in measured), default=float("nan")),
        "keys_checked": len(told),
        "keys_wrong": lost,
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k not in ("json",)}
    print(header("compacted topic: segment files under steady updates", options))
    busy = wait_quiet(args.wait_quiet)
    result = run(args)
    result["machine_busy_before"] = busy
    print(
        table(
            [
                "minutes",
                "updates/s",
                "cleaner passes",
                "segments max",
                "median",
                "at the end",
                "fds max",
                "keys wrong",
            ],
            [
                [
                    result["duration_s"] / 60,
                    result["updates_per_s"],
                    result["cleaner_passes"],
                    result["segments_max"],
                    result["segments_median"],
                    result["segments_final"],
                    result["fds_max"],
                    len(result["keys_wrong"]),
                ]
            ],
        )
    )
    write_json(args.json, "compaction_segments", options, result)
    if result["keys_wrong"] or result["delivery_errors"]:
        log(f"keys whose latest value is wrong: {result['keys_wrong'][:10]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
