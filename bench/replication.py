"""Replication in a ZooKeeper cluster: produce throughput at RF 1 vs RF 3, and failover time.

What it measures, in one run, on one local ZooKeeper (``trio_broker.tools.zookeeper``) and
three broker processes (``python -m trio_broker`` from this checkout, ``broker.id`` 0-2,
port-0 listeners, ``zookeeper.session.timeout.ms`` from ``--session-timeout-ms``, 4000;
data dirs under ``--data-dir``, by default ``/dev/shm``):

1. **Produce throughput**, ``--size`` (1 KiB) messages from one confluent-kafka producer
   (acks=all, idempotence on, linger.ms ``--linger-ms``, 5) into a fresh one-partition
   topic, (a) with replication factor 1 and (b) with replication factor 3 and
   min.insync.replicas=2, alternating a/b for ``--pairs`` (3) pairs; each run writes
   ``--mb`` MB (50), at most ``--max-seconds`` s (30). Per run: msg/s and MB/s (payload,
   1 MB = 10^6 B; from the first ``produce()`` after a one-message warm-up to the last
   delivery report), p50/p99 delivery latency (``Message.latency()``), and the CPU
   seconds of the three broker processes together (``/proc/<pid>/stat``). The ratio
   RF3/RF1 of MB/s per pair and its median.
2. **Failover time.** A producer sends continuously (acks=all, idempotent, paced at
   ``--rate`` msg/s, 2000, of ``--size`` bytes, each value numbered) to an RF 3 topic
   (min.insync.replicas=2). After ``--steady-seconds`` (5) the partition's leader (read
   from ZooKeeper's ``/brokers/topics/<t>/partitions/0/state``) is killed with SIGKILL;
   measured from the kill: when ZooKeeper's state names a new leader, when a surviving
   broker's Metadata names it, when the producer gets the acknowledgement of the first
   message it produced after the kill, and when a producer created once Metadata names
   the new leader gets its first one (the cluster's part, without the running client's
   retries and backoffs); and the **gap**, the longest time without any acknowledgement
   from 1 s before the kill to that first one (what an application sees). The killed
   broker is restarted on its data dir and the script waits until it is back in the ISR;
   ``--failovers`` (2) such kills, then one more by SIGTERM (a clean stop ends the
   ZooKeeper session at once, where after kill -9 the controller learns of the death only
   when the session expires: the session timeout is printed next to the figures). Then
   a consumer reads the partition from offset 0 to its end and every acknowledged message
   is checked to be there exactly once, at the offset its acknowledgement gave (counts:
   acknowledged, read, duplicates, missing).

Run from the repository (``scripts/test`` sets up ``.venv``; ZooKeeper is Debian's
``zookeeper`` package, which ``scripts/cluster`` installs)::

    .venv/bin/python bench/replication.py                  # defaults: about 3-4 minutes
    .venv/bin/python bench/replication.py --quick          # about 1 minute
    .venv/bin/python bench/replication.py --pairs 5 --mb 200 --json replication.json

Before each pair, and once before the failover producer starts (from then on the load is
the benchmark's own), the script waits up to ``--wait-quiet`` s for other work on the
machine to stop (under 10% of the CPUs busy) and records how busy it was.
Every load stops by itself: message counts, rates and every wait are bounded by the
options above. The brokers' stderr goes to ``--logs DIR`` when given, and to a kept
temporary directory (printed) when the run found a problem.
"""

from __future__ import annotations

import argparse
import bisect
import gc
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    BrokerProcess,
    cpu_seconds,
    default_data_dir,
    header,
    log,
    median,
    percentile,
    table,
    wait_quiet,
    watermarks,
    write_json,
)
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from trio_broker.tools.zookeeper import ZooKeeperServer

TITLE = "replication: produce at RF 1 vs RF 3, and leader failover, 3 brokers + ZooKeeper"
BROKERS = 3
_topic_ids = itertools.count()


# ------------------------------------------------------------------- the cluster


