"""The cost of a partition: one broker process holding N partitions, N in a list.

What it measures, for each N of ``--counts`` (1000, 5000, 10000, 20000), on a fresh broker
(``bench/_common.BrokerProcess``: its defaults, port 0, the open-files limit raised to the
hard limit, its log dir under ``--data-dir``, tmpfs by default):

* **start, empty**: ``python -m trio_broker`` started to its `` started: `` line with no
  partition (process start, imports and start-up: the floor the restarts below stand on);
* **create**: N partitions as topics of ``--per-topic`` (100) partitions, through
  confluent-kafka's AdminClient, ``--topics-per-request`` (10) topics a CreateTopics
  request, one request after another; wall time from the first request to the last answer;
* **metadata**: a full Metadata request (every topic) by confluent-kafka's AdminClient
  (``list_topics``), the median of ``--metadata-repeats`` (5); librdkafka's own parsing
  of the answer is in the figure;
* **one each**: one ``--message-bytes`` (100) message to every partition from one
  confluent-kafka producer (acks=all, linger.ms 5, its metadata fetched first), from the
  first ``produce`` to the end of ``flush``;
* **RSS** (``/proc/<pid>/status``) and **open fds** (``/proc/<pid>/fd``, all of the
  process's descriptors) after that, and again once each restart below is ready;
* **stop**: SIGTERM to the process's exit;
* beside each stop and start, the broker's **CPU seconds** in it (``/proc/<pid>/stat`` at
  ready; the rusage of the reaped process for a stop): on a machine shared with other work
  these move less than wall time; and the broker's own figures where it logs them
  (``... partitions closed in``, ``... partitions loaded in``: the logs alone, without
  the process's start);
* **clean restart**: a new process on the same data to its `` started: `` line (so it
  includes the empty start's floor), then every partition's high watermark is read back
  (ListOffsets) and must be 1;
* **kill -9 restart**: SIGKILL of that process, then the same: a start that must recover.

Then fan-out (issue 33's wide produce), on a fresh broker and on librdkafka's mock cluster
(``bench/mock_cluster.py``, the C mock inside the confluent-kafka wheel, in its own
process) in the same run: ``--fanout-partitions`` (2000) partitions in topics of
``--per-topic``; one producer (acks=all, linger.ms 5, its metadata fetched first) sends one
``--message-bytes`` message to each partition and flushes, ``--fanout-rounds`` (5) times;
each round's wall time is reported, the first round against the median of the later ones,
and ours against the mock's (messages a second over all rounds). Then one consumer
assigned every partition from offset 0 reads every message back (fetch): time to the last.
The fan-out runs ``--fanout-pairs`` (1) times, ours then the mock.

Starts include the interpreter's imports. Unless ``--from-source``, the package's bytecode
is compiled first (``compileall`` into the checkout's ``__pycache__``, as ``pip install``
does for an installed broker), so that a start does not compile every module from source:
an environment with ``PYTHONDONTWRITEBYTECODE`` set never caches it, and each start then
pays some 0.5 s of CPU for it. ``--from-source`` removes the cached bytecode instead. The
header says which (``bytecode``).

``--open-files-max`` F runs every broker with ``log.open.files.max=F`` (our key: an LRU
keeps at most F segment files open; the rest are reopened when used).

Bounds: a refusal before anything starts when an N would need more descriptors than the
hard ``RLIMIT_NOFILE`` gives a broker (three a partition, as ``trio_broker.log.descriptors``
counts them, or the ``--open-files-max`` bound if lower, plus the headroom it keeps): the
message names the limit and the largest N that fits. Every wait has a deadline
(``--timeout``, 600 s, per phase), and every load is a fixed count of messages.

Run from the repository::

    .venv/bin/python bench/partitions.py --counts 1000,5000 --json out.json
    .venv/bin/python bench/partitions.py --counts 200 --fanout-partitions 200   # quick
    .venv/bin/python bench/partitions.py --counts 10000,20000 --open-files-max 4500 \
        --fanout-partitions 0
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from _common import (
    BrokerProcess,
    MockCluster,
    cpu_seconds,
    default_data_dir,
    fmt,
    header,
    log,
    median,
    rss_bytes,
    table,
    wait_quiet,
    write_json,
)

from trio_broker.log.descriptors import FILES_PER_SEGMENT, headroom

TITLE = "partitions: the cost of a partition on one broker"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--counts", default="1000,5000,10000,20000", help="partition counts N")
    p.add_argument("--per-topic", type=int, default=100, help="partitions a topic")
    p.add_argument("--topics-per-request", type=int, default=10)
    p.add_argument("--metadata-repeats", type=int, default=5)
    p.add_argument("--message-bytes", type=int, default=100)
    p.add_argument("--fanout-partitions", type=int, default=2000, help="0: no fan-out")
    p.add_argument("--fanout-rounds", type=int, default=5)
    p.add_argument("--fanout-pairs", type=int, default=1)
    p.add_argument("--override", action="append", default=[], help="broker key=value")
    p.add_argument(
        "--open-files-max", type=int, default=None, help="log.open.files.max (default: none)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a phase may take")
    p.add_argument("--data-dir", default=default_data_dir())
    p.add_argument("--wait-quiet", type=float, default=30.0)
    p.add_argument("--json", help="write the results here")
    p.add_argument(
        "--from-source",
        action="store_true",
        help="remove the package's cached bytecode first instead (with PYTHONDONTWRITEBYTECODE "
        "set, every start then compiles it; without, the first start writes it again)",
    )
    args = p.parse_args(argv)
    args.counts = [int(c) for c in args.counts.split(",") if c.strip()]
    if not args.counts or min(args.counts) < 1 or args.per_topic < 1:
        p.error("--counts and --per-topic must be positive")
    if args.open_files_max is not None:
        if args.open_files_max < 3:
            p.error("--open-files-max must be at least 3")
        args.override = [*args.override, f"log.open.files.max={args.open_files_max}"]
    return args


def largest_fitting(bound: int | None = None) -> tuple[int, int]:
    """The hard open-files limit a broker gets, and the most partitions it holds then
    (any number when the ``log.open.files.max`` bound fits in the limit)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 1 << 20 if hard == resource.RLIM_INFINITY else int(hard)
    if bound is not None and bound <= limit - headroom(limit):
        return limit, 1 << 62
    return limit, (limit - headroom(limit)) // FILES_PER_SEGMENT


