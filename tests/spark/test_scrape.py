"""The scraper: hourly JSON Lines by snapshot time, gaps and restarts marked, nothing
fetched ever lost (torn tails sealed, SIGTERM finishes the write), bounded by count or
duration. Against a scripted HTTP stub, and against a real broker that restarts."""

from __future__ import annotations

import io
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.fetch import FetchError, fetch_snapshot
from spark_jobs.scrape import scrape

from ..support.brokers import BrokerProcess
from .conftest import ROOT
from .synthetic import FakeBroker

DROP = "drop"  # close the connection without an answer


class Stub:
    """Answers GET /v1/metrics from a script: a snapshot, an HTTP status, or DROP; any
    other path is a 404 (a broker from before ``/v1/client-metrics``)."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path != "/v1/metrics":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with stub.lock:
                    stub.auth.append(self.headers.get("Authorization"))
                    step = stub.script.pop(0) if stub.script else 503
                if step == DROP:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(step, int):
                    self.send_response(step)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(step).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Stub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def lines(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every JSONL file under ``out`` (relative path) -> its parsed lines."""
    return {
        str(p.relative_to(out)): [json.loads(x) for x in p.read_text().splitlines()]
        for p in sorted(out.rglob("*.jsonl"))
    }


def test_snapshots_go_to_hourly_files_by_their_own_time(tmp_path: Path) -> None:
    b = FakeBroker()  # 23:50 UTC on 2025-03-01: the steps cross the hour and the date
    snaps = [b.tick(step, requests={"Produce": 1}) for step in (300, 1800, 1800, 1800)]
    log = io.StringIO()
    with Stub(snaps) as stub:
        stats = scrape([stub.url], tmp_path, interval=0.01, count=4, timeout=2, log=log)
    assert [s.snapshots for s in stats] == [4]
    # a broker without /v1/client-metrics: said once, asked no more, no client file
    assert log.getvalue().count("no /v1/client-metrics (an older broker)") == 1
    assert list(tmp_path.rglob("*.clients.ndjson")) == []
    assert lines(tmp_path) == {
        "broker=0/date=2025-03-01/hour=23.jsonl": [snaps[0]],
        "broker=0/date=2025-03-02/hour=00.jsonl": [snaps[1], snaps[2]],
        "broker=0/date=2025-03-02/hour=01.jsonl": [snaps[3]],
    }


def test_failures_become_a_gap_and_a_restart_is_marked(tmp_path: Path) -> None:
    b = FakeBroker()
    one, two = b.tick(5), b.tick(5)
    b.restart()
    three = b.tick(1)
    script = [one, two, 503, DROP, "not json", {"schema": "other/1"}, three]
    with Stub(script) as stub:
        stats = scrape([stub.url], tmp_path, interval=0.01, count=3, timeout=2, max_backoff=0.05)
    (s,) = stats
    assert (s.snapshots, s.failures, s.gaps, s.restarts) == (3, 4, 1, 1)
    (written,) = lines(tmp_path).values()
    snapshots = [x for x in written if "marker" not in x]
    assert snapshots == [one, two, three]  # exactly as served, in order
    gap, restart = (x for x in written if "marker" in x)
    assert gap["marker"] == "gap" and gap["attempts"] == 4 and gap["broker_id"] == 0
    assert gap["from"] <= gap["to"] and gap["seconds"] >= 0 and "not a" in gap["error"]
    assert restart["marker"] == "restart" and restart["uptime_s"] < restart["previous_uptime_s"]
    assert written.index(gap) < written.index(three)


def test_a_broker_still_down_at_the_end_leaves_an_open_gap(tmp_path: Path) -> None:
    b = FakeBroker()
    with Stub([b.tick(1)]) as stub:  # then 503 for ever
        (s,) = scrape([stub.url], tmp_path, interval=0.01, duration=0.5, max_backoff=0.05)
    assert s.snapshots == 1 and s.failures >= 2
    (written,) = lines(tmp_path).values()
    assert written[-1]["marker"] == "gap" and written[-1]["open"] is True