class Cluster:
    """One ZooKeeper and three brokers, each broker in its own directory under ``base``."""

    def __init__(self, base: Path, session_ms: int, overrides: list[str]) -> None:
        self.base = base
        self.session_ms = session_ms
        self.zookeeper = ZooKeeperServer(base / "zookeeper")
        self.overrides = overrides
        self.brokers: dict[int, BrokerProcess] = {}
        self.zk: KazooClient | None = None
        self._admin: AdminClient | None = None

    def start(self) -> Cluster:
        # ZooKeeper's AdminServer (Jetty, port 8080 by default) is not needed, and a second
        # ZooKeeper on the machine (a test run's) makes it exit at start-up: switched off
        # through the JVM's environment, which ZooKeeperServer's java inherits.
        flags = os.environ.get("JAVA_TOOL_OPTIONS", "")
        if "zookeeper.admin.enableServer" not in flags:
            os.environ["JAVA_TOOL_OPTIONS"] = f"{flags} -Dzookeeper.admin.enableServer=false"
        self.zookeeper.start()
        for i in range(BROKERS):
            settings = [
                f"broker.id={i}",
                "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                "control.plane.listener.name=CONTROLLER",
                f"zookeeper.connect={self.zookeeper.connect}",
                f"zookeeper.session.timeout.ms={self.session_ms}",
                *self.overrides,
            ]
            self.brokers[i] = BrokerProcess(settings, base_dir=self.base)
        for b in self.brokers.values():
            b.start()
        self.zk = KazooClient(hosts=self.zookeeper.connect)
        self.zk.start(30)
        until("every broker registered", lambda: len(self.registered()) == BROKERS, 60)
        return self

    def running(self, i: int) -> bool:
        proc = self.brokers[i].proc
        return proc is not None and proc.poll() is None

    def bootstrap(self, but: int | None = None) -> str:
        return ",".join(
            b.bootstrap for i, b in self.brokers.items() if self.running(i) and i != but
        )

    def pids(self) -> list[int]:
        return [b.pid for i, b in self.brokers.items() if self.running(i)]

    def cpu(self) -> float:
        """CPU seconds of the running brokers together."""
        return sum(cpu_seconds(pid) for pid in self.pids())

    def registered(self) -> list[str]:
        assert self.zk is not None
        children: list[str] = self.zk.get_children("/brokers/ids")
        return children

    def state(self, topic: str, partition: int = 0) -> dict[str, Any] | None:
        assert self.zk is not None
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not self.zk.exists(path):
            return None
        data: dict[str, Any] = json.loads(self.zk.get(path)[0])
        return data

    def controller(self) -> int:
        assert self.zk is not None
        if not self.zk.exists("/controller"):
            return -1
        return int(json.loads(self.zk.get("/controller")[0])["brokerid"])

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        return self._admin

    def create_topics(self, topics: list[NewTopic], timeout: float = 30) -> None:
        for f in self.admin().create_topics(topics).values():
            f.result(timeout)

    def create_topic(self, name: str, rf: int, config: dict[str, str] | None = None) -> None:
        self.create_topics([NewTopic(name, 1, rf, config=config or {})])
        until(
            f"{name} with its {rf} replicas in sync",
            lambda: (
                (s := self.state(name)) is not None and s["leader"] >= 0 and len(s["isr"]) == rf
            ),
            30,
        )

    def delete_topic(self, name: str) -> None:
        self.admin().delete_topics([name])[name].result(30)

    def restart(self, i: int) -> float:
        """Start broker ``i`` again on its data dir; seconds until it said it started."""
        t0 = time.perf_counter()
        self.brokers[i].start()
        self._admin = None  # its address changed (port 0)
        return time.perf_counter() - t0

    def write_logs(self, where: Path) -> None:
        where.mkdir(parents=True, exist_ok=True)
        for i, b in self.brokers.items():
            (where / f"broker{i}.stderr").write_text("".join(b.output))
        zk_log = self.zookeeper.log
        if zk_log.exists():
            (where / "zookeeper.log").write_bytes(zk_log.read_bytes())

    def stop(self) -> None:
        self._admin = None
        gc.collect()
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()
        for b in self.brokers.values():
            b.stop()
        self.zookeeper.stop()


