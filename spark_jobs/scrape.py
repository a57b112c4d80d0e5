"""The scraper: polls brokers' ``GET /v1/metrics`` and appends the snapshots as JSON Lines.

    python -m spark_jobs.scrape --admin URL [--admin URL2 ...] [--token T] --out DIR
        --interval S [--count N] [--duration S]
    python -m spark_jobs.scrape --cluster --admin URL [--admin URL2 ...] --out DIR
        --interval S [--discover-interval S] [--count N] [--duration S]

Owns: one polling thread per broker, on a fixed-rate schedule of ``--interval`` seconds:
each ``--admin``, or with ``--cluster`` each broker that ``GET /v1/cluster`` names
(asked of the ``--admin`` URLs, then of any broker found, every ``--discover-interval``
seconds: a broker that joins gets its own thread and files from the next discovery on, a
broker whose admin API moved, restarted on another port, is followed there, and a broker
that leaves keeps its thread, so its absence is a gap like any other); the layout
``DIR/broker=<id>/date=YYYY-MM-DD/hour=HH.jsonl`` (by the snapshot's own ``ts``, UTC),
one snapshot per line, exactly as the broker sent it; and the marker lines written beside
the snapshots:

- ``{"marker": "gap", ...}`` when a broker answered again after failures (``from``,
  ``to``, ``seconds``, ``attempts``, the last ``error``; just before the snapshot that
  ends the gap), or was still failing when the scraper stopped (``"open": true``);
- ``{"marker": "restart", ...}`` when a snapshot's ``uptime_s`` is below the previous
  one's (the broker restarted; its counters started again from zero).

After each snapshot it also reads the broker's ``GET /v1/client-metrics`` (KIP-714 client
telemetry) and appends ``{"schema": "trio-broker.client-metrics/1", "broker_id", "ts"
(the snapshot's), "clients": [...as the broker sent them]}`` to
``DIR/broker=<id>/date=YYYY-MM-DD/hour=HH.clients.ndjson`` (another extension, so readers of
``*.jsonl`` never see it). A broker without the route (a 404) is asked no more; any other
failure is logged and costs that one poll's client line, never the snapshot.

Failures are retried with exponential backoff (from ``--interval``/4 up to
``--max-backoff``), so a broker that restarts or is briefly away costs a gap, never the
scraper. "Never loses a fetched snapshot": each line is appended with one write and
fsynced before the next fetch, a torn last line left by a crash is sealed off before
anything else is appended (see ``spark_jobs.durable``), and SIGTERM/SIGINT let the write
in progress finish. It stops after ``--count`` snapshots per broker or ``--duration``
seconds, whichever comes first (neither: at a signal); with ``--cluster``, discovery
goes on until ``--duration``, a signal, or every broker found has its ``--count``. Exit
status 0, or 1 if a broker never answered (or, with ``--cluster``, none was found).
Standard library only (it runs in the spark-jobs image, and anywhere).
Must not: change a snapshot, or write one anywhere but its broker's hourly file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

if __package__ in (None, ""):  # python spark_jobs/scrape.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark_jobs.durable import AppendLog
from spark_jobs.fetch import (
    CLIENTS_SCHEMA_ID,
    FetchError,
    fetch_client_metrics,
    fetch_cluster,
    fetch_snapshot,
    is_restart,
    token_from_env,
)


def iso_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _utc(ts: str) -> dt.datetime:
    t = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return t.astimezone(dt.UTC) if t.tzinfo else t.replace(tzinfo=dt.UTC)


class HourlyFiles:
    """The hourly JSON Lines files under ``out``; thread-safe."""

    def __init__(self, out: Path, suffix: str = ".jsonl") -> None:
        self.out = out
        self.suffix = suffix
        self._lock = threading.Lock()
        self._open: dict[int, AppendLog] = {}  # one open file per broker: its current hour
        self.sealed: list[Path] = []

    def path_for(self, broker_id: int, ts: str) -> Path:
        t = _utc(ts)
        return self.out / f"broker={broker_id}" / f"date={t:%Y-%m-%d}" / f"hour={t:%H}{self.suffix}"

    def append(self, broker_id: int, ts: str, line: bytes) -> Path:
        path = self.path_for(broker_id, ts)
        with self._lock:
            log = self._open.get(broker_id)
            if log is None or log.path != path:
                if log is not None:
                    log.close()
                log = self._open[broker_id] = AppendLog(path)
                if log.sealed:
                    self.sealed.append(path)
            log.write(line)
        return path

    def close(self) -> None:
        with self._lock:
            for log in self._open.values():
                log.close()
            self._open.clear()


class Stop:
    """The scraper's stop signal, which also wakes one poller early (its broker's admin API
    moved): every waiting thread waits on the one condition."""

    def __init__(self) -> None:
        self._cond = threading.Condition()  # an RLock: a signal handler may take it
        self._set = False

    def set(self) -> None:
        with self._cond:
            self._set = True
            self._cond.notify_all()

    def is_set(self) -> bool:
        return self._set

    def nudge(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait(self, timeout: float, woken: Callable[[], bool] = lambda: False) -> bool:
        """Wait up to ``timeout`` s, or until stopped or ``woken()``; True if stopped."""
        with self._cond:
            self._cond.wait_for(lambda: self._set or woken(), max(0.0, timeout))
            return self._set


@dataclass
class SourceStats:
    url: str
    broker_id: int | None = None
    snapshots: int = 0
    failures: int = 0
    gaps: int = 0
    restarts: int = 0
    last_error: str | None = None


class Poller:
    """Polls one broker until its count is reached, the deadline passes or ``stop`` is set."""

    def __init__(
        self,
        url: str,
        files: HourlyFiles,
        *,
        token: str | None,
        interval: float,
        count: int | None,
        deadline: float | None,
        stop: Stop,
        timeout: float,
        max_backoff: float,
        log: TextIO,
        broker_id: int | None = None,
        client_files: HourlyFiles | None = None,
    ) -> None:
        self.url = url
        self.files = files
        self.client_files = client_files  # None: client telemetry not read
        self.client_errors = 0
        self.token = token
        self.interval = interval
        self.count = count
        self.deadline = deadline
        self.stop = stop
        self.timeout = timeout
        self.max_backoff = max(max_backoff, interval)
        self.log = log
        self.stats = SourceStats(url)
        self._previous: dict[str, Any] | None = None
        self._last_ts: str | None = None
        self._down_since: str | None = None
        self._down_monotonic = 0.0
        self._attempts = 0
        self._moved = False  # retarget() named a new URL: try it now
        self.done = False
        self.expected_id = broker_id  # the broker --cluster found at this URL

    def retarget(self, url: str) -> None:
        """The broker's admin API is now at ``url`` (it restarted on another port)."""
        if url != self.url:
            print(f"scrape: broker {self.expected_id}: admin API now at {url}", file=self.log)
            self.url = self.stats.url = url
            self._moved = True
            self.stop.nudge()

    def _wait_until(self, t: float) -> bool:
        """Wait until monotonic time ``t`` (or a retarget); False if stopped or past the
        deadline first."""
        end = t if self.deadline is None else min(t, self.deadline)
        if self.stop.wait(end - time.monotonic(), lambda: self._moved):
            return False
        self._moved = False
        return self.deadline is None or time.monotonic() < self.deadline

    def run(self) -> SourceStats:
        next_at = time.monotonic()
        while self.count is None or self.stats.snapshots < self.count:
            if not self._wait_until(next_at):
                break
            next_at = min(next_at, time.monotonic())  # woken early (retarget): from now on
            try:
                snapshot, line = fetch_snapshot(self.url, token=self.token, timeout=self.timeout)
            except FetchError as exc:
                next_at = time.monotonic() + self._failed(str(exc))
                continue
            self._store(snapshot, line)
            self._store_clients(snapshot)
            next_at += self.interval
            now = time.monotonic()
            if next_at < now:  # fell behind (a slow answer): skip the missed ticks
                next_at = now
        if self._down_since is not None and self._last_ts is not None:
            self._write_gap(self._last_ts, open_=True)
        self.done = True
        return self.stats

    def _store_clients(self, snapshot: dict[str, Any]) -> None:
        """The broker's client telemetry, beside the snapshot just stored."""
        if self.client_files is None:
            return
        try:
            clients = fetch_client_metrics(self.url, token=self.token, timeout=self.timeout)
        except FetchError as exc:
            self.client_errors += 1
            print(f"scrape: {self.url}: client metrics: {exc}", file=self.log)
            return
        if clients is None:
            print(f"scrape: {self.url}: no /v1/client-metrics (an older broker)", file=self.log)
            self.client_files = None
            return
        doc = {
            "schema": CLIENTS_SCHEMA_ID,
            "broker_id": snapshot["broker_id"],
            "ts": snapshot["ts"],
            "clients": clients,
        }
        line = json.dumps(doc, separators=(",", ":")).encode()
        self.client_files.append(int(snapshot["broker_id"]), str(snapshot["ts"]), line)

    def _failed(self, error: str) -> float:
        """Note a failure; return the backoff before the next attempt."""
        self.stats.failures += 1
        self.stats.last_error = error
        if self._down_since is None:
            self._down_since = iso_now()
            self._down_monotonic = time.monotonic()
            self._attempts = 0
            print(f"scrape: {self.url}: {error}; retrying with backoff", file=self.log)
        self._attempts += 1
        return min(self.max_backoff, (self.interval / 4) * 2 ** (self._attempts - 1))

    def _marker(self, broker_id: int, ts: str, marker: dict[str, Any]) -> None:
        self.files.append(broker_id, ts, json.dumps(marker, separators=(",", ":")).encode())

    def _write_gap(self, ts: str, *, open_: bool = False) -> None:
        """The gap marker, in the file of snapshot time ``ts`` (the snapshot that ends
        the gap, or for an open gap the last one before it)."""
        broker_id = self.stats.broker_id
        if broker_id is None or self._down_since is None:
            return  # never reached: there is no broker file to put the gap in
        to = iso_now()
        marker: dict[str, Any] = {
            "marker": "gap",
            "source": self.url,
            "broker_id": broker_id,
            "from": self._down_since,
            "to": to,
            "seconds": round(time.monotonic() - self._down_monotonic, 3),
            "attempts": self._attempts,
            "error": self.stats.last_error,
        }
        if open_:
            marker["open"] = True
        self._marker(broker_id, ts, marker)
        self.stats.gaps += 1
        self._down_since = None

    def _store(self, snapshot: dict[str, Any], line: bytes) -> None:
        broker_id = int(snapshot["broker_id"])
        self.stats.broker_id = broker_id
        if self._down_since is not None:
            print(f"scrape: {self.url}: answering again", file=self.log)
            self._write_gap(str(snapshot["ts"]))
        if is_restart(self._previous, snapshot):
            assert self._previous is not None
            self._marker(
                broker_id,
                str(snapshot["ts"]),
                {
                    "marker": "restart",
                    "source": self.url,
                    "broker_id": broker_id,
                    "at": snapshot["ts"],
                    "previous_uptime_s": self._previous["uptime_s"],
                    "uptime_s": snapshot["uptime_s"],
                },
            )
            self.stats.restarts += 1
        self.files.append(broker_id, str(snapshot["ts"]), line)
        self.stats.snapshots += 1
        self._previous = {k: snapshot[k] for k in ("seq", "uptime_s")}
        self._last_ts = str(snapshot["ts"])