def refusal(counts: list[int], fanout: int, bound: int | None = None) -> str | None:
    limit, most = largest_fitting(bound)
    too_many = [n for n in [*counts, fanout] if n > most]
    if not too_many:
        return None
    return (
        f"refused: {max(too_many):,} partitions need {max(too_many) * FILES_PER_SEGMENT:,} "
        f"open files ({FILES_PER_SEGMENT} a partition) and the broker keeps "
        f"{headroom(limit):,} for the rest, but the hard RLIMIT_NOFILE here is {limit:,}: "
        f"at most {most:,} partitions fit (raise `ulimit -Hn`, ask for fewer with --counts, "
        f"or bound the open segment files with --open-files-max)"
    )


def _packages() -> list[str]:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [os.path.join(repo, name) for name in ("trio_broker", "admin")]


def compile_bytecode() -> str:
    """The package's bytecode written beside its sources, as an installed broker has it;
    what the broker's starts will run from."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *_packages()],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return "compiled (compileall)"


def remove_bytecode() -> str:
    """The package's cached bytecode removed: starts compile it (``--from-source``)."""
    for package in _packages():
        for folder, dirs, _ in os.walk(package):
            if "__pycache__" in dirs:
                shutil.rmtree(os.path.join(folder, "__pycache__"))
                dirs.remove("__pycache__")
    return "from source (cached bytecode removed)"


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def topic_names(prefix: str, partitions: int, per_topic: int) -> list[tuple[str, int]]:
    """(name, partition count) of the topics holding ``partitions`` in all."""
    out: list[tuple[str, int]] = []
    left, i = partitions, 0
    while left > 0:
        out.append((f"{prefix}{i:04d}", min(per_topic, left)))
        left -= per_topic
        i += 1
    return out