def test_the_token_is_sent_and_several_brokers_are_polled(tmp_path: Path) -> None:
    a, b = FakeBroker(broker_id=1), FakeBroker(broker_id=2)
    with Stub([a.tick(1), a.tick(1)]) as s1, Stub([b.tick(1), b.tick(1)]) as s2:
        stats = scrape([s1.url, s2.url], tmp_path, interval=0.01, count=2, token="t0k")
    assert [s.snapshots for s in stats] == [2, 2]
    assert set(s1.auth) == set(s2.auth) == {"Bearer t0k"}
    assert {p.split("/")[0] for p in lines(tmp_path)} == {"broker=1", "broker=2"}


def test_a_torn_last_line_costs_only_itself(tmp_path: Path) -> None:
    b = FakeBroker()
    snap = b.tick(1)
    path = tmp_path / "broker=0" / "date=2025-03-01" / "hour=23.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(b.tick(1)) + "\n" + '{"schema": "trio-broker.met')  # a crash
    with Stub([snap]) as stub:
        scrape([stub.url], tmp_path, interval=0.01, count=1)
    text = path.read_text().splitlines()
    assert text[1] == '{"schema": "trio-broker.met'  # sealed off, one corrupt line
    assert json.loads(text[2]) == snap


def test_fetch_says_why_there_is_no_snapshot() -> None:
    with pytest.raises(FetchError, match=r"127\.0\.0\.1:9"):
        fetch_snapshot("http://127.0.0.1:9", timeout=1)
    with Stub([401]) as stub, pytest.raises(FetchError, match="HTTP 401"):
        fetch_snapshot(stub.url)


# ------------------------------------------------------------- a real broker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def broker_on_fixed_port(tmp_path: Path) -> Iterator[tuple[BrokerProcess, str]]:
    """A broker whose admin port survives a restart (a scraper's URL stays valid)."""
    port = free_port()
    data = tmp_path / "data"
    overrides = [
        "listeners=PLAINTEXT://127.0.0.1:0",
        f"admin.listeners=http://127.0.0.1:{port}",
        f"log.dirs={data}",
    ]
    b = BrokerProcess(data, overrides).start()
    yield b, f"http://127.0.0.1:{port}"
    if b.proc is not None and b.proc.poll() is None:
        b.terminate()


def wait_for_lines(out: Path, n: int) -> None:
    """Until ``out`` holds ``n`` snapshot lines (the scraper is another process)."""
    deadline = threading.Event()
    timer = threading.Timer(30, deadline.set)
    timer.start()
    try:
        while sum(len(v) for v in lines(out).values()) < n:
            assert not deadline.wait(0.05), f"fewer than {n} lines in 30 s"
    finally:
        timer.cancel()


