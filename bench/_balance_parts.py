"""The parts of ``bench/balance_proof.py``: a ZooKeeper cluster whose brokers may each have
a slow disk and may join later, the loads, the read-back check, and the balance job run
as an operator runs it.

Nothing here is measured itself. ``ZkCluster`` starts one local ZooKeeper
(``trio_broker.tools.zookeeper``) and broker processes from this checkout
(``_common.BrokerProcess``: port-0 listeners, an admin API, ``metrics.window.seconds=5``;
a broker given a delay runs through ``bench/slow_disk_broker.py``, the log layer's
test-only storage hook). ``SyncLoad``: one confluent-kafka producer thread per partition,
acks=all, one request in flight, no linger: each waits for its acknowledgement before the
next message (synchronous producers). ``NumberedLoad``: numbered messages at a paced rate
(acks=all, idempotent), every acknowledgement's partition and offset kept. ``check``:
every acknowledged message read back exactly once at its offset.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import REPO, BrokerProcess, log, watermarks
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient, NewTopic

from trio_broker.tools.zookeeper import ZooKeeperServer


def until(what: str, check: Callable[[], Any], timeout: float, every: float = 0.1) -> float:
    """Poll another process's state until ``check()`` is truthy; seconds it took."""
    t0 = time.perf_counter()
    while not check():
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"not within {timeout:g} s: {what}")
        time.sleep(every)  # another process: nothing to wait on but its state
    return time.perf_counter() - t0


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


class ZkCluster:
    def __init__(
        self, base: Path, session_ms: int, io_threads: int, overrides: list[str] | None = None
    ) -> None:
        self.base = base
        self.session_ms = session_ms
        self.io_threads = io_threads
        self.overrides = overrides or []
        self.zookeeper = ZooKeeperServer(base / "zookeeper")
        self.brokers: dict[int, BrokerProcess] = {}

    def start(self, ids: list[int], delays: dict[int, float] | None = None) -> ZkCluster:
        flags = os.environ.get("JAVA_TOOL_OPTIONS", "")
        if "zookeeper.admin.enableServer" not in flags:  # no Jetty on port 8080
            os.environ["JAVA_TOOL_OPTIONS"] = f"{flags} -Dzookeeper.admin.enableServer=false"
        self.zookeeper.start()
        for i in ids:
            self.add(i, (delays or {}).get(i, 0.0), wait=False)
        until("every broker registered", lambda: sorted(self.live()) == sorted(ids), 60)
        return self

    def add(self, i: int, delay_ms: float = 0.0, wait: bool = True) -> BrokerProcess:
        settings = [
            f"broker.id={i}",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name=CONTROLLER",
            f"zookeeper.connect={self.zookeeper.connect}",
            f"zookeeper.session.timeout.ms={self.session_ms}",
            "admin.listeners=http://127.0.0.1:0",
            "metrics.window.seconds=5",
            f"num.io.threads={self.io_threads}",
            *self.overrides,
        ]
        b = BrokerProcess(settings, base_dir=self.base, storage_delay_ms=delay_ms).start()
        self.brokers[i] = b
        if wait:
            until(f"broker {i} registered", lambda: i in self.live(), 60)
        return b

    def running(self, i: int) -> bool:
        proc = self.brokers[i].proc
        return proc is not None and proc.poll() is None

    def view(self) -> dict[str, Any]:
        for i in sorted(self.brokers):
            if self.running(i):
                try:
                    found: dict[str, Any] = get_json(self.brokers[i].admin_url + "/v1/cluster")
                    return found
                except OSError:
                    continue
        raise RuntimeError("no broker's admin API answers")

    def live(self) -> list[int]:
        try:
            return sorted(int(b["id"]) for b in self.view()["brokers"])
        except RuntimeError:
            return []

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for i, b in self.brokers.items() if self.running(i))

    def admin_args(self) -> list[str]:
        out = []
        for i, b in sorted(self.brokers.items()):
            if self.running(i):
                out += ["--admin", b.admin_url]
        return out

    def metrics(self, i: int) -> dict[str, Any]:
        found: dict[str, Any] = get_json(self.brokers[i].admin_url + "/v1/metrics")
        return found

    def create(self, topic: str, assignment: list[list[int]]) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        spec = NewTopic(topic, len(assignment), replica_assignment=assignment)
        admin.create_topics([spec])[topic].result(30)

        def in_sync() -> bool:
            parts = [p for p in self.view()["partitions"] if p["topic"] == topic]
            return len(parts) == len(assignment) and all(
                p["leader"] >= 0 and len(p["isr"]) == len(p["replicas"]) for p in parts
            )

        until(f"{topic} created, every replica in sync", in_sync, 60)

    def leaders(self, topic: str) -> dict[int, int]:
        out: dict[int, int] = {}
        for p in self.view()["partitions"]:
            if p["topic"] == topic:
                out[p["leader"]] = out.get(p["leader"], 0) + 1
        return out

    def replicas_on(self, broker: int) -> int:
        return sum(1 for p in self.view()["partitions"] if broker in p["replicas"])

    def stop(self) -> None:
        for b in self.brokers.values():
            b.stop()
        self.zookeeper.stop()


