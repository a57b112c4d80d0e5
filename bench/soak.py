"""Soak: a mixed load for a bounded time, then nothing lost or duplicated, RSS and fds flat.

What runs against one broker process (its RSS and open descriptors are its own), for
``--duration`` seconds (default 10 minutes):
- ``--producers`` idempotent confluent-kafka producers, acks=all, each message unique;
- a consumer group of ``--consumers`` members, committing what they processed (on revoke
  and every second); one member leaves and a new one joins every ``--member-interval`` s;
- admin API resizes of the io and network pools every ``--resize-interval`` s;
- admin API client quota changes every ``--quota-interval`` s (a producer_byte_rate that
  throttles one producer, then none);
- connection churn: ``--churn`` connections a second open, ask ApiVersions and Metadata,
  and close.
Every ``--sample-interval`` s the broker's RSS (``/proc/<pid>/status``) and open file
descriptors (``/proc/<pid>/fd``) are read.

Then the checks: every acknowledged message is in the log at the offset its
acknowledgement gave, no value is in the log twice, every batch's CRC is right (the log is
read back from offset 0 with ``check.crcs``), the group consumed every acknowledged message
(messages consumed again after a rebalance are counted and shown), and RSS and fds were
flat: the second half's median RSS within ``--rss-tolerance`` of the first half's (the
first ``--warmup`` s left out), and the second half's most fds no more than the first
half's plus the churn's own. RSS is shown split too: anonymous (the heap) and file-backed
(mapped offset and time indexes, which grow with the data, slowly). The exit status is 0
only if every check passed.

Run: ``.venv/bin/python bench/soak.py [--duration 600] [--json soak.json]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections import Counter
from typing import Any

from _common import (
    BrokerProcess,
    default_data_dir,
    fmt,
    header,
    http,
    log,
    rss_bytes,
    table,
    wait_quiet,
    watermarks,
    write_json,
)
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.tools.client import WireClient

TOPIC = "soak"
GROUP = "soak-group"
IO_SIZES = [8, 2, 16, 4]
NETWORK_SIZES = [3, 1, 4, 2]


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_split(pid: int) -> tuple[int, int]:
    """(anonymous, file-backed) resident bytes: the heap, and mapped files such as the
    offset indexes (which grow with the data)."""
    parts = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line.split(":")[0]] = int(line.split()[1]) * 1024
    return parts.get("RssAnon", 0), parts.get("RssFile", 0)


class Soak:
    """The load's threads and what they saw; ``stop`` ends them all."""

    def __init__(self, args: argparse.Namespace, bootstrap: str, admin_url: str) -> None:
        self.args = args
        self.bootstrap = bootstrap
        self.admin_url = admin_url
        self.stop = threading.Event()
        self.stop_producing = threading.Event()
        self.lock = threading.Lock()
        self.acked: dict[bytes, tuple[int, int]] = {}  # value -> (partition, offset)
        self.produce_errors: Counter[str] = Counter()
        self.consumed: Counter[bytes] = Counter()
        self.consumer_errors: Counter[str] = Counter()
        self.events: Counter[str] = Counter()
        self.failures: list[str] = []
        self.members = 0

    # ------------------------------------------------------------------ producers

    def produce(self, n: int) -> None:
        client_id = f"soak-producer-{n}"
        p = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "client.id": client_id,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 300000,
            }
        )

        def done(err: Any, msg: Any) -> None:
            with self.lock:
                if err is not None:
                    self.produce_errors[err.name()] += 1
                else:
                    self.acked[msg.value()] = (msg.partition(), msg.offset())

        interval = 1.0 / self.args.rate
        next_at = time.monotonic()
        seq = 0
        pad = b"." * max(0, self.args.message_bytes - 24)
        while not self.stop_producing.is_set():
            now = time.monotonic()
            if now < next_at:
                p.poll(min(next_at - now, 0.05))
                continue
            try:
                p.produce(TOPIC, value=b"p%d-%012d|" % (n, seq) + pad, on_delivery=done)
                seq += 1
                next_at += interval
            except BufferError:  # throttled by a quota: the local queue is full, wait
                p.poll(0.1)
            p.poll(0)
        left = p.flush(120)
        del p  # destroyed now, not reconnecting to a stopped broker later
        if left:
            with self.lock:
                self.failures.append(f"{client_id}: {left} messages never acknowledged")

    # ------------------------------------------------------------------ consumers

    def consume(self, member: int, leave: threading.Event) -> None:
        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": GROUP,
                "client.id": f"soak-consumer-{member}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "check.crcs": True,
            }
        )
        pending: dict[int, int] = {}  # partition -> next offset to commit

        def commit() -> None:
            if pending:
                offsets = [TopicPartition(TOPIC, p, o) for p, o in pending.items()]
                try:
                    c.commit(offsets=offsets, asynchronous=False)
                    pending.clear()
                except Exception as exc:  # counted: a commit during a rebalance may fail
                    with self.lock:
                        self.consumer_errors[f"commit: {exc}"[:80]] += 1

        def on_revoke(consumer: Any, partitions: Any) -> None:
            commit()

        c.subscribe([TOPIC], on_revoke=on_revoke)
        last_commit = time.monotonic()
        while not self.stop.is_set() and not leave.is_set():
            m = c.poll(0.2)
            if m is not None:
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        with self.lock:
                            self.consumer_errors[m.error().name()] += 1
                else:
                    with self.lock:
                        self.consumed[m.value()] += 1
                    pending[m.partition()] = m.offset() + 1
            if time.monotonic() - last_commit >= 1.0:
                commit()
                last_commit = time.monotonic()
        commit()
        c.close()

    def group(self) -> None:
        """Keep ``--consumers`` members; replace one every ``--member-interval`` s."""
        members: list[tuple[threading.Thread, threading.Event]] = []

        def join() -> None:
            leave = threading.Event()
            t = threading.Thread(target=self.consume, args=(self.members, leave), daemon=True)
            self.members += 1
            t.start()
            members.append((t, leave))

        for _ in range(self.args.consumers):
            join()
        while not self.stop.wait(self.args.member_interval):
            t, leave = members.pop(0)
            leave.set()
            t.join(60)
            join()
            self.events["member_replaced"] += 1
        for t, _ in members:
            t.join(60)

    # ------------------------------------------------------------- control changes

    def resizes(self) -> None:
        i = 0
        while not self.stop.wait(self.args.resize_interval):
            i += 1
            io, network = IO_SIZES[i % len(IO_SIZES)], NETWORK_SIZES[i % len(NETWORK_SIZES)]
            try:
                http("PUT", f"{self.admin_url}/v1/pools/io", {"size": io})
                http("PUT", f"{self.admin_url}/v1/pools/network/PLAINTEXT", {"size": network})
                self.events["resize"] += 1
            except Exception as exc:
                self.failures.append(f"resize to io={io} network={network}: {exc}")

    def quotas(self) -> None:
        url = f"{self.admin_url}/v1/quotas/clients/soak-producer-0"
        # Half the producer's own rate: it is throttled while the quota stands.
        throttle = max(1000, self.args.rate * self.args.message_bytes // 2)
        on = False
        while not self.stop.wait(self.args.quota_interval):
            try:
                if on:
                    http("DELETE", url)
                else:
                    http("PUT", url, {"producer_byte_rate": throttle})
                on = not on
                self.events["quota_change"] += 1
            except Exception as exc:
                self.failures.append(f"quota change: {exc}")
        if on:
            http("DELETE", url)

    def churn(self) -> None:
        interval = 1.0 / self.args.churn
        next_at = time.monotonic()
        while not self.stop_producing.is_set():
            delay = next_at - time.monotonic()
            if delay > 0 and self.stop_producing.wait(delay):
                break
            next_at += interval
            try:
                with WireClient(self.bootstrap, client_id="soak-churn") as c:
                    c.request(ApiVersionsRequest(), 3)
                    c.request(MetadataRequest(topics=None), 9)
                self.events["churn_connections"] += 1
            except Exception as exc:
                with self.lock:
                    self.events["churn_errors"] += 1
                    if self.events["churn_errors"] <= 3:
                        log(f"churn connection failed: {exc}")


def high_watermarks(bootstrap: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-watermarks"})
    try:
        return {p: watermarks(c, TopicPartition(TOPIC, p))[1] for p in range(partitions)}
    finally:
        c.close()


def committed(bootstrap: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        tps = c.committed([TopicPartition(TOPIC, p) for p in range(partitions)], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def read_log(bootstrap: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """Everything in the topic from offset 0, CRCs checked by the client."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "soak-checker",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "check.crcs": True,
        }
    )
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    at_eof: set[int] = set()
    while len(at_eof) < partitions:
        m = c.poll(10)
        if m is None:
            raise RuntimeError("reading the log back stalled")
        if m.error() is not None:
            if m.error().code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(f"reading the log back: {m.error()}")
            at_eof.add(m.partition())
            continue
        got[m.partition()].append((m.offset(), m.value()))
    c.close()
    return got


Sample = tuple[float, int, int, int, int]  # seconds, RSS, fds, RSS anonymous, RSS file


def halves(samples: list[Sample], warmup: float) -> tuple[list[Any], list[Any]]:
    """First half (after the warm-up) and second half of the samples, by time."""
    if not samples:
        return [], []
    end = samples[-1][0]
    mid = end / 2
    first = [s for s in samples if min(warmup, mid / 2) <= s[0] < mid]
    second = [s for s in samples if s[0] >= mid]
    return first, second


def describe(rows: list[Sample]) -> dict[str, float]:
    rss = [r[1] / 2**20 for r in rows] or [float("nan")]
    fds = [r[2] for r in rows] or [0]
    anon = [r[3] / 2**20 for r in rows] or [float("nan")]
    mapped = [r[4] / 2**20 for r in rows] or [float("nan")]
    return {
        "samples": len(rows),
        "rss_mb_min": min(rss),
        "rss_mb_median": statistics.median(rss),
        "rss_mb_max": max(rss),
        "fds_min": min(fds),
        "fds_median": statistics.median(fds),
        "fds_max": max(fds),
        "rss_anon_mb_median": statistics.median(anon),
        "rss_file_mb_median": statistics.median(mapped),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load")
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--rate", type=int, default=500, help="messages/s per producer")
    parser.add_argument("--message-bytes", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--consumers", type=int, default=3, help="members of the group")
    parser.add_argument("--member-interval", type=float, default=60.0)
    parser.add_argument("--resize-interval", type=float, default=20.0)
    parser.add_argument("--quota-interval", type=float, default=15.0)
    parser.add_argument("--churn", type=float, default=20.0, help="connections a second")
    parser.add_argument("--sample-interval", type=float, default=2.0)
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds not compared")
    parser.add_argument("--rss-tolerance", type=float, default=0.10)
    parser.add_argument("--fd-slack", type=int, default=16, help="fds the churn may hold")
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
    print(header("Soak: mixed load, then loss, duplicates, memory and descriptors", options))
    overrides = ["admin.listeners=http://127.0.0.1:0", "num.io.threads=8", "num.network.threads=3"]
    with BrokerProcess(overrides, base_dir=args.data_dir or default_data_dir()) as broker:
        admin_url = broker.admin_url
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result(10)
        del admin  # its client would otherwise reconnect to the stopped broker at the end
        soak = Soak(args, broker.bootstrap, admin_url)
        threads = [
            threading.Thread(target=soak.produce, args=(n,), daemon=True)
            for n in range(args.producers)
        ]
        threads += [
            threading.Thread(target=fn, daemon=True)
            for fn in (soak.group, soak.resizes, soak.quotas, soak.churn)
        ]
        began = time.monotonic()
        for t in threads:
            t.start()
        samples: list[Sample] = []
        next_report = began + max(10.0, args.duration / 10)
        while (now := time.monotonic()) - began < args.duration:
            anon, mapped = rss_split(broker.pid)
            samples.append((now - began, rss_bytes(broker.pid), open_fds(broker.pid), anon, mapped))
            if now >= next_report:
                with soak.lock:
                    acked, consumed = len(soak.acked), sum(soak.consumed.values())
                log(
                    f"{now - began:.0f} s: acked {acked:,} consumed {consumed:,} "
                    f"rss {samples[-1][1] / 2**20:.1f} MB fds {samples[-1][2]}"
                )
                next_report += max(10.0, args.duration / 10)
            time.sleep(min(args.sample_interval, max(0.0, args.duration - (now - began))))
        load_seconds = time.monotonic() - began
        log("load done: stopping producers and churn, letting the group catch up")
        soak.stop_producing.set()
        for t in threads[: args.producers]:
            t.join(180)
        ends = high_watermarks(broker.bootstrap, args.partitions)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = committed(broker.bootstrap, args.partitions)
            if all(done.get(p, -1) >= end for p, end in ends.items()):
                break
            time.sleep(1.0)
        else:
            soak.failures.append(f"the group did not catch up: committed {done}, ends {ends}")
        soak.stop.set()
        for t in threads[args.producers :]:
            t.join(120)
        stored = read_log(broker.bootstrap, args.partitions)
        rss_end, fds_end = rss_bytes(broker.pid), open_fds(broker.pid)

    # ------------------------------------------------------------------ checks
    where: dict[bytes, list[tuple[int, int]]] = {}
    for partition, items in stored.items():
        for offset, value in items:
            where.setdefault(value, []).append((partition, offset))
    lost = [v for v, at in soak.acked.items() if at not in where.get(v, [])]
    duplicated_in_log = sum(1 for at in where.values() if len(at) > 1)
    not_consumed = [v for v in soak.acked if soak.consumed[v] == 0]
    consumed_again = sum(n - 1 for n in soak.consumed.values() if n > 1)
    first, second = halves(samples, args.warmup)
    a, b = describe(first), describe(second)
    rss_growth = b["rss_mb_median"] / a["rss_mb_median"] - 1 if first and second else 0.0
    fd_growth = b["fds_max"] - a["fds_max"]
    checks = {
        "no acknowledged message lost": not lost,
        "no value twice in the log": duplicated_in_log == 0,
        "every acknowledged message consumed": not not_consumed,
        "no failure in the load": not soak.failures,
        f"RSS flat (median within {args.rss_tolerance:.0%})": rss_growth <= args.rss_tolerance,
        f"fds flat (max within +{args.fd_slack})": fd_growth <= args.fd_slack,
    }
    results = {
        "load_seconds": load_seconds,
        "acknowledged": len(soak.acked),
        "in_log": sum(len(v) for v in stored.values()),
        "consumed": sum(soak.consumed.values()),
        "consumed_again_after_rebalance": consumed_again,
        "lost": len(lost),
        "duplicated_in_log": duplicated_in_log,
        "not_consumed": len(not_consumed),
        "produce_errors": dict(soak.produce_errors),
        "consumer_errors": dict(soak.consumer_errors),
        "events": dict(soak.events),
        "failures": soak.failures,
        "first_half": a,
        "second_half": b,
        "rss_median_growth": rss_growth,
        "fds_max_growth": fd_growth,
        "rss_mb_at_end": rss_end / 2**20,
        "fds_at_end": fds_end,
        "checks": checks,
        "samples": samples,
    }
    print()
    print(
        table(
            ["acknowledged", "in log", "consumed", "consumed again", "lost", "dup in log"],
            [
                [
                    results["acknowledged"],
                    results["in_log"],
                    results["consumed"],
                    consumed_again,
                    len(lost),
                    duplicated_in_log,
                ]
            ],
        )
    )
    print()
    print(
        table(
            [
                "half",
                "samples",
                "RSS MB min",
                "median",
                "max",
                "fds min",
                "median",
                "max",
                "anon MB",
                "file MB",
            ],
            [
                ["first", *[a[k] for k in list(a)]],
                ["second", *[b[k] for k in list(b)]],
            ],
        )
    )
    print()
    events = ", ".join(f"{k} {fmt(v)}" for k, v in sorted(soak.events.items()))
    print(f"load: {load_seconds:.0f} s; {events}")
    if soak.produce_errors or soak.consumer_errors:
        print(f"errors: produce {dict(soak.produce_errors)} consume {dict(soak.consumer_errors)}")
    for failure in soak.failures:
        print(f"failure: {failure}")
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    write_json(args.json, "soak", options, results)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
