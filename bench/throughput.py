"""Produce and consume throughput of trio-broker against librdkafka's mock broker, A/B.

What it measures: for each message size (100 B, 1 KiB, 100 KiB by default) and each
``acks`` setting (1 and all), one confluent-kafka producer writes ``--mb`` MB (at most
``--max-messages`` messages, at most ``--max-seconds`` s) into a fresh one-partition
topic, and one consumer reads a data set back. The client is librdkafka, which does its
work in C threads, so the broker is what limits the rate; the client's own CPU seconds are
reported too, to show when it is not (100 B messages are client-bound on 2 cores: Python
calls ``produce()`` and the delivery callback once per message). Figures per run:

* produce msg/s and MB/s (payload bytes, 1 MB = 10^6 B): from the first ``produce()`` to
  the last delivery report, after a one-message warm-up that opens the connection;
* delivery latency p50/p99 from ``Message.latency()`` in the delivery callback
  (librdkafka's time from ``produce()`` to the acknowledgement; at full speed that is
  mostly time queued in the client, so the paced run below is the latency that matters);
* consume msg/s and MB/s: ``assign()`` of every partition at offset 0 (no consumer
  groups, no commits), counted from the first message (not counted) to the last one;
* broker CPU seconds during each phase: ``/proc/<pid>/stat`` of the broker process; per
  Produce request (the producer's own count of the requests it sent, from librdkafka's
  statistics) and per MB of payload, for both brokers, so that the distance to the
  mock's cost is a number.

The reference broker is librdkafka's mock cluster (``bench/mock_cluster.py``: the C mock
broker inside the confluent-kafka wheel, reached through ctypes, in its own process so its
CPU time is measured the same way). Two properties of the mock shape the method:

* it keeps its log in memory and at most 5 MiB per partition (older message sets are
  dropped), so the produced data cannot be read back; the consume phase reads its own
  data set instead: ``--consume-mb`` MB (at most ``--max-consume-messages`` messages)
  written untimed over as many partitions as needed for 4 MB each, read ``--consume-passes``
  times, each time by a new consumer (timed from its first message to its last;
  re-assigning one consumer would wait out librdkafka's in-flight fetch). The mock's
  produce path only ever touches those 5 MiB (cache-hot memory); ours writes new segment
  pages for every byte;
* with one broker, acks=all and acks=1 both wait for the single replica.

Our broker runs with its defaults, its log directory in ``--data-dir`` (by default
``/dev/shm``, tmpfs, so that this VM's disk write-back is not what is measured; give a
disk directory to include it). Runs alternate, ours then mock, ``--pairs`` times per case
(3), tables show medians, and the ratio ours/mock is the median of the per-pair ratios.

After the cases, a paced run produces at ``--paced-fraction`` (0.5; a list runs each) of
our median peak
msg/s for ``--paced-case`` (1 KiB acks=all) on both brokers, ``--paced-seconds`` each,
for the issue's target "produce p99 at half of our peak rate within 2x the mock's p99".
``--profile DIR`` records py-spy profiles of our broker (first run of each case and phase,
and the first paced run); ``bench/profile_top.py`` summarizes them.

Run from the repository (``scripts/test`` sets up ``.venv``)::

    .venv/bin/python bench/throughput.py                 # defaults: about 5 minutes
    .venv/bin/python bench/throughput.py --quick         # about 2 minutes
    .venv/bin/python bench/throughput.py --sizes 1024 --acks all --pairs 5 --json out.json

Before each pair of runs the script waits up to ``--wait-quiet`` s for other work on
the machine to stop (under 10% of the CPUs busy), and records how busy it was.
Every load stops by itself: counts and times are bounded by the options above.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    BrokerProcess,
    MockCluster,
    Profiler,
    cpu_seconds,
    default_data_dir,
    header,
    log,
    median,
    percentile,
    table,
    wait_quiet,
    write_json,
)
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka import TopicPartition as TP
from confluent_kafka.admin import AdminClient, NewTopic

TITLE = "throughput: produce and consume, trio-broker vs librdkafka's mock broker"
_topic_ids = itertools.count()


@dataclass
class Phase:
    """One produce or consume phase against one broker."""

    messages: int = 0
    seconds: float = 0.0
    msg_per_s: float = 0.0
    mb_per_s: float = 0.0
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    broker_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    # Produce requests the client sent in the phase (librdkafka's statistics), and the
    # broker's CPU per request and per MB of payload: the distance to the reference's
    # cost as a number, not only as a rate.
    requests: int = 0
    broker_cpu_us_per_request: float = float("nan")
    broker_cpu_us_per_mb: float = float("nan")
    errors: int = 0
    complete: bool = True


@dataclass
class Run:
    target: str  # "ours" or "mock"
    size: int
    acks: str
    background_busy: float = 0.0  # share of the CPUs busy with other work just before
    produce: Phase = field(default_factory=Phase)
    consume: Phase = field(default_factory=Phase)


class Target:
    """A broker under test: its bootstrap address, process id and topic management."""

    def __init__(self, name: str, bootstrap: str, pid: int) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.pid = pid

    def create_topic(self, name: str, partitions: int) -> None:
        raise NotImplementedError

    def delete_topic(self, name: str) -> None:
        raise NotImplementedError


class Ours(Target):
    def __init__(self, broker: BrokerProcess) -> None:
        super().__init__("ours", broker.bootstrap, broker.pid)
        self.admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def create_topic(self, name: str, partitions: int) -> None:
        self.admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topics([name])[name].result(30)

    def close(self) -> None:
        """Drop the admin client before the broker stops (no disconnection notice)."""
        del self.admin
        gc.collect()


class Mock(Target):
    def __init__(self, mock: MockCluster) -> None:
        super().__init__("mock", mock.bootstrap, mock.pid)
        self.mock = mock

    def create_topic(self, name: str, partitions: int) -> None:
        self.mock.create_topic(name, partitions)

    def delete_topic(self, name: str) -> None:
        self.mock.delete_topic(name)


def _client_cpu() -> float:
    t = os.times()
    return t.user + t.system


_STATS_MS = 100  # librdkafka statistics interval: the Produce request count comes from it


class _ProduceRequests:
    """The Produce requests a producer has sent, from its latest statistics (``req``
    counts per request type, summed over its broker connections)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, stats_json: str) -> None:
        brokers = json.loads(stats_json).get("brokers", {})
        self.count = sum(b.get("req", {}).get("Produce", 0) for b in brokers.values())


