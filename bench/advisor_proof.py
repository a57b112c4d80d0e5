"""The advisor's proof on real workloads: does the advice it applies help, and does it
hold back when no pool can?

What is measured, in three phases, each observed for ``--phase-seconds`` by the real
scraper, trends job (spark-submit, ``local[2]``) and advisor (``--apply`` through the
admin API):

1. **storage-bound, mis-sized**: a broker whose every storage operation takes
   ``--delay-ms`` (2 ms: ``bench/slow_disk_broker.py``, the log layer's test-only hook, as
   a slow disk would) starts with ``num.io.threads=1``; ``--producers`` confluent-kafka
   producers (acks=all, one request in flight each, one partition each, 100-byte
   messages) write as fast as it answers. Produce requests per second and the Produce
   p99 (the broker's own, over its 5 s metrics window) are read from ``/v1/metrics``.
   The advisor then runs and applies what it recommends.
2. **storage-bound, as advised**: the same load on the resized broker; the same figures.
3. **CPU-bound**: a broker with no added delay and ``num.io.threads=8``, loaded by three
   processes of eight producers each (one message per request, at nice 19 so that the
   broker gets a core whenever it wants one) until its event loop is saturated; the
   advisor's advice is printed (it must change no pool and say CPU-bound).

Run from the repository (``scripts/test`` sets up ``.venv``; about 4 minutes)::

    .venv/bin/python bench/advisor_proof.py [--phase-seconds 20] [--json out.json]

Every load stops by itself (bounded by ``--phase-seconds``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import REPO, BrokerProcess, header, log, table, write_json
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

BUCKET_S = 5
VENV_BIN = Path(sys.executable).parent


def get(url: str) -> Any:
    with __import__("urllib.request").request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def spark_env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }


def run(cmd: list[str], timeout: float) -> str:
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=spark_env()
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed:\n{done.stderr[-3000:]}")
    return done.stdout


def scrape(admin: str, out: Path, seconds: float) -> None:
    cmd = [sys.executable, "-m", "spark_jobs.scrape", "--admin", admin, "--out", str(out)]
    cmd += ["--interval", "1", "--duration", str(int(seconds))]
    run(cmd, seconds + 60)


def trends(scraped: Path, out: Path) -> None:
    cmd = [str(VENV_BIN / "spark-submit"), "--master", "local[2]"]
    cmd += ["--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"]
    cmd += [str(REPO / "spark_jobs" / "trends.py"), "--in", str(scraped), "--out", str(out)]
    cmd += ["--bucket-seconds", str(BUCKET_S), "--trend-window-seconds", "30"]
    run(cmd, 300)


def advise(out: Path, admin: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "spark_jobs.advise", "--in", str(out), "--json", "--apply"]
    cmd += ["--admin", admin, "--lookback-seconds", "60", "--min-buckets", "3"]
    cmd += ["--max-step", "16"]
    doc: dict[str, Any] = json.loads(run(cmd, 120))
    return doc


class StorageLoad:
    """``count`` producers, acks=all, one request in flight each, one partition each."""

    def __init__(self, bootstrap: str, count: int) -> None:
        self.stop = threading.Event()
        self.errors: list[Any] = []
        self.threads = [
            threading.Thread(target=self._run, args=(bootstrap, i), daemon=True)
            for i in range(count)
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
        while not self.stop.is_set():
            try:
                p.produce("load", value=b"x" * 100, partition=partition, on_delivery=self._done)
            except BufferError:
                p.poll(0.001)
            p.poll(0.001)
        p.flush(30)

    def _done(self, err: Any, _msg: Any) -> None:
        if err is not None:
            self.errors.append(err)

    def __enter__(self) -> StorageLoad:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)


def observe(admin: str, scraped: Path, seconds: float) -> dict[str, Any]:
    """Scrape for ``seconds``; the Produce rate and p99 the broker saw meanwhile."""
    start = get(admin + "/v1/metrics")
    began = time.monotonic()
    scrape(admin, scraped, seconds)
    end = get(admin + "/v1/metrics")
    elapsed = time.monotonic() - began
    produce = end["requests"]["Produce"]
    produced = produce["count"] - start["requests"]["Produce"]["count"]
    return {
        "produce_per_s": round(produced / elapsed),
        "produce_p99_ms": produce["total_time_ms"]["p99"],
        "io_idle_ratio": round(end["pools"]["io"]["idle_ratio"], 3),
        "loop_busy_ratio": end["event_loop"]["busy_ratio"],
        "io_threads": end["pools"]["io"]["size"],
    }


def brief(recs: list[dict[str, Any]]) -> list[str]:
    return [
        f"[{r['status']}] {r['setting']} {r['current']} -> {r['recommended']}: {r['reason']}"
        for r in recs
    ]


def storage_bound(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    broker = BrokerProcess(
        ["num.io.threads=1", "admin.listeners=http://127.0.0.1:0", "metrics.window.seconds=5"],
        storage_delay_ms=args.delay_ms,
    ).start()
    admin = broker.admin_url
    try:
        kafka_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        kafka_admin.create_topics([NewTopic("load", args.producers, 1)])["load"].result(10)
        scraped, out = work / "scraped", work / "trends"
        with StorageLoad(broker.bootstrap, args.producers) as load:
            time.sleep(3)  # the load ramps up before it is observed
            before = observe(admin, scraped, args.phase_seconds)
        log(f"storage-bound, io threads 1: {before}")
        trends(scraped, out)
        first = advise(out, admin)
        log("advice: " + " | ".join(brief(first["recommendations"])))
        with StorageLoad(broker.bootstrap, args.producers) as load2:
            time.sleep(3)
            after = observe(admin, scraped, args.phase_seconds)
        log(f"storage-bound, as advised: {after}")
        errors = len(load.errors) + len(load2.errors)
        return {
            "before": before,
            "advice": brief(first["recommendations"]),
            "after": after,
            "delivery_errors": errors,
        }
    finally:
        broker.stop()


def cpu_bound(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    broker = BrokerProcess(
        ["num.io.threads=8", "admin.listeners=http://127.0.0.1:0", "metrics.window.seconds=5"]
    ).start()
    admin = broker.admin_url
    loads: list[subprocess.Popen[bytes]] = []
    try:
        kafka_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        kafka_admin.create_topics([NewTopic("load", 24, 1)])["load"].result(10)
        loader = [sys.executable, "-m", "tests.spark.cpu_load", broker.bootstrap]
        loads = [
            subprocess.Popen(
                [*loader, str(args.phase_seconds + 10), str(8 * k), "8"],
                cwd=REPO,
                stderr=subprocess.DEVNULL,
            )
            for k in range(3)
        ]
        time.sleep(5)  # the load ramps up before it is observed
        scraped, out = work / "scraped-cpu", work / "trends-cpu"
        seen = observe(admin, scraped, args.phase_seconds)
        for p in loads:
            p.wait(60)
        trends(scraped, out)
        advice = advise(out, admin)
        log(f"CPU-bound: {seen}; advice: " + " | ".join(brief(advice["recommendations"])))
        return {
            "observed": seen,
            "advice": brief(advice["recommendations"]),
            "io_threads_after": get(admin + "/v1/pools")["io"]["size"],
        }
    finally:
        for p in loads:
            p.kill()
        broker.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--phase-seconds", type=float, default=20.0)
    p.add_argument("--delay-ms", type=float, default=2.0)
    p.add_argument("--producers", type=int, default=16)
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args()
    options = vars(args)
    print(header("advisor proof", options))
    with tempfile.TemporaryDirectory(prefix="advisor-proof-") as tmp:
        storage = storage_bound(args, Path(tmp))
        cpu = cpu_bound(args, Path(tmp))
    b, a = storage["before"], storage["after"]
    print()
    print(
        f"Storage-bound ({args.delay_ms} ms per storage operation, "
        f"{args.producers} producers, acks=all):"
    )
    print(
        table(
            ["phase", "io threads", "Produce/s", "Produce p99 ms", "io idle", "loop busy"],
            [
                [
                    "mis-sized",
                    b["io_threads"],
                    b["produce_per_s"],
                    b["produce_p99_ms"],
                    b["io_idle_ratio"],
                    b["loop_busy_ratio"],
                ],
                [
                    "as advised",
                    a["io_threads"],
                    a["produce_per_s"],
                    a["produce_p99_ms"],
                    a["io_idle_ratio"],
                    a["loop_busy_ratio"],
                ],
            ],
        )
    )
    print(
        f"throughput x{a['produce_per_s'] / max(1, b['produce_per_s']):.1f}; "
        f"delivery errors: {storage['delivery_errors']}"
    )
    print("advice applied: " + " | ".join(storage["advice"]))
    c = cpu["observed"]
    print()
    print(
        f"CPU-bound (no delay, 24 producers in 3 processes): loop busy {c['loop_busy_ratio']}, "
        f"io idle {c['io_idle_ratio']}, Produce/s {c['produce_per_s']}"
    )
    print("advice: " + " | ".join(cpu["advice"]))
    print(f"io threads after --apply: {cpu['io_threads_after']} (started at 8)")
    write_json(args.json, "advisor proof", options, {"storage_bound": storage, "cpu_bound": cpu})
    return 0


if __name__ == "__main__":
    sys.exit(main())