def start_scraper(admin: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spark_jobs.scrape",
            "--admin",
            admin,
            "--out",
            str(out),
            "--interval",
            "0.1",
            "--max-backoff",
            "0.2",
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_a_real_broker_restart_costs_a_gap_not_the_scraper(
    tmp_path: Path, broker_on_fixed_port: tuple[BrokerProcess, str]
) -> None:
    broker, admin = broker_on_fixed_port
    out = tmp_path / "scraped"
    scraper = start_scraper(admin, out, "--count", "10", "--duration", "60")
    assert scraper.stderr is not None
    wait_for_lines(out, 3)
    broker.terminate()
    assert "retrying with backoff" in scraper.stderr.readline()  # it noticed, and goes on
    broker.start()
    assert scraper.wait(60) == 0
    written = [x for v in lines(out).values() for x in v]
    snaps = [x for x in written if "marker" not in x]
    assert len(snaps) == 10
    uptimes = [s["uptime_s"] for s in snaps]
    drop = next(i for i in range(1, 10) if uptimes[i] < uptimes[i - 1])  # the restart
    assert [s["seq"] for s in snaps[:drop]] == sorted(s["seq"] for s in snaps[:drop])
    markers = [x["marker"] for x in written if "marker" in x]
    assert markers == ["gap", "restart"]


def test_sigterm_keeps_every_fetched_snapshot(
    tmp_path: Path, broker_on_fixed_port: tuple[BrokerProcess, str]
) -> None:
    _, admin = broker_on_fixed_port
    out = tmp_path / "scraped"
    scraper = start_scraper(admin, out)
    wait_for_lines(out, 5)
    scraper.send_signal(signal.SIGTERM)
    assert scraper.wait(30) == 0
    assert scraper.stderr is not None
    summary = scraper.stderr.read()
    reported = int(summary.split(" snapshot(s)")[0].rsplit(" ", 1)[1])
    written = [x for v in lines(out).values() for x in v]
    assert len(written) == reported >= 5
    assert [x["seq"] for x in written] == list(
        range(written[0]["seq"], written[0]["seq"] + reported)
    )


class ClusterView:
    """Answers GET /v1/cluster with ``brokers`` (which a test may change) and counts asks."""

    def __init__(self, brokers: list[dict[str, Any]]) -> None:
        self.brokers = brokers
        self.asked = 0
        view = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                view.asked += 1
                body = json.dumps({"mode": "zookeeper", "brokers": view.brokers}).encode()
                self.send_response(200 if self.path == "/v1/cluster" else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def until_true(what: str, check: Any, timeout: float = 10) -> None:
    gate, deadline = threading.Event(), time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        gate.wait(0.01)


def test_cluster_mode_follows_a_broker_to_its_new_address(tmp_path: Path) -> None:
    """The broker moves (restarted on another port): its poller, backing off against the
    old address (4 s to its next attempt by then), is sent to the new one at the next look
    at the cluster, not after its backoff. A broker naming no admin API is said once, not
    scraped."""
    a = FakeBroker(broker_id=1)
    first, moved = a.tick(1), [a.tick(1), a.tick(1)]
    log = io.StringIO()
    with Stub([first]) as old, Stub(moved) as new:  # old: one snapshot, then 503
        view = ClusterView([{"id": 1, "admin": old.url}, {"id": 2, "admin": None}])
        stats: list[Any] = []
        run = threading.Thread(
            target=lambda: stats.extend(
                scrape(
                    [view.url], tmp_path, interval=1.0, count=3, duration=30, max_backoff=30,
                    cluster=True, discover_interval=0.05, log=log,
                )
            )
        )  # fmt: skip
        run.start()
        # 1 snapshot, then 5 failures 1, 0.25, 0.5, 1 and 2 s apart: the next in 4 s.
        until_true("the old address failing", lambda: len(old.auth) >= 6)
        moved_at = time.monotonic()
        view.brokers = [{"id": 1, "admin": new.url}, {"id": 2, "admin": None}]
        run.join(30)
        view.close()
    # Two snapshots 1 s apart at the new address, at once: well before the 4 s backoff.
    assert time.monotonic() - moved_at < 3.0
    (s,) = stats
    assert (s.broker_id, s.snapshots, s.url, s.gaps) == (1, 3, new.url, 1)
    (written,) = lines(tmp_path).values()
    assert [x for x in written if "marker" not in x] == [first, *moved]
    said = log.getvalue()
    assert said.count("broker 2 names no admin API") == 1
    assert f"broker 1: admin API now at {new.url}" in said


def test_cluster_mode_without_any_answer_finds_no_broker(tmp_path: Path) -> None:
    log = io.StringIO()
    stats = scrape(
        ["http://127.0.0.1:9"], tmp_path, interval=0.05, duration=0.3, cluster=True,
        discover_interval=0.05, log=log,
    )  # fmt: skip
    assert stats == [] and log.getvalue().count("cannot discover the cluster") == 1