def create_topics(
    bootstrap: str, topics: list[tuple[str, int]], per_request: int, timeout: float
) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    began = time.monotonic()
    for i in range(0, len(topics), per_request):
        chunk = [NewTopic(name, count, 1) for name, count in topics[i : i + per_request]]
        futures = admin.create_topics(chunk, operation_timeout=timeout, request_timeout=timeout)
        for future in futures.values():
            future.result(timeout)
    return time.monotonic() - began


def metadata_ms(bootstrap: str, repeats: int, expect: int, timeout: float) -> float:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    times = []
    for _ in range(repeats):
        began = time.monotonic()
        md = admin.list_topics(timeout=timeout)
        times.append((time.monotonic() - began) * 1000)
        got = sum(len(t.partitions) for n, t in md.topics.items() if not n.startswith("__"))
        if got != expect:
            raise RuntimeError(f"metadata lists {got} partitions, {expect} expected")
    return median(times)


def producer(bootstrap: str) -> Any:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    p.list_topics(timeout=60)  # its metadata first: the figure is of the sends
    return p


def send_round(
    p: Any, topics: list[tuple[str, int]], payload: bytes, timeout: float
) -> tuple[float, int]:
    """One message to each partition, flushed: (seconds, delivery errors)."""
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    sent = 0
    began = time.monotonic()
    for name, count in topics:
        for partition in range(count):
            p.produce(name, payload, partition=partition, on_delivery=delivered)
            sent += 1
        p.poll(0)
    left = p.flush(timeout)
    elapsed = time.monotonic() - began
    if left:
        raise RuntimeError(f"{left} of {sent} messages not delivered within {timeout} s")
    return elapsed, len(errors)