def _producer(
    target: Target, acks: str, linger_ms: float | None, stats: _ProduceRequests | None = None
) -> Producer:
    conf: dict[str, Any] = {
        "bootstrap.servers": target.bootstrap,
        "acks": acks,
        "enable.idempotence": False,
        "compression.type": "none",
    }
    if linger_ms is not None:
        conf["linger.ms"] = linger_ms
    if stats is not None:
        conf["statistics.interval.ms"] = _STATS_MS
        conf["stats_cb"] = stats
    return Producer(conf)


def _per_unit(phase: Phase, payload_bytes: int) -> None:
    """Fill in the broker's CPU per request and per MB of payload."""
    if phase.requests > 0:
        phase.broker_cpu_us_per_request = phase.broker_cpu_s * 1e6 / phase.requests
    if payload_bytes > 0:
        phase.broker_cpu_us_per_mb = phase.broker_cpu_s * 1e6 / (payload_bytes / 1e6)


def _warm_up(producer: Producer, topic: str) -> None:
    """One message, to open the connection and learn the leader before the clock starts."""
    producer.produce(topic, b"w")
    if producer.flush(30) != 0:
        raise RuntimeError(f"warm-up message to {topic} not delivered")


def produce_phase(
    target: Target,
    topic: str,
    size: int,
    acks: str,
    count: int,
    max_seconds: float,
    linger_ms: float | None,
    rate: float | None = None,
) -> Phase:
    """Produce ``count`` messages (fewer if ``max_seconds`` runs out), optionally paced."""
    stats = _ProduceRequests()
    producer = _producer(target, acks, linger_ms, stats)
    _warm_up(producer, topic)
    producer.poll(2 * _STATS_MS / 1000)  # statistics taken after the warm-up
    requests0 = stats.count
    latencies: list[float] = []
    errors = 0

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal errors
        latency = msg.latency()
        if err is not None or latency is None:
            errors += 1
        else:
            latencies.append(latency)

    value = os.urandom(size)
    produce = producer.produce
    poll = producer.poll
    cpu0, ccpu0 = cpu_seconds(target.pid), _client_cpu()
    start = time.perf_counter()
    deadline = start + max_seconds
    sent = 0
    while sent < count:
        now = time.perf_counter()
        if now >= deadline:
            break
        if rate is not None:
            due = min(count, int((now - start) * rate) + 1)
            if sent >= due:
                poll(0)
                time.sleep(min(0.0005, (sent + 1) / rate - (now - start)))
                continue
            batch = due - sent
        else:
            batch = min(1000, count - sent)
        for _ in range(batch):
            try:
                produce(topic, value, on_delivery=delivered)
            except BufferError:
                poll(0.001)
                break
            sent += 1
        poll(0)
    left = producer.flush(max(1.0, deadline - time.perf_counter() + 30))
    elapsed = time.perf_counter() - start
    broker_cpu_s = cpu_seconds(target.pid) - cpu0
    client_cpu_s = _client_cpu() - ccpu0
    producer.poll(2 * _STATS_MS / 1000)  # statistics taken after the last request
    phase = Phase(
        messages=len(latencies),
        seconds=elapsed,
        broker_cpu_s=broker_cpu_s,
        client_cpu_s=client_cpu_s,
        requests=stats.count - requests0,
        errors=errors,
        complete=left == 0 and errors == 0 and sent == count,
    )
    _per_unit(phase, phase.messages * size)
    phase.msg_per_s = phase.messages / elapsed
    phase.mb_per_s = phase.messages * size / elapsed / 1e6
    phase.p50_ms = percentile(latencies, 50) * 1000
    phase.p99_ms = percentile(latencies, 99) * 1000
    return phase