def scrape(
    admins: list[str],
    out: Path,
    *,
    interval: float,
    count: int | None = None,
    duration: float | None = None,
    token: str | None = None,
    timeout: float = 5.0,
    max_backoff: float = 30.0,
    stop: Stop | None = None,
    log: TextIO = sys.stderr,
    cluster: bool = False,
    discover_interval: float = 10.0,
    clients: bool = True,
) -> list[SourceStats]:
    """Poll every broker in ``admins`` (with ``cluster``: every broker of their cluster, as
    it changes) concurrently; return what each one gave."""
    stop = stop or Stop()
    deadline = None if duration is None else time.monotonic() + duration
    files = HourlyFiles(out)
    client_files = HourlyFiles(out, ".clients.ndjson") if clients else None
    pollers: list[Poller] = []
    threads: list[threading.Thread] = []

    def start(url: str, broker_id: int | None = None) -> Poller:
        p = Poller(
            url,
            files,
            token=token,
            interval=interval,
            count=count,
            deadline=deadline,
            stop=stop,
            timeout=timeout,
            max_backoff=max_backoff,
            log=log,
            broker_id=broker_id,
            client_files=client_files,
        )
        t = threading.Thread(target=p.run, name=f"scrape {url}")
        pollers.append(p)
        threads.append(t)
        t.start()
        return p

    try:
        if cluster:
            follow_cluster(admins, start, stop, deadline, discover_interval, token, timeout, log)
        else:
            for url in admins:
                start(url)
        for t in threads:
            t.join()
    finally:
        stop.set()  # an error in discovery: the pollers end too
        for t in threads:
            t.join()
        files.close()
        if client_files is not None:
            client_files.close()
    for path in files.sealed + (client_files.sealed if client_files else []):
        print(f"scrape: {path}: sealed a torn last line left by a crash", file=log)
    return [p.stats for p in pollers]