def high_watermarks(bootstrap: str, topics: list[tuple[str, int]], timeout: float) -> list[int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = {
        TopicPartition(name, i): OffsetSpec.latest() for name, count in topics for i in range(count)
    }
    futures = admin.list_offsets(request, request_timeout=timeout)
    return [f.result(timeout).offset for f in futures.values()]


def timed_start(broker: BrokerProcess, timeout: float) -> tuple[float, float]:
    """Start to the `` started: `` line: (wall seconds, the broker's CPU seconds)."""
    began = time.monotonic()
    broker.start(timeout)
    return time.monotonic() - began, cpu_seconds(broker.pid)


def timed_stop(broker: BrokerProcess, sig: int, timeout: float) -> tuple[float, float]:
    """Signal to exit: (wall seconds, the broker's CPU seconds in between, from its
    rusage as it is reaped)."""
    proc = broker.proc
    assert proc is not None
    cpu_before = cpu_seconds(proc.pid)
    guard = threading.Timer(timeout, proc.kill)  # bounded: a stuck stop is killed
    guard.start()
    began = time.monotonic()
    proc.send_signal(sig)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        guard.cancel()
    elapsed = time.monotonic() - began
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code  # reaped here: Popen must not wait for it again
    if elapsed >= timeout:
        raise RuntimeError(f"the broker did not stop within {timeout} s of {sig!r}")
    if sig == signal.SIGTERM and code != 0:
        raise RuntimeError(f"the broker exited {code} on SIGTERM")
    return elapsed, usage.ru_utime + usage.ru_stime - cpu_before


def log_seconds(lines: list[str], what: str) -> float:
    """The broker's own figure from its log (``... partitions loaded in 1.23 s``), summed
    over log dirs; NaN when it does not log one (an older broker)."""
    found = re.findall(rf"partitions {what} in ([0-9.]+) s", "".join(lines))
    return sum(float(s) for s in found) if found else float("nan")


def measure_count(args: argparse.Namespace, n: int) -> dict[str, Any]:
    topics = topic_names("p", n, args.per_topic)
    payload = b"m" * args.message_bytes
    row: dict[str, Any] = {
        "partitions": n,
        "topics": len(topics),
        "open_files_max": args.open_files_max,
    }
    broker = BrokerProcess(args.override, base_dir=args.data_dir)
    try:
        row["start_empty_s"], row["start_empty_cpu_s"] = timed_start(broker, args.timeout)
        log(f"N={n}: creating {len(topics)} topics")
        row["create_s"] = create_topics(
            broker.bootstrap, topics, args.topics_per_request, args.timeout
        )
        row["metadata_ms"] = metadata_ms(broker.bootstrap, args.metadata_repeats, n, args.timeout)
        p = producer(broker.bootstrap)
        row["one_each_s"], errors = send_round(p, topics, payload, args.timeout)
        del p  # no client left to retry a stopped broker
        gc.collect()
        if errors:
            raise RuntimeError(f"{errors} delivery errors sending one message to each partition")
        row["rss_mb"] = rss_bytes(broker.pid) / 2**20
        row["fds"] = open_fds(broker.pid)
        log(f"N={n}: stop and restarts")
        row["stop_s"], row["stop_cpu_s"] = timed_stop(broker, signal.SIGTERM, args.timeout)
        row["logs_closed_s"] = log_seconds(broker.output, "closed")
        seen = len(broker.output)
        row["clean_restart_s"], row["clean_restart_cpu_s"] = timed_start(broker, args.timeout)
        row["clean_load_s"] = log_seconds(broker.output[seen:], "loaded")
        row["fds_clean_restart"] = open_fds(broker.pid)
        marks = high_watermarks(broker.bootstrap, topics, args.timeout)
        row["clean_restart_records_ok"] = marks.count(1) == n
        broker.proc.kill()  # type: ignore[union-attr]
        broker.proc.wait(args.timeout)  # type: ignore[union-attr]
        seen = len(broker.output)
        row["kill9_restart_s"], row["kill9_restart_cpu_s"] = timed_start(broker, args.timeout)
        row["kill9_load_s"] = log_seconds(broker.output[seen:], "loaded")
        row["fds_kill9_restart"] = open_fds(broker.pid)
        marks = high_watermarks(broker.bootstrap, topics, args.timeout)
        row["kill9_restart_records_ok"] = marks.count(1) == n
        row["recovery_logged"] = any("recovering" in line for line in broker.output[seen:])
    finally:
        broker.stop(args.timeout)
    log(f"N={n}: {row}")
    return row


def fanout_on(
    args: argparse.Namespace, target: str, bootstrap: str, topics: list[tuple[str, int]]
) -> dict[str, Any]:
    from confluent_kafka import Consumer, TopicPartition

    payload = b"f" * args.message_bytes
    p = producer(bootstrap)
    rounds = []
    for _ in range(args.fanout_rounds):
        seconds, errors = send_round(p, topics, payload, args.timeout)
        if errors:
            raise RuntimeError(f"{target}: {errors} delivery errors in fan-out")
        rounds.append(seconds)
    del p
    gc.collect()
    total = sum(c for _, c in topics)
    expected = total * args.fanout_rounds
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "fanout-reader",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
        }
    )
    try:
        c.assign([TopicPartition(n, i, 0) for n, count in topics for i in range(count)])
        read = 0
        began = time.monotonic()
        deadline = began + args.timeout
        while read < expected and time.monotonic() < deadline:
            for m in c.consume(10_000, 0.05):
                if m.error() is None:
                    read += 1
        fetch_s = time.monotonic() - began
    finally:
        c.close()
    if read < expected:
        raise RuntimeError(f"{target}: read {read} of {expected} fan-out messages")
    later = median(rounds[1:]) if len(rounds) > 1 else float("nan")
    return {
        "target": target,
        "rounds_s": rounds,
        "first_round_s": rounds[0],
        "later_rounds_median_s": later,
        "first_over_later": rounds[0] / later,
        "produce_msg_per_s": expected / sum(rounds),
        "fetch_s": fetch_s,
        "fetch_msg_per_s": expected / fetch_s,
    }


def measure_fanout(args: argparse.Namespace) -> list[dict[str, Any]]:
    topics = topic_names("f", args.fanout_partitions, args.per_topic)
    runs = []
    for pair in range(args.fanout_pairs):
        wait_quiet(args.wait_quiet)
        with BrokerProcess(args.override, base_dir=args.data_dir) as broker:
            create_topics(broker.bootstrap, topics, args.topics_per_request, args.timeout)
            runs.append({"pair": pair, **fanout_on(args, "ours", broker.bootstrap, topics)})
        with MockCluster() as mock:
            for name, count in topics:
                mock.create_topic(name, count)
            runs.append({"pair": pair, **fanout_on(args, "mock", mock.bootstrap, topics)})
        log(f"fan-out pair {pair}: {runs[-2]} {runs[-1]}")
    return runs