MOCK_PARTITION_BYTES = 4_000_000
"""Payload bytes per partition of the consume data set: the mock keeps at most 5 MiB per
partition (``max_size`` in rdkafka_mock.c; older message sets are dropped), so the data
set to read back is spread over enough partitions that each holds at most this."""


def fill_topic(target: Target, topic: str, partitions: int, size: int, per_partition: int) -> None:
    """Untimed: ``per_partition`` messages of ``size`` bytes into each partition."""
    producer = _producer(target, "1", None)
    value = os.urandom(size)
    failed = 0

    def delivered(err: KafkaError | None, msg: Message) -> None:
        nonlocal failed
        failed += err is not None

    for p in range(partitions):
        for _ in range(per_partition):
            while True:
                try:
                    producer.produce(topic, value, partition=p, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.poll(0)
    if producer.flush(120) != 0 or failed:
        raise RuntimeError(f"could not fill {topic} ({failed} failed)")


def _consume_pass(
    target: Target, topic: str, partitions: int, count: int, deadline: float
) -> tuple[int, int, int, float]:
    """One consumer reads ``count`` messages from offset 0 of every partition.

    Returns (messages read, messages timed, errors, seconds timed): the clock starts at
    the first message (not timed: it pays for the connection and the first fetch).
    """
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": "bench-throughput",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            # librdkafka stops fetching a partition for fetch.queue.backoff.ms (1 s) when its
            # local queue is over the thresholds: a client pause that is not the broker's.
            "fetch.queue.backoff.ms": 10,
            "queued.max.messages.kbytes": 262144,
        }
    )
    try:
        consumer.assign([TP(topic, p, 0) for p in range(partitions)])
        got = errors = timed = 0
        first_at: float | None = None
        last_at = 0.0
        while got < count and time.perf_counter() < deadline:
            # consume(n, timeout) returns when n messages are there or the timeout is over,
            # so n is 1 until the clock starts and never more than what is left.
            msgs = consumer.consume(1 if first_at is None else min(1000, count - got), 0.1)
            if not msgs:
                continue
            now = time.perf_counter()
            bad = sum(1 for m in msgs if m.error() is not None)
            errors += bad
            got += len(msgs) - bad
            if first_at is None:
                first_at = now
                continue
            timed += len(msgs) - bad
            last_at = now
        return got, timed, errors, (last_at - first_at) if first_at is not None else 0.0
    finally:
        consumer.close()


