"""The balance job's proofs on real clusters under load (issue 32): does ``balance --apply``
help a skewed cluster, does ``add-broker`` move load onto a new broker within its
throttle, and does ``remove-broker`` empty a broker without losing anything?

Each proof runs a local ZooKeeper and broker processes from this checkout (``ZkCluster``
in ``bench/_balance_parts.py``; ``num.io.threads`` ``--io-threads``, metrics windows of
5 s), measures the cluster as an operator would: ``python -m spark_jobs.scrape --cluster``
for ``--sample-seconds`` (a snapshot a second), then the trends job over what it scraped
(Spark ``local[2]``, buckets of ``--interval`` seconds) writes the ``brokers`` and
``partitions`` tables (``--tables sample``: ``python -m spark_jobs.balance.sample``
measures them instead, without Spark), and runs ``python -m spark_jobs.balance --apply``
(``--engine spark``: ``local[2]``), while the load goes on.

1. **Skew.** Three brokers with one io thread each; broker 0 has a slow disk
   (``--delay-ms``, 10 ms, per storage operation: the log layer's test-only hook,
   ``bench/slow_disk_broker.py``; so that its disk, not the machine's two shared cores,
   is the bottleneck) and is the preferred leader of every partition of a
   ``--partitions`` topic, once at replication factor 3 (every broker holds every
   partition: only leadership can move) and once at 2 (``--rf``). One synchronous
   producer per partition (acks=all, one message in flight, no linger; ``--size``
   bytes). Measured for ``--phase-seconds`` before and after ``balance --apply``:
   acknowledged messages per second, and each broker's io idle ratio and event-loop busy
   ratio (its own 5 s windows, read every second, averaged). Passes if throughput after
   >= 2x before and every broker's io idle ratio is closer to the mean of the three after
   than before.
2. **Add a broker.** Three brokers without delay, a ``--grow-partitions`` topic at
   replication factor 2 filled with ``--fill-mb`` MB of numbered 1 KiB messages, then a
   paced producer (``--rate`` msg/s, acks=all, idempotent) all along. Broker 3 starts;
   ``add-broker 3 --apply --throttle T``: the bytes broker 3's log dirs gain are read
   (DescribeLogDirs) every 0.25 s while it runs: bytes, seconds from the first growth to
   the last, the mean rate and the highest rate over 5 s. The throttle is honoured if the
   copy took at least 90% of the least time the throttle allows: (bytes copied - one
   ``replica.fetch.max.bytes`` per partition moved, which goes before the rate applies)
   / T.
3. **Remove a broker.** On the same cluster and load, ``remove-broker 1 --apply``; then
   broker 1 must hold no replica, stop on SIGTERM (timed), and after 3 s more load every
   acknowledged message is read back: exactly once, at its partition and offset.

Run from the repository (``scripts/test`` sets up ``.venv``; ZooKeeper is Debian's
``zookeeper`` package; 46 minutes on a heavily shared 2-CPU machine, where each trends
job took 4-7 minutes; ``--tables sample`` took 6-10 minutes in earlier runs)::

    .venv/bin/python bench/balance_proof.py [--json out.json]

Every load stops by itself: phases, rates and every wait are bounded by the options.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _balance_parts import NumberedLoad, SyncLoad, ZkCluster, balance, check, tables, until
from _common import default_data_dir, header, log, table, wait_quiet, write_json

TITLE = "balance proof: skew, add-broker, remove-broker under load (3-4 brokers + ZooKeeper)"
FETCH_MAX = 1_048_576  # replica.fetch.max.bytes: what a throttled copy sends before the rate
PEAK_WINDOW_S = 5.0  # the copy's peak rate: over windows this long


def observe(cluster: ZkCluster, load: SyncLoad, seconds: float, topic: str) -> dict[str, Any]:
    """Acknowledgements per second over ``seconds``; each broker's io idle and loop busy
    ratios read every second and averaged; the leaders of ``topic``."""
    ids = sorted(cluster.brokers)
    seen: dict[int, list[tuple[float, float]]] = {i: [] for i in ids}
    a, t0 = load.count(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        time.sleep(1.0)  # one reading a second: the measurement's own pace
        for i in ids:
            m = cluster.metrics(i)
            seen[i].append((m["pools"]["io"]["idle_ratio"], m["event_loop"]["busy_ratio"]))
    elapsed = time.perf_counter() - t0
    leaders = cluster.leaders(topic)
    return {
        "msg_per_s": round((load.count() - a) / elapsed, 1),
        "brokers": {
            i: {
                "io_idle": round(sum(x for x, _ in seen[i]) / len(seen[i]), 3),
                "loop_busy": round(sum(y for _, y in seen[i]) / len(seen[i]), 3),
                "leaders": leaders.get(i, 0),
            }
            for i in ids
        },
    }


def toward_mean(before: dict[str, Any], after: dict[str, Any]) -> dict[int, bool]:
    def distances(phase: dict[str, Any]) -> dict[int, float]:
        idle = {i: b["io_idle"] for i, b in phase["brokers"].items()}
        mean = sum(idle.values()) / len(idle)
        return {i: abs(v - mean) for i, v in idle.items()}

    d0, d1 = distances(before), distances(after)
    return {i: d1[i] < d0[i] for i in d0}


def skew(args: argparse.Namespace, base: Path, rf: int) -> dict[str, Any]:
    base = base / f"skew-rf{rf}"
    cluster = ZkCluster(base, args.session_timeout_ms, args.io_threads)
    try:
        cluster.start([0, 1, 2], {0: args.delay_ms})
        n = args.partitions
        replicas = [[0, 1 + i % 2, 2 - i % 2][:rf] for i in range(n)]
        cluster.create("skew", replicas)
        busy = wait_quiet(args.wait_quiet)
        with SyncLoad(cluster.bootstrap(), "skew", n, args.size) as load:
            time.sleep(args.warmup)  # the producers ramp up before they are measured
            before = observe(cluster, load, args.phase_seconds, "skew")
            log(f"skew, before: {before}")
            trends = base / "skew-trends"
            tables(cluster, trends, args.tables, args.sample_seconds, args.interval)
            doc, out, status = balance(
                cluster,
                trends,
                args.engine,
                ["--effect-seconds", str(args.effect_seconds)],
                ["balance"],
            )
            log(f"balance --apply exited {status}:\n{out}")
            time.sleep(6)  # the brokers' 5 s metrics windows: only the new placement in them
            after = observe(cluster, load, args.phase_seconds, "skew")
            log(f"skew, after: {after}")
        ratio = after["msg_per_s"] / before["msg_per_s"] if before["msg_per_s"] else 0.0
        closer = toward_mean(before, after)
        return {
            "rf": rf,
            "background_busy": round(busy, 3),
            "before": before,
            "after": after,
            "throughput_ratio": round(ratio, 2),
            "io_idle_toward_mean": closer,
            "passed": ratio >= 2.0 and all(closer.values()),
            "delivery_errors": load.errors,
            "plan": doc["summary"],
            "unmet_goals": doc["unmet_goals"],
            "execution": {
                k: doc.get("execution", {}).get(k) for k in ("status", "before", "after")
            },
            "exit_status": status,
        }
    finally:
        cluster.stop()


class SizeWatch:
    """Broker ``broker``'s log dirs' total size every ``every`` s (DescribeLogDirs)."""

    def __init__(self, bootstrap: str, broker: int, every: float = 0.25) -> None:
        from kafka import KafkaAdminClient

        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
        self.broker, self.every = broker, every
        self.points: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _size(self) -> int:
        (answer,) = self.admin.describe_log_dirs(brokers=[self.broker])
        return sum(
            int(p["partition_size"])
            for d in answer["log_dirs"]
            for t in d.get("topics", [])
            for p in t["partitions"]
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.points.append((time.perf_counter(), self._size()))
            except Exception as exc:  # a slow answer under load: the next reading will do
                log(f"log dir size of broker {self.broker}: {exc}")
            self._stop.wait(self.every)

    def __enter__(self) -> SizeWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self.admin.close()

    def copy(self) -> dict[str, Any]:
        pts = self.points
        if len(pts) < 2:
            return {"bytes": 0, "seconds": 0.0, "bytes_per_s": 0.0, "peak_5s_bytes_per_s": 0.0}
        grew = [i for i in range(1, len(pts)) if pts[i][1] > pts[i - 1][1]]
        if not grew:
            return {"bytes": 0, "seconds": 0.0, "bytes_per_s": 0.0, "peak_5s_bytes_per_s": 0.0}
        start, end = pts[grew[0] - 1], pts[grew[-1]]
        seconds = end[0] - start[0]
        peak = 0.0
        for i, (t, size) in enumerate(pts):
            later = [(u, s) for u, s in pts[i:] if u - t >= PEAK_WINDOW_S]
            if later:
                peak = max(peak, (later[0][1] - size) / (later[0][0] - t))
        copied = end[1] - start[1]
        return {
            "bytes": copied,
            "seconds": round(seconds, 2),
            "bytes_per_s": round(copied / seconds) if seconds else 0,
            "peak_5s_bytes_per_s": round(peak),
        }


def grow_and_shrink(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    cluster = ZkCluster(base / "grow", args.session_timeout_ms, args.io_threads)
    result: dict[str, Any] = {}
    try:
        cluster.start([0, 1, 2])
        n = args.grow_partitions
        cluster.create("grow", [[i % 3, (i + 1) % 3] for i in range(n)])
        load = NumberedLoad(cluster.bootstrap(), "grow", 1024, args.rate, args.max_load_seconds)
        result["fill_seconds"] = round(load.fill(int(args.fill_mb * 1e6 / 1024)), 2)
        result["background_busy"] = round(wait_quiet(args.wait_quiet), 3)
        load.start()
        cluster.add(3)
        trends = base / "grow-trends"
        tables(cluster, trends, args.tables, args.sample_seconds, args.interval)
        options = ["--throttle", str(args.throttle), "--max-concurrent-moves", str(args.moves)]
        options += ["--effect-seconds", str(args.effect_seconds)]
        with SizeWatch(cluster.bootstrap(), 3) as watch:
            doc, out, status = balance(cluster, trends, args.engine, options, ["add-broker", "3"])
        log(f"add-broker 3 --apply exited {status}:\n{out}")
        copy = watch.copy()
        moved = [m for m in doc["moves"] if 3 in m["adding"]]
        least = max(0.0, (copy["bytes"] - len(moved) * FETCH_MAX) / args.throttle)
        result["add"] = {
            "exit_status": status,
            "plan": doc["summary"],
            "unmet_goals": doc["unmet_goals"],
            "partitions_moved_to_3": len(moved),
            "execution": {
                k: doc.get("execution", {}).get(k) for k in ("status", "before", "after")
            },
            "replicas_on_3": cluster.replicas_on(3),
            "throttle_bytes_per_s": args.throttle,
            "copy": copy,
            "least_seconds_at_throttle": round(least, 2),
            "throttle_honoured": copy["seconds"] >= 0.9 * least and copy["bytes"] > 0,
        }
        trends2 = base / "shrink-trends"
        tables(cluster, trends2, args.tables, args.sample_seconds, args.interval)
        doc2, out2, status2 = balance(
            cluster, trends2, args.engine, options, ["remove-broker", "1"]
        )
        log(f"remove-broker 1 --apply exited {status2}:\n{out2}")
        left = cluster.replicas_on(1)
        proc = cluster.brokers[1].proc
        assert proc is not None
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        stop_s = time.perf_counter() - t0
        until("broker 1 gone from the cluster", lambda: 1 not in cluster.live(), 60)
        time.sleep(args.after_seconds)  # the load goes on without broker 1
        load.stop()
        result["remove"] = {
            "exit_status": status2,
            "plan": doc2["summary"],
            "unmet_goals": doc2["unmet_goals"],
            "execution": {
                k: doc2.get("execution", {}).get(k) for k in ("status", "before", "after")
            },
            "replicas_left_on_1": left,
            "broker_1_stop_seconds": round(stop_s, 2),
            "broker_1_exit_code": code,
        }
        result["check"] = check(load, cluster.bootstrap(), "grow")
        c = result["check"]
        result["passed"] = (
            result["add"]["throttle_honoured"]
            and result["add"]["replicas_on_3"] > 0
            and left == 0
            and code == 0
            and c["missing"] == 0
            and c["duplicates"] == 0
            and c["offset_differs"] == 0
        )
        return result
    finally:
        cluster.stop()


def effect_rows(execution: dict[str, Any]) -> list[list[Any]]:
    before, after = execution.get("before") or {}, execution.get("after") or {}
    rows = []
    for b in sorted(set(before) | set(after), key=int):
        x, y = before.get(b, {}), after.get(b, {})
        rows.append(
            [b]
            + [f"{x.get(k, '-')} -> {y.get(k, '-')}" for k in ("loop_busy_ratio", "io_idle_ratio")]
            + [
                f"{x.get(k, '-')} -> {y.get(k, '-')}"
                for k in ("bytes_in_per_s", "leaders", "replicas")
            ]
        )
    return rows


def report(results: dict[str, Any]) -> None:
    for key in sorted(k for k in results if k.startswith("skew")):
        s = results[key]
        print(
            f"\n1. Skew: every partition led by broker 0, whose disk is slow; "
            f"replication factor {s['rf']}\n"
        )
        rows = []
        for phase in ("before", "after"):
            p = s[phase]
            rows.append(
                [phase, p["msg_per_s"]]
                + [p["brokers"][i]["leaders"] for i in sorted(p["brokers"])]
                + [p["brokers"][i]["io_idle"] for i in sorted(p["brokers"])]
                + [p["brokers"][i]["loop_busy"] for i in sorted(p["brokers"])]
            )
        ids = sorted(s["before"]["brokers"])
        print(
            table(
                ["phase", "msg/s"]
                + [f"leaders {i}" for i in ids]
                + [f"io idle {i}" for i in ids]
                + [f"loop busy {i}" for i in ids],
                rows,
            )
        )
        print(
            f"\nthroughput x{s['throughput_ratio']}; io idle closer to the mean: "
            f"{s['io_idle_toward_mean']}; delivery errors {s['delivery_errors']}; "
            f"plan {s['plan']}; execution {s['execution']['status']}; "
            f"{'PASSED' if s['passed'] else 'NOT PASSED'}"
        )
        print("\nthe executor's own measurement (before -> after):\n")
        print(
            table(
                ["broker", "loop busy", "io idle", "bytes in/s", "leaders", "replicas"],
                effect_rows(s["execution"]),
            )
        )
    g = results.get("grow")
    if g:
        a, r, c = g["add"], g["remove"], g["check"]
        print("\n2. add-broker 3 under load\n")
        print(
            table(
                [
                    "moved to 3",
                    "bytes copied",
                    "copy s",
                    "B/s",
                    "peak 5 s B/s",
                    "throttle B/s",
                    "least s at throttle",
                    "honoured",
                    "execution",
                ],
                [
                    [
                        a["partitions_moved_to_3"],
                        a["copy"]["bytes"],
                        a["copy"]["seconds"],
                        a["copy"]["bytes_per_s"],
                        a["copy"]["peak_5s_bytes_per_s"],
                        a["throttle_bytes_per_s"],
                        a["least_seconds_at_throttle"],
                        "yes" if a["throttle_honoured"] else "NO",
                        a["execution"]["status"],
                    ]
                ],
            )
        )
        print("\nthe executor's own measurement (before -> after):\n")
        print(
            table(
                ["broker", "loop busy", "io idle", "bytes in/s", "leaders", "replicas"],
                effect_rows(a["execution"]),
            )
        )
        print("\n3. remove-broker 1 under load, then broker 1 stopped\n")
        print(
            table(
                ["replica moves", "replicas left on 1", "execution", "stop s", "exit code"],
                [
                    [
                        r["plan"]["replica_moves"],
                        r["replicas_left_on_1"],
                        r["execution"]["status"],
                        r["broker_1_stop_seconds"],
                        r["broker_1_exit_code"],
                    ]
                ],
            )
        )
        print("\nread back (every acknowledged message exactly once?)\n")
        print(table(list(c), [list(c.values())]))
        print(f"\n{'PASSED' if g['passed'] else 'NOT PASSED'}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--delay-ms", type=float, default=10.0, help="broker 0's storage delay")
    p.add_argument("--io-threads", type=int, default=1, help="num.io.threads of every broker")
    p.add_argument("--partitions", type=int, default=12, help="skew: partitions (= producers)")
    p.add_argument("--size", type=int, default=200, help="skew: message bytes")
    p.add_argument(
        "--rf", default="3,2", help="skew: replication factors, one proof each (default 3,2)"
    )
    p.add_argument("--warmup", type=float, default=3.0)
    p.add_argument("--phase-seconds", type=float, default=15.0)
    p.add_argument("--sample-seconds", type=float, default=10.0)
    p.add_argument("--interval", type=float, default=2.0)
    p.add_argument("--effect-seconds", type=float, default=5.0)
    p.add_argument("--grow-partitions", type=int, default=6)
    p.add_argument("--fill-mb", type=float, default=24.0)
    p.add_argument("--rate", type=float, default=200.0, help="grow: paced msg/s")
    p.add_argument("--throttle", type=int, default=2_000_000, help="bytes/s")
    p.add_argument("--moves", type=int, default=2, help="--max-concurrent-moves")
    p.add_argument("--after-seconds", type=float, default=3.0)
    p.add_argument("--max-load-seconds", type=float, default=900.0)
    p.add_argument("--session-timeout-ms", type=int, default=4000)
    p.add_argument("--engine", choices=("spark", "python"), default="spark")
    p.add_argument(
        "--tables",
        choices=("sample", "trends"),
        default="trends",
        help="where the balance job's tables come from: spark_jobs.scrape --cluster and "
        "the trends job (default), or spark_jobs.balance.sample (no Spark)",
    )
    p.add_argument("--only", choices=("skew", "grow"), help="run one proof only")
    p.add_argument("--data-dir", default=default_data_dir())
    p.add_argument("--wait-quiet", type=float, default=30.0)
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args()
    options = vars(args)
    print(header(TITLE, options))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="balance-proof-", dir=args.data_dir) as tmp:
        if args.only in (None, "skew"):
            for rf in (int(x) for x in args.rf.split(",")):
                results[f"skew_rf{rf}"] = skew(args, Path(tmp), rf)
        if args.only in (None, "grow"):
            results["grow"] = grow_and_shrink(args, Path(tmp))
    report(results)
    write_json(args.json, TITLE, options, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