class SyncLoad:
    """One producer thread per partition, each sending its next message only once the last
    one is acknowledged (acks=all): throughput is what the cluster answers."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, size: int) -> None:
        self.topic, self.size = topic, size
        self.acks = 0
        self.errors = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(bootstrap, p), daemon=True)
            for p in range(partitions)
        ]

    def _run(self, bootstrap: str, partition: int) -> None:
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 0,
                "max.in.flight.requests.per.connection": 1,
            }
        )
        value = b"s" * self.size
        done = threading.Event()

        def delivered(err: KafkaError | None, _msg: Message) -> None:
            with self._lock:
                if err is None:
                    self.acks += 1
                else:
                    self.errors += 1
            done.set()

        while not self._stop.is_set():
            done.clear()
            p.produce(self.topic, value, partition=partition, on_delivery=delivered)
            while not done.is_set() and not self._stop.is_set():
                p.poll(0.05)
        p.flush(30)

    def count(self) -> int:
        with self._lock:
            return self.acks

    def __enter__(self) -> SyncLoad:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)


class NumberedLoad:
    """Numbered ``size``-byte messages at ``rate`` msg/s over a topic's partitions (acks=all,
    idempotent) until stopped or ``max_seconds``; each acknowledgement's (number,
    partition, offset) kept, each failure counted."""

    def __init__(self, bootstrap: str, topic: str, size: int, rate: float, max_s: float) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        self.topic, self.size, self.rate, self.max_s = topic, size, rate, max_s
        self.acked: list[tuple[int, int, int]] = []
        self.failed = 0
        self.sent = 0
        self.unflushed = 0
        self.first = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        offset, partition = msg.offset(), msg.partition()
        if err is not None or offset is None or partition is None:
            self.failed += 1
        else:
            self.acked.append((int((msg.value() or b"")[:12]), partition, offset))

    def send(self, number: int, pad: bytes) -> None:
        while True:
            try:
                self.producer.produce(
                    self.topic, b"%012d" % number + pad, on_delivery=self._delivered
                )
                return
            except BufferError:
                self.producer.poll(0.01)

    def fill(self, count: int) -> float:
        """``count`` messages as fast as they go; seconds it took (before the paced run)."""
        pad = os.urandom(max(0, self.size - 12))
        t0 = time.perf_counter()
        for _ in range(count):
            self.send(self.sent, pad)
            self.sent += 1
            self.producer.poll(0)
        self.producer.flush(300)
        return time.perf_counter() - t0

    def _run(self) -> None:
        pad = os.urandom(max(0, self.size - 12))
        start = time.perf_counter()
        self.first = self.sent
        while not self._stop.is_set() and time.perf_counter() - start < self.max_s:
            due = self.first + int((time.perf_counter() - start) * self.rate) + 1
            while self.sent < due:
                self.send(self.sent, pad)
                self.sent += 1
            self.producer.poll(0.002)
        self.unflushed = self.producer.flush(120)

    def start(self) -> NumberedLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)


def check(load: NumberedLoad, bootstrap: str, topic: str, timeout: float = 120) -> dict[str, Any]:
    """Read every partition of ``topic`` from its start to its end; every acknowledged
    message must be there once, at the partition and offset its acknowledgement gave."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-balance-check",
            "enable.auto.commit": False,
        }
    )
    got: list[tuple[int, int, int]] = []
    try:
        md = consumer.list_topics(topic, timeout=30).topics[topic]
        parts = sorted(md.partitions)
        ends = {p: watermarks(consumer, TP(topic, p))[1] for p in parts}
        consumer.assign([TP(topic, p, 0) for p in parts])
        last = {p: -1 for p in parts}
        deadline = time.perf_counter() + timeout
        while any(last[p] < ends[p] - 1 for p in parts) and time.perf_counter() < deadline:
            for m in consumer.consume(1000, 0.5):
                offset, partition = m.offset(), m.partition()
                if m.error() is None and offset is not None and partition is not None:
                    got.append((int((m.value() or b"")[:12]), partition, offset))
                    last[partition] = offset
    finally:
        consumer.close()
    acked = {n: (p, o) for n, p, o in load.acked}
    counts = Counter(n for n, _, _ in got)
    where = {n: (p, o) for n, p, o in got}
    return {
        "sent": load.sent,
        "acknowledged": len(acked),
        "failed": load.failed,
        "read": len(got),
        "missing": sum(1 for n in acked if n not in counts),
        # (number, partition, offset) of the first missing ones, and where reading stopped
        "missing_at": sorted((n, *acked[n]) for n in acked if n not in counts)[:10],
        "ends": {str(p): e for p, e in ends.items()},
        "duplicates": sum(c - 1 for c in counts.values() if c > 1),
        "offset_differs": sum(1 for n, at in acked.items() if n in where and where[n] != at),
    }