def report(rows: list[dict[str, Any]], fanout: list[dict[str, Any]]) -> str:
    out = [
        table(
            [
                "partitions",
                "start empty s",
                "create s",
                "ms/partition",
                "Metadata ms",
                "one each s",
                "RSS MB",
                "fds",
                "fds restarted (clean, kill -9)",
                "SIGTERM stop s (CPU)",
                "clean restart s (CPU)",
                "kill -9 restart s (CPU)",
                "start empty CPU s",
                "logs closed s",
                "clean load s",
                "kill -9 load s",
                "read back",
            ],
            [
                [
                    r["partitions"],
                    r["start_empty_s"],
                    r["create_s"],
                    r["create_s"] * 1000 / r["partitions"],
                    r["metadata_ms"],
                    r["one_each_s"],
                    r["rss_mb"],
                    r["fds"],
                    f"{r['fds_clean_restart']}, {r['fds_kill9_restart']}",
                    f"{fmt(r['stop_s'])} ({fmt(r['stop_cpu_s'])})",
                    f"{fmt(r['clean_restart_s'])} ({fmt(r['clean_restart_cpu_s'])})",
                    f"{fmt(r['kill9_restart_s'])} ({fmt(r['kill9_restart_cpu_s'])})",
                    r["start_empty_cpu_s"],
                    r["logs_closed_s"],
                    r["clean_load_s"],
                    r["kill9_load_s"],
                    "ok"
                    if r["clean_restart_records_ok"] and r["kill9_restart_records_ok"]
                    else "LOST",
                ]
                for r in rows
            ],
        )
    ]
    if fanout:
        out.append("")
        out.append(
            table(
                [
                    "pair",
                    "target",
                    "round 1 s",
                    "later rounds s (median)",
                    "first/later",
                    "produce msg/s",
                    "fetch s",
                    "fetch msg/s",
                ],
                [
                    [
                        r["pair"],
                        r["target"],
                        r["first_round_s"],
                        r["later_rounds_median_s"],
                        r["first_over_later"],
                        r["produce_msg_per_s"],
                        r["fetch_s"],
                        r["fetch_msg_per_s"],
                    ]
                    for r in fanout
                ],
            )
        )
        out.append("")
        out.append("ours/mock: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios(fanout).items()))
    return "\n".join(out)


def ratios(fanout: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over pairs of ours/mock: produce and fetch messages a second."""
    pairs = {r["pair"] for r in fanout}
    out = {}
    for key in ("produce_msg_per_s", "fetch_msg_per_s"):
        per_pair = []
        for pair in pairs:
            ours = next(r for r in fanout if r["pair"] == pair and r["target"] == "ours")
            mock = next(r for r in fanout if r["pair"] == pair and r["target"] == "mock")
            per_pair.append(ours[key] / mock[key])
        out[key] = median(per_pair)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    refused = refusal(args.counts, args.fanout_partitions, args.open_files_max)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    bytecode = remove_bytecode() if args.from_source else compile_bytecode()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        bytecode += ", PYTHONDONTWRITEBYTECODE set"
    options = {k: v for k, v in vars(args).items() if k != "json"} | {"bytecode": bytecode}
    print(header(TITLE, options))
    rows = []
    for n in args.counts:
        busy = wait_quiet(args.wait_quiet)
        rows.append({**measure_count(args, n), "machine_busy_before": busy})
    fanout = measure_fanout(args) if args.fanout_partitions else []
    print(report(rows, fanout))
    results = {"counts": rows, "fanout": fanout, "fanout_ratios": ratios(fanout) if fanout else {}}
    write_json(args.json, "partitions", options, results)
    ok = all(r["clean_restart_records_ok"] and r["kill9_restart_records_ok"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
