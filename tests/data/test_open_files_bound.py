"""``log.open.files.max`` on a broker process: its descriptors stay within the bound.

A real broker with ``log.open.files.max=30`` (ten segments open at once) and a topic of 50
partitions; confluent-kafka produces to every partition (acks=all) and consumes them all
back while a thread samples the broker's /proc/<pid>/fd. The segment files it holds (the
``.log``, ``.index`` and ``.timeindex`` under its log dir) never pass the bound plus a
fixed overhead: three a storage thread for a segment in use at that moment, and the log
files of the regions being sent (the consumer's ``fetch.max.bytes`` of 1000 makes every
fetch response at most three batches). Then a kill -9 while most segments are closed, and
the restart recovers every acknowledged record. The metrics (GET /v1/metrics and /metrics)
count the segments the bound closed and those a consumer's reads opened again.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ..data.test_durability import consume_all
from ..support.brokers import BrokerProcess
from ..support.files import segment_fds
from ..support.metrics import prometheus_samples, validate_snapshot

PARTITIONS = 50
BOUND = 30
IO_THREADS = 2
# Segments in use by the storage threads, the log files of a response's regions in flight
# (fetch.max.bytes 1000 holds at most three batches of 330 bytes).
OVERHEAD = 3 * IO_THREADS + 3


def _overrides(tmp_path: Path) -> list[str]:
    return [
        f"log.dirs={tmp_path}",
        f"log.open.files.max={BOUND}",
        f"num.io.threads={IO_THREADS}",
        "log.segment.bytes=2000",  # a few segments a partition: most of them closed
    ]


class Sampler:
    """The most segment files the broker held, sampled until ``stop``."""

    def __init__(self, pid: int, root: Path) -> None:
        self.pid, self.root = pid, root
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, segment_fds(self.root, self.pid))
            self.samples += 1
            self._stop.wait(0.002)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        return self.peak


def _produce(bootstrap: str, rounds: int) -> dict[tuple[int, int], bytes]:
    acked: dict[tuple[int, int], bytes] = {}

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    for r in range(rounds):
        for part in range(PARTITIONS):
            value = b"v-%d-%d-" % (part, r) + b"x" * 300
            p.produce("wide", value, partition=part, on_delivery=on_delivery)
        p.poll(0)
        p.flush(30)
    assert p.flush(30) == 0
    assert len(acked) == rounds * PARTITIONS
    return acked


def _consume(bootstrap: str) -> dict[tuple[int, int], bytes]:
    small = {  # at most three batches a response
        "fetch.max.bytes": 1000,
        "message.max.bytes": 1000,
        "max.partition.fetch.bytes": 1000,
    }
    got = consume_all(bootstrap, "wide", PARTITIONS, **small)
    return {(p, o): value for p, records in got.items() for o, value in records}


def test_the_broker_holds_at_most_the_bound_and_a_kill_9_loses_nothing(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, _overrides(tmp_path)).start()
    assert broker.proc is not None
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("wide", PARTITIONS, 1)])["wide"].result(60)
    sampler = Sampler(broker.proc.pid, tmp_path)
    acked = _produce(broker.bootstrap, 12)  # 12 x 330 bytes: two segments a partition
    assert _consume(broker.bootstrap) == acked
    peak = sampler.stop()
    assert sampler.samples > 10
    assert peak <= BOUND + OVERHEAD, f"the broker held {peak} segment files"
    segments = len(list(tmp_path.glob("wide-*/*.log")))
    assert segments >= 2 * PARTITIONS  # far more than the bound holds

    broker.kill()  # most segments closed, nothing flushed since: a crash
    crashed = BrokerProcess(tmp_path, _overrides(tmp_path)).start()
    assert crashed.proc is not None
    assert segment_fds(tmp_path, crashed.proc.pid) <= BOUND + OVERHEAD
    stored = _consume(crashed.bootstrap)
    missing = [k for k, v in acked.items() if stored.get(k) != v]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    assert crashed.terminate() == 0


def _open_files(admin_url: str) -> dict[str, Any]:
    snapshot = validate_snapshot(httpx.get(f"{admin_url}/v1/metrics", timeout=10).json())
    figures: dict[str, Any] = snapshot["log"]["open_files"]
    return figures


def _prometheus_open_files(admin_url: str) -> dict[str, float]:
    samples = prometheus_samples(httpx.get(f"{admin_url}/metrics", timeout=10).content)
    prefix = "kafka_log_logmanager_"
    return {
        name.removeprefix(prefix): by_labels[()]
        for name, by_labels in samples.items()
        if name.startswith(prefix)
    }


def test_the_metrics_count_the_segments_closed_and_reopened(tmp_path: Path) -> None:
    """A consumer reading every partition from the start reads first segments that the
    bound closed while producing: each one it reads is reopened, and the JSON snapshot and
    the Prometheus text both show the evictions and reopenings grow, the files held
    within the bound."""
    overrides = [*_overrides(tmp_path), "admin.listeners=http://127.0.0.1:0"]
    broker = BrokerProcess(tmp_path, overrides).start()
    assert broker.admin_url is not None
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("wide", PARTITIONS, 1)])["wide"].result(60)
        acked = _produce(broker.bootstrap, 12)  # two segments a partition
        produced = _open_files(broker.admin_url)
        assert produced["max"] == BOUND and produced["held"] <= BOUND
        assert produced["evictions"] >= PARTITIONS  # the first segments were closed

        assert _consume(broker.bootstrap) == acked
        read = _open_files(broker.admin_url)
        # At most ten segments are open at once: at least 40 of the 50 first segments were
        # closed when the consumer came to them, and each read opened one again.
        assert read["reopens"] - produced["reopens"] >= PARTITIONS - BOUND // 3, read
        assert read["evictions"] - produced["evictions"] >= PARTITIONS - BOUND // 3, read
        assert read["held"] <= BOUND and read["max"] == BOUND

        prom = _prometheus_open_files(broker.admin_url)  # counters only grow since `read`
        assert prom["segment_reopens_total"] >= read["reopens"]
        assert prom["segment_evictions_total"] >= read["evictions"]
        assert prom["open_segment_files_max"] == BOUND
        assert 0 < prom["open_segment_files"] <= BOUND
        assert 0 < prom["open_segments"] <= prom["open_segment_files"]
    finally:
        assert broker.terminate() == 0


def test_the_bound_is_dynamic(tmp_path: Path) -> None:
    """IncrementalAlterConfigs of log.open.files.max on a running broker: a lower bound
    closes files at once, a value under 3 is refused with Kafka's error, -1 lifts it."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    from ..support.brokers import BrokerThread

    b = BrokerThread(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("few", 20, 1)])["few"].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
        for part in range(20):
            p.produce("few", b"v", partition=part)
        assert p.flush(30) == 0
        broker = b.broker
        assert broker is not None and broker.replica_manager.logs is not None
        logs = broker.replica_manager.logs
        held = logs.open_files()  # the topic's 20 segments and the internal topics'
        assert held >= 60 and held == segment_fds(tmp_path)

        def set_bound(value: str) -> None:
            res = ConfigResource(ConfigResource.Type.BROKER, "0")
            res.add_incremental_config(
                ConfigEntry(
                    "log.open.files.max", value, incremental_operation=AlterConfigOpType.SET
                )
            )
            admin.incremental_alter_configs([res])[res].result(10)

        set_bound("9")
        assert logs.files.max_files == 9
        assert logs.open_files() <= 9 and segment_fds(tmp_path) <= 9
        try:
            set_bound("2")
        except KafkaException as exc:
            assert exc.args[0].name() == "INVALID_CONFIG", exc
        else:
            raise AssertionError("log.open.files.max=2 was accepted")
        assert logs.files.max_files == 9
        set_bound("-1")
        assert logs.files.max_files is None
    finally:
        b.stop()