def follow_cluster(
    seeds: list[str],
    start: Callable[[str, int], Poller],
    stop: Stop,
    deadline: float | None,
    every: float,
    token: str | None,
    timeout: float,
    log: TextIO,
) -> None:
    """Discover the cluster's brokers every ``every`` seconds (``GET /v1/cluster``, asked of
    the seeds, then of the brokers found, until one answers) and have ``start(url, id)``
    poll each new one, until stopped, past the deadline, or every poller is done."""
    pollers: dict[int, Poller] = {}
    present: set[int] = set()
    silent: set[int] = set()  # brokers that name no admin API, said once
    failing = False
    while True:
        view: dict[int, str | None] | None = None
        error = ""
        known = [p.url for p in pollers.values()]
        for url in dict.fromkeys([*seeds, *known]):
            try:
                view = fetch_cluster(url, token=token, timeout=timeout)
                break
            except FetchError as exc:
                error = str(exc)
        if view is None:
            if not failing:
                print(f"scrape: cannot discover the cluster: {error}; retrying", file=log)
            failing = True
        else:
            failing = False
            for broker_id, admin in sorted(view.items()):
                if admin is None:
                    if broker_id not in silent:
                        print(f"scrape: broker {broker_id} names no admin API", file=log)
                        silent.add(broker_id)
                elif broker_id not in pollers:
                    print(f"scrape: broker {broker_id} found at {admin}", file=log)
                    pollers[broker_id] = start(admin, broker_id)
                else:
                    pollers[broker_id].retarget(admin)
            for broker_id in sorted(present - set(view)):
                print(f"scrape: broker {broker_id} left the cluster", file=log)
            present = set(view)
        done = bool(pollers) and all(p.done for p in pollers.values())
        now = time.monotonic()
        wait = every if deadline is None else min(every, deadline - now)
        if done or wait <= 0 or stop.wait(wait):
            return


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="scrape", description="Append brokers' metrics snapshots to hourly JSON Lines."
    )
    p.add_argument(
        "--admin",
        action="append",
        required=True,
        help="a broker's admin API, http://host:port (repeatable; with --cluster, where to "
        "ask for the cluster's brokers)",
    )
    p.add_argument(
        "--cluster",
        action="store_true",
        help="scrape every broker of the cluster, found through GET /v1/cluster and "
        "followed as brokers join and leave",
    )
    p.add_argument(
        "--discover-interval",
        type=float,
        default=10.0,
        help="with --cluster: seconds between two looks at the cluster (10)",
    )
    p.add_argument("--token", help="the admin bearer token (default: $TRIO_BROKER_ADMIN_TOKEN)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between snapshots")
    p.add_argument("--count", type=int, help="stop after this many snapshots per broker")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    p.add_argument(
        "--no-client-metrics",
        action="store_true",
        help="do not read the brokers' GET /v1/client-metrics (KIP-714 client telemetry)",
    )
    p.add_argument("--timeout", type=float, default=5.0, help="HTTP timeout in seconds")
    p.add_argument(
        "--max-backoff", type=float, default=30.0, help="longest wait between retries (s)"
    )
    args = p.parse_args(argv)
    if args.interval <= 0:
        p.error("--interval must be > 0")
    if args.count is not None and args.count < 1:
        p.error("--count must be >= 1")
    if args.duration is not None and args.duration <= 0:
        p.error("--duration must be > 0")
    if args.discover_interval <= 0:
        p.error("--discover-interval must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = Stop()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stats = scrape(
        args.admin,
        args.out,
        interval=args.interval,
        count=args.count,
        duration=args.duration,
        token=args.token or token_from_env(),
        timeout=args.timeout,
        max_backoff=args.max_backoff,
        stop=stop,
        cluster=args.cluster,
        discover_interval=args.discover_interval,
        clients=not args.no_client_metrics,
    )
    for s in stats:
        print(
            f"scrape: {s.url}: broker {s.broker_id}, {s.snapshots} snapshot(s), "
            f"{s.failures} failed attempt(s), {s.gaps} gap(s), {s.restarts} restart(s)",
            file=sys.stderr,
        )
    if not stats:
        print("scrape: no broker found to scrape", file=sys.stderr)
    return 0 if stats and all(s.snapshots for s in stats) else 1


if __name__ == "__main__":
    sys.exit(main())
