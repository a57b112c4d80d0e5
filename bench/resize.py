"""Throughput and delivery latency through live resizes of the io and network pools.

What is measured: a steady confluent-kafka produce load (``--producers`` producers, acks=1,
1 KiB messages, each paced to ``--rate`` messages per second) against one broker process,
while the admin API resizes the pools through a sequence (default io 8 -> 2 -> 16 -> 8
and network 3 -> 1 -> 4 -> 3). For each phase: the pool sizes, messages and MB per
second delivered, p50/p99 delivery latency (from the delivery callbacks), how long the
resize calls took, and any delivery error (there must be none: a resize drops nothing).

Run: ``.venv/bin/python bench/resize.py [--phase-seconds 5] [--rate 20000]``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from functools import partial
from typing import Any

from _common import (
    BrokerProcess,
    command_line,
    default_data_dir,
    header,
    http,
    log,
    percentile,
    table,
    wait_quiet,
    write_json,
)
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

SEQUENCE = [(8, 3), (2, 1), (16, 4), (8, 3)]
TOPIC = "resize"


class Load:
    def __init__(self, bootstrap: str, producers: int, rate: int) -> None:
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.delivered = 0
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._run, args=(bootstrap, rate), daemon=True)
            for _ in range(producers)
        ]

    def _run(self, bootstrap: str, rate: int) -> None:
        p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 2})
        value = b"x" * 1024

        def done(err: Any, msg: Any, *, sent: float) -> None:
            with self.lock:
                if err is not None:
                    self.errors.append(str(err))
                else:
                    self.delivered += 1
                    self.latencies.append(time.perf_counter() - sent)

        interval = 1.0 / rate
        next_at = time.perf_counter()
        while not self.stop.is_set():
            now = time.perf_counter()
            if now < next_at:
                p.poll(min(next_at - now, 0.01))
                continue
            sent = time.perf_counter()
            p.produce(TOPIC, value=value, on_delivery=partial(done, sent=sent))
            next_at += interval
            p.poll(0)
        p.flush(30)

    def take(self) -> tuple[int, list[float], list[str]]:
        with self.lock:
            out = (self.delivered, self.latencies, self.errors)
            self.delivered, self.latencies, self.errors = 0, [], []
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phase-seconds", type=float, default=5.0, help="seconds per phase")
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--rate", type=int, default=5000, help="messages/s per producer")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        help="seconds to wait for a quiet machine first (0: don't)",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    options = vars(args)
    if args.wait_quiet:
        wait_quiet(args.wait_quiet)
    print(header("Throughput and latency through live pool resizes", options))
    overrides = ["admin.listeners=http://127.0.0.1:0", "num.io.threads=8", "num.network.threads=3"]
    rows, results = [], []
    with BrokerProcess(overrides, base_dir=args.data_dir or default_data_dir()) as broker:
        admin_url = broker.admin_url
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(10)
        load = Load(broker.bootstrap, args.producers, args.rate)
        for t in load.threads:
            t.start()
        time.sleep(1.0)  # the producers connect and settle
        load.take()
        for io, network in SEQUENCE:
            began = time.perf_counter()
            http("PUT", f"{admin_url}/v1/pools/io", {"size": io})
            http("PUT", f"{admin_url}/v1/pools/network/PLAINTEXT", {"size": network})
            resize_ms = (time.perf_counter() - began) * 1000
            time.sleep(args.phase_seconds)  # the measured phase: wall time is the point
            delivered, latencies, errors = load.take()
            seconds = time.perf_counter() - began
            result = {
                "io": io,
                "network": network,
                "msg_per_s": delivered / seconds,
                "mb_per_s": delivered * 1024 / seconds / 1e6,
                "p50_ms": percentile(latencies, 50) * 1000 if latencies else float("nan"),
                "p99_ms": percentile(latencies, 99) * 1000 if latencies else float("nan"),
                "resize_ms": resize_ms,
                "errors": len(errors),
            }
            log(f"io={io} network={network}: {result}")
            results.append(result)
            rows.append(
                [
                    io,
                    network,
                    result["msg_per_s"],
                    result["mb_per_s"],
                    result["p50_ms"],
                    result["p99_ms"],
                    resize_ms,
                    len(errors),
                ]
            )
        load.stop.set()
        for t in load.threads:
            t.join(60)
    print(
        table(["io", "network", "msg/s", "MB/s", "p50 ms", "p99 ms", "resize ms", "errors"], rows)
    )
    print(f"\ncommand: {command_line()}")
    write_json(args.json, "resize", options, results)
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