def spark_env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }


def job(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m <args>`` from the repository, as an operator runs it."""
    done = subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=spark_env(),
    )
    return done


def sample(cluster: ZkCluster, trends: Path, seconds: float, interval: float) -> str:
    done = job(
        [
            "spark_jobs.balance.sample",
            *cluster.admin_args(),
            *("--out", str(trends), "--seconds", str(seconds), "--interval", str(interval)),
        ],
        seconds + 120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"sample failed:\n{done.stderr[-3000:]}")
    log(done.stdout.strip())
    return done.stdout


def scrape_and_trend(cluster: ZkCluster, trends: Path, seconds: float, interval: float) -> str:
    """The tables as the trends job writes them (issue 32's ``brokers`` and
    ``partitions``): ``spark_jobs.scrape --cluster`` for ``seconds``, then
    ``spark_jobs.trends`` over what it scraped, in buckets of ``interval`` seconds."""
    scraped = trends.parent / (trends.name + "-scraped")
    scraper = subprocess.Popen(
        [
            sys.executable,
            *("-m", "spark_jobs.scrape", "--cluster", *cluster.admin_args()[:2]),
            *("--out", str(scraped), "--interval", str(min(1.0, interval))),
        ],
        cwd=REPO,
        env=spark_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(seconds)  # the scrape's window: the load is measured meanwhile
    scraper.send_signal(signal.SIGTERM)
    _, err = scraper.communicate(timeout=60)
    if scraper.returncode != 0:
        raise RuntimeError(f"scrape --cluster failed (exit {scraper.returncode}):\n{err[-3000:]}")
    done = job(
        [
            *("spark_jobs.trends", "--in", str(scraped), "--out", str(trends)),
            *("--bucket-seconds", str(int(interval)), "--trend-window-seconds", "30"),
            *("--master", "local[2]", "--conf", "spark.ui.enabled=false"),
        ],
        900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"trends failed:\n{done.stderr[-3000:]}")
    log(done.stdout.strip())
    return done.stdout


def tables(cluster: ZkCluster, trends: Path, source: str, seconds: float, interval: float) -> str:
    """The brokers and partitions tables for the balance job, from ``source``: ``trends``
    (the scraper and the trends job) or ``sample`` (``spark_jobs.balance.sample``)."""
    if source == "trends":
        return scrape_and_trend(cluster, trends, seconds, interval)
    return sample(cluster, trends, seconds, interval)


def balance(
    cluster: ZkCluster, trends: Path, engine: str, options: list[str], command: list[str]
) -> tuple[dict[str, Any], str, int]:
    """The balance job with ``--apply``; its plan document, output and exit status."""
    args = ["spark_jobs.balance", "--in", str(trends), "--engine", engine, *cluster.admin_args()]
    if engine == "spark":
        args += ["--master", "local[2]", "--conf", "spark.ui.enabled=false"]
    done = job([*args, "--apply", *options, *command], 900)
    out = done.stdout + done.stderr
    plan_file = trends / "balance" / "plan.json"
    if not plan_file.exists():
        raise RuntimeError(f"balance wrote no plan:\n{out[-3000:]}")
    doc: dict[str, Any] = json.loads(plan_file.read_text())
    return doc, out, done.returncode