def consume_phase(
    target: Target,
    topic: str,
    partitions: int,
    size: int,
    count: int,
    passes: int,
    max_seconds: float,
) -> Phase:
    """``passes`` consumers in turn read the ``count`` messages; timed spans are summed."""
    cpu0, ccpu0 = cpu_seconds(target.pid), _client_cpu()
    deadline = time.perf_counter() + max_seconds + 30
    got = timed = errors = 0
    elapsed = 0.0
    for _ in range(passes):
        g, t, e, s = _consume_pass(target, topic, partitions, count, deadline)
        got, timed, errors, elapsed = got + g, timed + t, errors + e, elapsed + s
    phase = Phase(
        messages=timed,
        seconds=elapsed,
        broker_cpu_s=cpu_seconds(target.pid) - cpu0,
        client_cpu_s=_client_cpu() - ccpu0,
        errors=errors,
        complete=got >= count * passes,
    )
    _per_unit(phase, got * size)
    if elapsed > 0:
        phase.msg_per_s = timed / elapsed
        phase.mb_per_s = timed * size / elapsed / 1e6
    return phase


def one_run(
    target: Target, size: int, acks: str, args: argparse.Namespace, profile: Path | None
) -> Run:
    run = Run(target.name, size, acks)
    tag = f"{size}B-acks{acks}"
    topic = f"bench-p-{size}-{acks}-{os.getpid()}-{next(_topic_ids)}"
    target.create_topic(topic, 1)
    try:
        count = max(1, min(args.max_messages, int(args.mb * 1e6 // size)))
        with _maybe_profile(target, profile, f"produce-{tag}"):
            run.produce = produce_phase(
                target, topic, size, acks, count, args.max_seconds, args.linger_ms
            )
    finally:
        target.delete_topic(topic)
    if args.consume_mb <= 0:
        nan = float("nan")
        run.consume = Phase(msg_per_s=nan, mb_per_s=nan, broker_cpu_s=nan, client_cpu_s=nan)
        return run
    per_partition = max(1, MOCK_PARTITION_BYTES // size)
    total = min(args.consume_mb * 1e6 / size, args.max_consume_messages)
    partitions = max(1, math.ceil(total / per_partition))
    topic = f"bench-c-{size}-{acks}-{os.getpid()}-{next(_topic_ids)}"
    target.create_topic(topic, partitions)
    try:
        fill_topic(target, topic, partitions, size, per_partition)
        with _maybe_profile(target, profile, f"consume-{tag}"):
            run.consume = consume_phase(
                target,
                topic,
                partitions,
                size,
                partitions * per_partition,
                args.consume_passes,
                args.max_seconds,
            )
    finally:
        target.delete_topic(topic)
    return run


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_profiled: set[str] = set()


def _maybe_profile(target: Target, profile: Path | None, name: str) -> Profiler | _Null:
    """Profile our broker's first run of each case and phase (py-spy costs CPU too)."""
    if profile is None or target.name != "ours" or name in _profiled:
        return _Null()
    _profiled.add(name)
    return Profiler(target.pid, profile / f"throughput-{name}.txt")


def paced_run(target: Target, size: int, acks: str, rate: float, args: argparse.Namespace) -> Phase:
    topic = f"bench-paced-{size}-{acks}-{os.getpid()}-{next(_topic_ids)}"
    target.create_topic(topic, 1)
    try:
        count = int(rate * args.paced_seconds)
        return produce_phase(
            target,
            topic,
            size,
            acks,
            count,
            args.paced_seconds + 5,
            args.linger_ms if args.paced_linger_ms is None else args.paced_linger_ms,
            rate=rate,
        )
    finally:
        target.delete_topic(topic)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Produce/consume throughput, trio-broker vs librdkafka's mock broker."
    )
    p.add_argument("--sizes", default="100,1024,102400", help="message sizes in bytes")
    p.add_argument("--acks", default="1,all", help="acks settings to run (1, all, 0)")
    p.add_argument("--pairs", type=int, default=3, help="ours/mock pairs per case (3)")
    p.add_argument("--mb", type=float, default=1000, help="MB produced per run (1000)")
    p.add_argument("--max-messages", type=int, default=2_000_000, help="most messages per run (2M)")
    p.add_argument(
        "--consume-mb", type=float, default=200, help="MB of the data set read back (200; 0: skip)"
    )
    p.add_argument(
        "--max-consume-messages",
        type=int,
        default=500_000,
        help="most messages in the data set read back (500k)",
    )
    p.add_argument(
        "--consume-passes", type=int, default=3, help="times the data set is read per run (3)"
    )
    p.add_argument(
        "--max-seconds", type=float, default=20, help="most seconds producing per run (20)"
    )
    p.add_argument(
        "--linger-ms",
        type=float,
        default=None,
        help="producer linger.ms (default: librdkafka's, 5 ms)",
    )
    p.add_argument("--paced-case", default="1024:all", help="SIZE:ACKS of the paced latency run")
    p.add_argument(
        "--paced-fraction",
        default="0.5",
        help="paced rate / our peak rate, or several: 0.5,0.6 (0.5)",
    )
    p.add_argument(
        "--paced-seconds", type=float, default=5, help="seconds per paced run (5; 0: skip)"
    )
    p.add_argument(
        "--paced-linger-ms", type=float, default=None, help="linger.ms of the paced runs"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="short run: --mb 200 --consume-mb 50 --consume-passes 2 --paced-seconds 3",
    )
    p.add_argument(
        "--broker-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra trio-broker setting (repeatable)",
    )
    p.add_argument(
        "--data-dir",
        default=default_data_dir(),
        help="where our broker's log directory goes (default: /dev/shm, a tmpfs, if any)",
    )
    p.add_argument("--profile", type=Path, help="write py-spy profiles of our broker here")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=10,
        help="before each pair, wait up to this many s for other work to stop (10)",
    )
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.mb = min(args.mb, 200)
        args.consume_mb = min(args.consume_mb, 50)
        args.consume_passes = min(args.consume_passes, 2)
        args.paced_seconds = min(args.paced_seconds, 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    acks_list = [a.strip() for a in args.acks.split(",")]
    options = {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "json"
    }
    print(header(TITLE, options), flush=True)
    runs: list[Run] = []
    paced: list[dict[str, Any]] = []
    broker_process = BrokerProcess(args.broker_override, base_dir=args.data_dir)
    with broker_process as broker, MockCluster() as mock:
        ours, ref = Ours(broker), Mock(mock)
        log(f"trio-broker pid {broker.pid} at {broker.bootstrap}; mock pid {mock.pid}")
        for size in sizes:
            for acks in acks_list:
                for pair in range(args.pairs):
                    busy = wait_quiet(args.wait_quiet)
                    for target in (ours, ref):
                        run = one_run(target, size, acks, args, args.profile)
                        run.background_busy = busy
                        runs.append(run)
                        log(
                            f"{size} B acks={acks} pair {pair + 1} {target.name}: "
                            f"produce {run.produce.mb_per_s:.1f} MB/s "
                            f"p99 {run.produce.p99_ms:.1f} ms, "
                            f"consume {run.consume.mb_per_s:.1f} MB/s"
                        )
        paced = run_paced(args, runs, ours, ref)
        ours.close()

    print()
    busiest = max(r.background_busy for r in runs)
    print(f"Other work on the machine before the pairs: at most {busiest:.0%} of the CPUs\n")
    print(results_table(runs))
    print()
    print(ratio_table(runs))
    if paced:
        print()
        print(paced_table(paced))
    write_json(
        args.json,
        TITLE,
        options,
        {"runs": [asdict(r) for r in runs], "summary": summary(runs), "paced": paced},
    )
    return 0


def run_paced(
    args: argparse.Namespace, runs: list[Run], ours: Target, ref: Target
) -> list[dict[str, Any]]:
    if args.paced_seconds <= 0 or not runs:
        return []
    size_s, _, acks = args.paced_case.partition(":")
    size = int(size_s)
    if (size, acks) not in _cases(runs):  # the case was not run: take the first one
        size, acks = runs[0].size, runs[0].acks
    peak = median(r.produce.msg_per_s for r in _runs_of(runs, size, acks, "ours"))
    out: list[dict[str, Any]] = []
    for fraction in [float(f) for f in str(args.paced_fraction).split(",")]:
        rate = peak * fraction
        for pair in range(args.pairs):
            busy = wait_quiet(args.wait_quiet)
            for target in (ours, ref):
                with _maybe_profile(target, args.profile, f"paced-{size}B-acks{acks}-{fraction}"):
                    phase = paced_run(target, size, acks, rate, args)
                row = {
                    "target": target.name,
                    "size": size,
                    "acks": acks,
                    "fraction": fraction,
                    "rate": rate,
                    "background_busy": busy,
                }
                out.append({**row, **asdict(phase)})
                log(
                    f"paced {size} B acks={acks} at {rate:,.0f} msg/s pair {pair + 1} "
                    f"{target.name}: p50 {phase.p50_ms:.2f} ms p99 {phase.p99_ms:.2f} ms"
                )
    return out


def _cases(runs: list[Run]) -> list[tuple[int, str]]:
    seen: dict[tuple[int, str], None] = {}
    for r in runs:
        seen[(r.size, r.acks)] = None
    return list(seen)


def _runs_of(runs: list[Run], size: int, acks: str, target: str) -> list[Run]:
    return [r for r in runs if (r.size, r.acks, r.target) == (size, acks, target)]


def _size_name(size: int) -> str:
    if size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


def summary(runs: list[Run]) -> list[dict[str, Any]]:
    """Per case and target, medians; per case, the median of the per-pair ratios."""
    out = []
    for size, acks in _cases(runs):
        row: dict[str, Any] = {"size": size, "acks": acks}
        mine = _runs_of(runs, size, acks, "ours")
        theirs = _runs_of(runs, size, acks, "mock")
        metrics = (
            "msg_per_s",
            "mb_per_s",
            "p50_ms",
            "p99_ms",
            "broker_cpu_s",
            "client_cpu_s",
            "requests",
            "broker_cpu_us_per_request",
            "broker_cpu_us_per_mb",
        )
        for name, rs in (("ours", mine), ("mock", theirs)):
            for ph in ("produce", "consume"):
                for metric in metrics:
                    values = [getattr(getattr(r, ph), metric) for r in rs]
                    row[f"{name}_{ph}_{metric}"] = median(values)
        for ph in ("produce", "consume"):
            row[f"ratio_{ph}_mb_per_s"] = median(
                getattr(a, ph).mb_per_s / getattr(b, ph).mb_per_s
                for a, b in zip(mine, theirs, strict=False)
                if getattr(b, ph).mb_per_s > 0
            )
        for ph in ("produce", "consume"):
            row[f"ratio_{ph}_cpu_per_mb"] = median(
                getattr(a, ph).broker_cpu_us_per_mb / getattr(b, ph).broker_cpu_us_per_mb
                for a, b in zip(mine, theirs, strict=False)
                if getattr(b, ph).broker_cpu_us_per_mb > 0
            )
        row["ratio_produce_p99"] = median(
            a.produce.p99_ms / b.produce.p99_ms
            for a, b in zip(mine, theirs, strict=False)
            if b.produce.p99_ms > 0
        )
        row["target"] = 0.5 if size < 1024 else 0.8
        row["complete"] = all(r.produce.complete and r.consume.complete for r in mine + theirs)
        out.append(row)
    return out


def results_table(runs: list[Run]) -> str:
    rows = []
    for size, acks in _cases(runs):
        for target in ("ours", "mock"):
            rs = _runs_of(runs, size, acks, target)
            if not rs:
                continue

            def m(ph: str, metric: str, rs: list[Run] = rs) -> float:
                return median(getattr(getattr(r, ph), metric) for r in rs)

            rows.append(
                [
                    _size_name(size),
                    acks,
                    target,
                    len(rs),
                    m("produce", "msg_per_s"),
                    m("produce", "mb_per_s"),
                    m("produce", "p50_ms"),
                    m("produce", "p99_ms"),
                    m("produce", "broker_cpu_s"),
                    m("produce", "client_cpu_s"),
                    m("produce", "requests"),
                    m("produce", "broker_cpu_us_per_request"),
                    m("produce", "broker_cpu_us_per_mb"),
                    m("consume", "msg_per_s"),
                    m("consume", "mb_per_s"),
                    m("consume", "broker_cpu_s"),
                    m("consume", "broker_cpu_us_per_mb"),
                    "yes" if all(r.produce.complete and r.consume.complete for r in rs) else "NO",
                ]
            )
    return "Medians over the runs\n\n" + table(
        [
            "size",
            "acks",
            "broker",
            "runs",
            "prod msg/s",
            "prod MB/s",
            "p50 ms",
            "p99 ms",
            "broker CPU s",
            "client CPU s",
            "prod requests",
            "broker CPU us/req",
            "broker CPU us/MB",
            "cons msg/s",
            "cons MB/s",
            "broker CPU s (cons)",
            "broker CPU us/MB (cons)",
            "complete",
        ],
        rows,
    )


def ratio_table(runs: list[Run]) -> str:
    rows = []
    for row in summary(runs):
        target = row["target"]
        pr, cr = row["ratio_produce_mb_per_s"], row["ratio_consume_mb_per_s"]
        rows.append(
            [
                _size_name(row["size"]),
                row["acks"],
                pr,
                cr,
                row["ratio_produce_p99"],
                row["ratio_produce_cpu_per_mb"],
                row["ratio_consume_cpu_per_mb"],
                f">= {target}",
                _verdict(pr, target) + " / " + _verdict(cr, target),
            ]
        )
    return "Ratio ours/mock (median of the per-pair ratios)\n\n" + table(
        [
            "size",
            "acks",
            "produce MB/s",
            "consume MB/s",
            "p99 (full speed)",
            "broker CPU/MB prod",
            "broker CPU/MB cons",
            "target",
            "met?",
        ],
        rows,
    )


def _verdict(ratio: float, target: float) -> str:
    if ratio != ratio:
        return "-"
    return "yes" if ratio >= target else f"no ({ratio / target:.0%} of target)"


def paced_table(paced: list[dict[str, Any]]) -> str:
    rows = []
    for fraction in sorted({p["fraction"] for p in paced}):
        at = [p for p in paced if p["fraction"] == fraction]
        mine = [p for p in at if p["target"] == "ours"]
        theirs = [p for p in at if p["target"] == "mock"]
        ratio = median(a["p99_ms"] / b["p99_ms"] for a, b in zip(mine, theirs, strict=False))
        verdict = "yes" if ratio <= 2 else f"no ({ratio / 2:.1f}x the allowed)"
        for target, ps in (("ours", mine), ("mock", theirs)):
            rows.append(
                [
                    fraction,
                    target,
                    _size_name(ps[0]["size"]),
                    ps[0]["acks"],
                    ps[0]["rate"],
                    median(p["msg_per_s"] for p in ps),
                    median(p["p50_ms"] for p in ps),
                    median(p["p99_ms"] for p in ps),
                    median(p["broker_cpu_s"] / p["seconds"] for p in ps),
                    ratio if target == "ours" else "",
                    verdict if target == "ours" else "",
                ]
            )
    return "Paced produce at fractions of our median peak msg/s (medians)\n\n" + table(
        [
            "fraction",
            "broker",
            "size",
            "acks",
            "rate msg/s",
            "got msg/s",
            "p50 ms",
            "p99 ms",
            "broker CPU",
            "p99 ours/mock",
            "<= 2?",
        ],
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