def until(what: str, check: Callable[[], Any], timeout: float, every: float = 0.05) -> float:
    """Poll another process's state until ``check()`` is truthy; seconds it took."""
    t0 = time.perf_counter()
    while not check():
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"not within {timeout:g} s: {what}")
        time.sleep(every)  # another process: nothing to wait on but its state
    return time.perf_counter() - t0


def _producer(bootstrap: str, linger_ms: float) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": linger_ms,
            "compression.type": "none",
        }
    )


# ------------------------------------------------------------- 1. produce throughput


@dataclass
class Run:
    pair: int
    rf: int
    topic: str
    background_busy: float = 0.0
    messages: int = 0
    seconds: float = 0.0
    msg_per_s: float = 0.0
    mb_per_s: float = 0.0
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    broker_cpu_s: float = 0.0
    leader: int = -1
    errors: int = 0
    complete: bool = True


def produce_run(cluster: Cluster, run: Run, args: argparse.Namespace) -> None:
    """``--mb`` MB (at most ``--max-seconds`` s) of ``--size`` messages into ``run.topic``."""
    count = max(1, min(args.max_messages, int(args.mb * 1e6 // args.size)))
    producer = _producer(cluster.bootstrap(), args.linger_ms)
    producer.produce(run.topic, b"w")  # warm-up: connection, leader, producer id
    if producer.flush(30) != 0:
        raise RuntimeError(f"warm-up message to {run.topic} not delivered")
    latencies: list[float] = []
    errors = 0

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal errors
        latency = msg.latency()
        if err is not None or latency is None:
            errors += 1
        else:
            latencies.append(latency)

    value = os.urandom(args.size)
    produce, poll = producer.produce, producer.poll
    cpu0 = cluster.cpu()
    start = time.perf_counter()
    deadline = start + args.max_seconds
    sent = 0
    while sent < count and time.perf_counter() < deadline:
        for _ in range(min(1000, count - sent)):
            try:
                produce(run.topic, value, on_delivery=delivered)
            except BufferError:
                poll(0.001)
                break
            sent += 1
        poll(0)
    left = producer.flush(max(1.0, deadline - time.perf_counter() + 30))
    elapsed = time.perf_counter() - start
    run.broker_cpu_s = cluster.cpu() - cpu0
    run.messages = len(latencies)
    run.seconds = elapsed
    run.msg_per_s = run.messages / elapsed
    run.mb_per_s = run.messages * args.size / elapsed / 1e6
    run.p50_ms = percentile(latencies, 50) * 1000
    run.p99_ms = percentile(latencies, 99) * 1000
    run.errors = errors
    run.complete = left == 0 and errors == 0 and sent == count


def throughput(cluster: Cluster, args: argparse.Namespace) -> list[Run]:
    runs: list[Run] = []
    for pair in range(1, args.pairs + 1):
        busy = wait_quiet(args.wait_quiet)
        for rf in (1, 3):
            topic = f"bench-repl-rf{rf}-{os.getpid()}-{next(_topic_ids)}"
            config = {"min.insync.replicas": "2"} if rf == 3 else {}
            cluster.create_topic(topic, rf, config)
            run = Run(pair, rf, topic, background_busy=busy)
            state = cluster.state(topic)
            run.leader = state["leader"] if state else -1
            try:
                produce_run(cluster, run, args)
            finally:
                cluster.delete_topic(topic)
            runs.append(run)
            log(
                f"pair {pair} RF {rf} (leader {run.leader}): {run.mb_per_s:.1f} MB/s "
                f"p99 {run.p99_ms:.1f} ms, brokers {run.broker_cpu_s:.2f} CPU s"
            )
    return runs


def pair_ratios(runs: list[Run]) -> list[tuple[int, Run, Run, float]]:
    out = []
    for pair in sorted({r.pair for r in runs}):
        one = next(r for r in runs if r.pair == pair and r.rf == 1)
        three = next(r for r in runs if r.pair == pair and r.rf == 3)
        out.append((pair, one, three, three.mb_per_s / one.mb_per_s if one.mb_per_s else 0.0))
    return out


def runs_table(runs: list[Run], size: int) -> str:
    rows = [
        [
            r.pair,
            r.rf,
            r.leader,
            r.messages,
            r.seconds,
            r.msg_per_s,
            r.mb_per_s,
            r.p50_ms,
            r.p99_ms,
            r.broker_cpu_s,
            r.broker_cpu_s / (r.messages * size / 1e6) if r.messages else float("nan"),
            "yes" if r.complete else "NO",
        ]
        for r in runs
    ]
    return f"Produce, {size} B messages, acks=all, idempotent, one partition\n\n" + table(
        [
            "pair",
            "RF",
            "leader",
            "messages",
            "seconds",
            "msg/s",
            "MB/s",
            "p50 ms",
            "p99 ms",
            "brokers CPU s",
            "CPU s per MB",
            "complete",
        ],
        rows,
    )


def ratio_table(runs: list[Run]) -> str:
    ratios = pair_ratios(runs)
    rows: list[list[Any]] = [
        [pair, one.mb_per_s, three.mb_per_s, ratio, one.p99_ms, three.p99_ms]
        for pair, one, three, ratio in ratios
    ]
    rows.append(
        [
            "median",
            median(r[1].mb_per_s for r in ratios),
            median(r[2].mb_per_s for r in ratios),
            median(r[3] for r in ratios),
            median(r[1].p99_ms for r in ratios),
            median(r[2].p99_ms for r in ratios),
        ]
    )
    return "RF 3 (min.insync.replicas=2) against RF 1, per pair\n\n" + table(
        ["pair", "RF1 MB/s", "RF3 MB/s", "RF3/RF1", "RF1 p99 ms", "RF3 p99 ms"], rows
    )


# ---------------------------------------------------------------- 2. failover


class PacedProducer:
    """A thread producing numbered messages at ``rate`` msg/s until stopped (or its cap).

    Each acknowledgement is recorded as (number, offset, time seen, latency); failed
    deliveries are counted with their error. Times are ``time.perf_counter()``.
    """

    def __init__(
        self, bootstrap: str, topic: str, size: int, rate: float, max_seconds: float
    ) -> None:
        self.producer = _producer(bootstrap, 5)
        self.topic = topic
        self.size = size
        self.rate = rate
        self.max_seconds = max_seconds
        self.acked: list[tuple[int, int, float, float]] = []
        self.failed: list[tuple[int, str]] = []
        self.sent = 0
        self.unflushed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        seq = int((msg.value() or b"")[:12])
        offset = msg.offset()
        if err is not None or offset is None:
            self.failed.append((seq, str(err)))
        else:
            self.acked.append((seq, offset, time.perf_counter(), msg.latency() or 0.0))

    def _run(self) -> None:
        pad = os.urandom(max(0, self.size - 12))
        start = time.perf_counter()
        deadline = start + self.max_seconds
        produce, poll = self.producer.produce, self.producer.poll
        while not self._stop.is_set():
            now = time.perf_counter()
            if now >= deadline:
                log("failover producer reached --producer-max-seconds: stopped")
                break
            due = int((now - start) * self.rate) + 1
            while self.sent < due:
                try:
                    produce(self.topic, b"%012d" % self.sent + pad, on_delivery=self._delivered)
                except BufferError:
                    break
                self.sent += 1
            poll(0.0005)
        self.unflushed = self.producer.flush(120)

    def start(self) -> PacedProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)

    def _index_after(self, t: float) -> int:
        """Index of the first acknowledgement seen after ``t`` (they are in time order)."""
        return bisect.bisect_right(self.acked, t, key=lambda a: a[2])

    def first_ack_from(self, t: float, seq: int) -> float:
        """When the first message numbered ``seq`` or later was acknowledged after ``t``."""
        for i in range(self._index_after(t), len(self.acked)):
            if self.acked[i][0] >= seq:
                return self.acked[i][2]
        return float("nan")

    def longest_silence(self, start: float, end: float) -> float:
        """The longest time between two acknowledgements from the last one before ``start``
        to the first one at ``end`` or later (seconds)."""
        i = max(0, self._index_after(start) - 1)
        times = [a[2] for a in self.acked[i:] if a[2] <= end]
        return max((b - a for a, b in itertools.pairwise(times)), default=float("nan"))


@dataclass
class Failover:
    number: int
    signal: str
    session_timeout_ms: int
    victim: int
    victim_was_controller: bool
    new_leader: int = -1
    zk_leader_ms: float = float("nan")  # kill -> ZooKeeper's state names the new leader
    metadata_leader_ms: float = float("nan")  # kill -> a survivor's Metadata names it
    first_ack_ms: float = float("nan")  # kill -> first ack of a message produced after it
    gap_ms: float = float("nan")  # longest time without any ack, kill - 1 s to that ack
    fresh_ack_ms: float = float("nan")  # kill -> ack of a new producer's first message
    max_latency_ms: float = float("nan")  # slowest acknowledgement, kill to kill + 15 s
    failed_deliveries: int = 0
    restart_s: float = float("nan")  # restart -> the broker said it started
    back_in_isr_s: float = float("nan")  # restart -> back in the ISR


def metadata_leader(admin: AdminClient, topic: str) -> int:
    try:
        md = admin.list_topics(topic, timeout=2)
    except Exception:  # a Metadata request that failed: not visible yet
        return -1
    t = md.topics.get(topic)
    if t is None or t.error is not None or 0 not in t.partitions:
        return -1
    return int(t.partitions[0].leader)


def fresh_ack(bootstrap: str, topic: str) -> float:
    """When a producer created now (after Metadata named the new leader) gets its first
    message acknowledged: the cluster's side of the failover without the running
    producer's own recovery (its retries, backoffs and idempotence epoch bump)."""
    producer = _producer(bootstrap, 0)
    at = float("nan")

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal at
        if err is None:
            at = time.perf_counter()

    producer.produce(topic, b"%012d" % -1, on_delivery=delivered)
    producer.flush(30)
    return at


def one_failover(
    cluster: Cluster,
    producer: PacedProducer,
    topic: str,
    number: int,
    sig: signal.Signals,
    args: argparse.Namespace,
) -> Failover:
    time.sleep(args.steady_seconds)
    state = cluster.state(topic)
    assert state is not None
    victim = int(state["leader"])
    f = Failover(
        number,
        sig.name,
        args.session_timeout_ms,
        victim,
        cluster.controller() == victim,
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(but=victim)})
    metadata_leader(admin, topic)  # connect before the clock starts
    failed_before = len(producer.failed)
    proc = cluster.brokers[victim].proc
    assert proc is not None
    log(f"failover {number}: {sig.name} to broker {victim} (leader of {topic})")
    t_kill = time.perf_counter()
    seq_at_kill = producer.sent
    proc.send_signal(sig)
    limit = args.session_timeout_ms / 1000 + 30
    zk_at = md_at = float("nan")
    while (zk_at != zk_at or md_at != md_at) and time.perf_counter() - t_kill < limit:
        now = time.perf_counter()
        if zk_at != zk_at:
            s = cluster.state(topic)
            if s is not None and s["leader"] not in (victim, -1):
                zk_at, f.new_leader = now, int(s["leader"])
        if md_at != md_at and metadata_leader(admin, topic) not in (victim, -1):
            md_at = time.perf_counter()
        time.sleep(0.01)
    f.zk_leader_ms = (zk_at - t_kill) * 1000
    f.metadata_leader_ms = (md_at - t_kill) * 1000
    del admin
    f.fresh_ack_ms = (fresh_ack(cluster.bootstrap(but=victim), topic) - t_kill) * 1000
    try:
        until(
            "an acknowledgement of a message produced after the signal",
            lambda: not math.isnan(producer.first_ack_from(t_kill, seq_at_kill)),
            limit,
        )
    except TimeoutError:
        log(f"failover {number}: no acknowledgement within {limit:g} s of the kill")
    # Acknowledgements of requests the old leader answered just before it died can arrive
    # after the signal: the first one that counts is of a message produced after it.
    first = producer.first_ack_from(t_kill, seq_at_kill)
    f.first_ack_ms = (first - t_kill) * 1000
    f.gap_ms = producer.longest_silence(t_kill - 1, first) * 1000
    time.sleep(args.steady_seconds)  # the producer goes on against the new leader
    window = [a[3] for a in producer.acked if t_kill < a[2] < t_kill + 15]
    f.max_latency_ms = max(window, default=float("nan")) * 1000
    f.failed_deliveries = len(producer.failed) - failed_before
    proc.wait(60)
    f.restart_s = cluster.restart(victim)
    f.back_in_isr_s = f.restart_s + until(
        f"broker {victim} back in the ISR of {topic}",
        lambda: victim in ((cluster.state(topic) or {}).get("isr") or []),
        args.isr_timeout,
    )
    log(
        f"failover {number} ({sig.name}, session {args.session_timeout_ms} ms): gap "
        f"{f.gap_ms:.0f} ms, new leader {f.new_leader} in ZooKeeper after "
        f"{f.zk_leader_ms:.0f} ms, in Metadata after {f.metadata_leader_ms:.0f} ms; "
        f"broker {victim} back in the ISR {f.back_in_isr_s:.1f} s after its restart"
    )
    return f


@dataclass
class Check:
    background_busy: float = 0.0  # other work before the failover producer started
    produced: int = 0
    acknowledged: int = 0
    failed: int = 0
    unsent: int = 0
    read: int = 0
    distinct_read: int = 0
    duplicates: int = 0
    missing: int = 0
    offset_mismatches: int = 0
    read_not_acknowledged: int = 0
    missing_numbers: list[int] = field(default_factory=list)
    duplicate_numbers: list[int] = field(default_factory=list)


def read_back(bootstrap: str, topic: str, timeout: float) -> list[tuple[int, int]]:
    """Every (number, offset) in partition 0 of ``topic``, offset 0 to the end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-replication-check",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        low, high = watermarks(consumer, TP(topic, 0))
        consumer.assign([TP(topic, 0, 0)])
        out: list[tuple[int, int]] = []
        last = low - 1
        deadline = time.perf_counter() + timeout
        while last < high - 1 and time.perf_counter() < deadline:
            for m in consumer.consume(1000, 0.5):
                offset = m.offset()
                if m.error() is None and offset is not None:
                    out.append((int((m.value() or b"")[:12]), offset))
                    last = offset
        if last < high - 1:
            log(f"read back stopped at offset {last}, the end is {high}")
        return out
    finally:
        consumer.close()


def check(producer: PacedProducer, got: list[tuple[int, int]]) -> Check:
    got = [(seq, offset) for seq, offset in got if seq >= 0]  # not the fresh_ack probes
    acked = {seq: offset for seq, offset, _, _ in producer.acked}
    counts = Counter(seq for seq, _ in got)
    where = {seq: offset for seq, offset in got}
    c = Check(
        produced=producer.sent,
        acknowledged=len(acked),
        failed=len(producer.failed),
        unsent=producer.unflushed,
        read=len(got),
        distinct_read=len(counts),
    )
    dups = sorted(seq for seq, n in counts.items() if n > 1)
    c.duplicates = sum(counts[s] - 1 for s in dups)
    c.duplicate_numbers = dups[:20]
    missing = sorted(seq for seq in acked if seq not in counts)
    c.missing = len(missing)
    c.missing_numbers = missing[:20]
    c.offset_mismatches = sum(1 for seq, off in acked.items() if seq in where and where[seq] != off)
    c.read_not_acknowledged = sum(1 for seq in counts if seq not in acked)
    return c


def failovers(cluster: Cluster, args: argparse.Namespace) -> tuple[list[Failover], Check]:
    topic = f"bench-repl-failover-{os.getpid()}"
    # Once, before the producer starts: from then on the load is this benchmark's own.
    busy = wait_quiet(args.wait_quiet)
    cluster.create_topic(topic, 3, {"min.insync.replicas": "2"})
    producer = PacedProducer(
        cluster.bootstrap(), topic, args.size, args.rate, args.producer_max_seconds
    ).start()
    out: list[Failover] = []
    try:
        kinds = [signal.SIGKILL] * args.failovers + ([signal.SIGTERM] if args.sigterm else [])
        for n, sig in enumerate(kinds, 1):
            out.append(one_failover(cluster, producer, topic, n, sig, args))
    finally:
        producer.stop()
    log(f"failover producer: {producer.sent} sent, {len(producer.acked)} acknowledged")
    got = read_back(cluster.bootstrap(), topic, args.read_timeout)
    result = check(producer, got)
    result.background_busy = busy
    cluster.delete_topic(topic)
    return out, result


def failover_table(fs: list[Failover]) -> str:
    rows = [
        [
            f.number,
            f.signal,
            f.session_timeout_ms,
            f.victim,
            "yes" if f.victim_was_controller else "no",
            f.new_leader,
            f.zk_leader_ms,
            f.metadata_leader_ms,
            f.first_ack_ms,
            f.gap_ms,
            f.fresh_ack_ms,
            f.max_latency_ms,
            f.failed_deliveries,
            f.back_in_isr_s,
        ]
        for f in fs
    ]
    return (
        "Leader failover under a paced acks=all producer (times in ms from the signal; "
        "first ack: of a message produced after the signal; gap: the longest time "
        "without any acknowledgement from 1 s before the signal to that first ack)\n\n"
        + table(
            [
                "#",
                "signal",
                "session ms",
                "old leader",
                "was controller",
                "new leader",
                "ZooKeeper ms",
                "Metadata ms",
                "first ack ms",
                "gap ms",
                "new producer ack ms",
                "max latency ms",
                "failed",
                "rejoined ISR s",
            ],
            rows,
        )
    )


def check_table(c: Check) -> str:
    return "Read back after the failovers (every acknowledged message exactly once?)\n\n" + table(
        [
            "produced",
            "acknowledged",
            "failed",
            "read",
            "duplicates",
            "missing",
            "offset differs",
            "read, not acked",
        ],
        [
            [
                c.produced,
                c.acknowledged,
                c.failed + c.unsent,
                c.read,
                c.duplicates,
                c.missing,
                c.offset_mismatches,
                c.read_not_acknowledged,
            ]
        ],
    )


# ------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Produce throughput at RF 1 vs RF 3 and leader failover time, "
        "3 trio-broker processes and a local ZooKeeper."
    )
    p.add_argument("--size", type=int, default=1024, help="message size in bytes (1024)")
    p.add_argument("--pairs", type=int, default=3, help="RF1/RF3 pairs of produce runs (3)")
    p.add_argument("--mb", type=float, default=50, help="MB produced per run (50)")
    p.add_argument("--max-messages", type=int, default=2_000_000, help="most messages per run (2M)")
    p.add_argument(
        "--max-seconds", type=float, default=30, help="most seconds producing per run (30)"
    )
    p.add_argument("--linger-ms", type=float, default=5, help="producer linger.ms (5)")
    p.add_argument("--failovers", type=int, default=2, help="leader kills by SIGKILL (2)")
    p.add_argument(
        "--no-sigterm",
        dest="sigterm",
        action="store_false",
        help="skip the last failover, by SIGTERM (a clean stop)",
    )
    p.add_argument("--rate", type=float, default=2000, help="msg/s of the failover producer (2000)")
    p.add_argument(
        "--steady-seconds",
        type=float,
        default=5,
        help="producing before each kill, and again after the new leader is found (5)",
    )
    p.add_argument(
        "--producer-max-seconds",
        type=float,
        default=300,
        help="the failover producer stops after this many s in any case (300)",
    )
    p.add_argument(
        "--isr-timeout",
        type=float,
        default=90,
        help="most s for a restarted broker to rejoin the ISR (90)",
    )
    p.add_argument("--read-timeout", type=float, default=120, help="most s for the read-back (120)")
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        default=4000,
        help="the brokers' zookeeper.session.timeout.ms (4000)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="short run: --pairs 2 --mb 20 --failovers 1 --steady-seconds 3",
    )
    p.add_argument(
        "--broker-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra setting for every broker (repeatable)",
    )
    p.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="where the brokers' and ZooKeeper's directories go (default: /dev/shm if any)",
    )
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each pair and the failovers, wait up to this many s for other work to stop",
    )
    p.add_argument("--logs", type=Path, help="write the brokers' stderr and ZooKeeper's log here")
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.pairs = min(args.pairs, 2)
        args.mb = min(args.mb, 20)
        args.failovers = min(args.failovers, 1)
        args.steady_seconds = min(args.steady_seconds, 3)
    return args


@contextmanager
def running_cluster(args: argparse.Namespace) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="trio-broker-bench-repl-", dir=args.data_dir))
    cluster = Cluster(base, args.session_timeout_ms, args.broker_override)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
        subprocess.run(["rm", "-rf", str(base)], check=False)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    options = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "json"
    }
    print(header(TITLE, options), flush=True)
    problems: list[str] = []
    runs: list[Run] = []
    fails: list[Failover] = []
    result: Check | None = None
    with running_cluster(args) as cluster:
        log(f"ZooKeeper at {cluster.zookeeper.connect}; brokers {cluster.bootstrap()}")
        try:
            runs = throughput(cluster, args)
            if args.failovers > 0 or args.sigterm:
                fails, result = failovers(cluster, args)
        except (TimeoutError, RuntimeError, AssertionError) as exc:
            problems.append(f"{type(exc).__name__}: {exc}")
            log(f"PROBLEM: {exc}")
        for i, b in cluster.brokers.items():
            code = b.proc.poll() if b.proc is not None else None
            if code is not None:
                problems.append(f"broker {i} exited with {code} outside a failover")
        if result is not None and (result.missing or result.duplicates or result.failed):
            problems.append(f"read back: {asdict(result)}")
        if any(not r.complete for r in runs):
            problems.append("a produce run was incomplete (errors or time out)")
        logs = args.logs
        if logs is None and problems:
            logs = Path(tempfile.mkdtemp(prefix="bench-replication-logs-"))
        if logs is not None:
            cluster.write_logs(logs)
            log(f"brokers' stderr and ZooKeeper's log in {logs}")

    print()
    if runs:
        busiest = max(r.background_busy for r in runs)
        print(f"Other work on the machine before the pairs: at most {busiest:.0%} of the CPUs\n")
        print(runs_table(runs, args.size))
        print()
        print(ratio_table(runs))
        print()
    if fails:
        assert result is not None
        print(
            f"Other work on the machine before the failover producer started: "
            f"{result.background_busy:.0%} of the CPUs\n"
        )
        print(failover_table(fails))
        print()
    if result is not None:
        print(check_table(result))
        print()
    for problem in problems:
        print(f"PROBLEM: {problem}")
    write_json(
        args.json,
        TITLE,
        options,
        {
            "runs": [asdict(r) for r in runs],
            "ratios": [
                {"pair": pair, "rf3_over_rf1_mb_per_s": ratio}
                for pair, _, _, ratio in pair_ratios(runs)
            ]
            if runs
            else [],
            "failovers": [asdict(f) for f in fails],
            "check": asdict(result) if result is not None else None,
            "problems": problems,
        },
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
