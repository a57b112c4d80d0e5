"""The dashboard's routes: the page and its files are public, its data needs the token and
is what the Spark jobs left in dashboard.data.dir (none yet, a file, a broken file).
Then the page in headless Chromium: what it says without a token, what it shows with one
(plural forms, the event loop and io thread figures, windowed error rates, gaps, axis
ticks, advice applied or changed since, operator advice), and at 800 px. The page over
real trends job output is drawn in tests/spark/test_trends.py."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from spark_jobs.dashboard_clients import build_clients
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.brokers import BrokerThread
from ..support.browser import load
from ..support.wire import WireClient
from .conftest import ADMIN, TOKEN, error_code


@pytest.fixture
def board(tmp_path: Path) -> Iterator[tuple[httpx.Client, Path]]:
    data_dir = tmp_path / "dashboard"
    b = BrokerThread(
        tmp_path / "data", {**ADMIN, "admin.token": TOKEN, "dashboard.data.dir": str(data_dir)}
    ).start()
    with httpx.Client(base_url=b.admin_url, timeout=10) as http:
        yield http, data_dir
    b.stop()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_page_and_its_files_need_no_token(board: tuple[httpx.Client, Path]) -> None:
    http, _ = board
    page = http.get("/dashboard")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for src in ("/dashboard/static/dashboard.js", "/dashboard/static/uPlot.iife.min.js"):
        assert src in page.text
        r = http.get(src)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    css = http.get("/dashboard/static/uPlot.min.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    lib = http.get("/dashboard/static/uPlot.iife.min.js").text
    assert lib.startswith("/*! https://github.com/leeoniya/uPlot")  # the license header kept
    assert "MIT License" in http.get("/dashboard/static/uPlot.LICENSE.txt").text


def test_only_the_dashboard_files_are_served(board: tuple[httpx.Client, Path]) -> None:
    http, _ = board
    for name in ("dashboard.html", "..%2Fapp.py", "nope.js", "__init__.py"):
        r = http.get(f"/dashboard/static/{name}")
        assert r.status_code == 404 and error_code(r) == "not-found", name
    assert http.get("/dashboard/static/../../v1/metrics").status_code in (401, 404)


def test_the_data_needs_the_token_and_is_empty_before_the_jobs_ran(
    board: tuple[httpx.Client, Path],
) -> None:
    http, data_dir = board
    assert http.get("/v1/dashboard").status_code == 401
    assert http.get("/v1/metrics").status_code == 401  # what the page polls, too
    body = http.get("/v1/dashboard", headers=AUTH).json()
    assert body == {
        "data_dir": str(data_dir),
        "trends": None,
        "recommendations": None,
        "balance": None,
        "problems": [],
    }


def test_the_data_is_what_the_jobs_wrote(board: tuple[httpx.Client, Path]) -> None:
    http, data_dir = board
    data_dir.mkdir()
    trends = {"schema": "trio-broker.dashboard/1", "brokers": []}
    (data_dir / "dashboard.json").write_text(json.dumps(trends))
    (data_dir / "recommendations.json").write_text("{not json")
    body = http.get("/v1/dashboard", headers=AUTH).json()
    assert body["trends"] == trends
    assert body["recommendations"] is None
    assert len(body["problems"]) == 1 and body["problems"][0].startswith("recommendations.json")


# ------------------------------------------------------------- in a browser

T0 = 1_740_000_000  # bucket starts, epoch seconds
TRENDS = {
    "schema": "trio-broker.dashboard/1",
    "generated_at": "2025-02-19T21:30:00Z",
    "bucket_s": 60,
    "trend_window_s": 600,
    "range": {"from": T0, "to": T0 + 360},
    "input": {"snapshots": 30, "corrupt_lines": 1, "markers": {"gap": 1}},
    "brokers": [
        {
            "broker_id": 0,
            "time": [T0, T0 + 60, T0 + 120, T0 + 240, T0 + 300],  # T0 + 180: no data
            "charts": [
                {
                    "id": "idle_ratio",
                    "title": "Pool idle ratio",
                    "unit": "ratio",
                    "series": [{"label": "io", "values": [0.995, 0.996, 0.993, 0.997, 0.998]}],
                },
                {
                    "id": "queue_mean",
                    "title": "Queue time, mean over all requests",
                    "unit": "ms",
                    "series": [
                        {"label": "all requests", "values": [0.991, 0.994, 0.998, 0.992, 0.996]}
                    ],
                },
            ],
        }
    ],
}
LIB = {"software_name": "confluent-kafka-python", "software_version": "2.16.1-rdkafka-2.16.0"}
JAVA = {"software_name": "apache-kafka-java", "software_version": "4.1.0"}


def client_row(client_id: str, **figures: object) -> dict[str, object]:
    """A row of the trends job's clients table, the columns not given null."""
    columns = [
        "produce_latency_avg_ms",
        "record_queue_time_avg_ms",
        "fetch_latency_avg_ms",
        "commit_latency_avg_ms",
        "batch_size_avg",
        "batch_size_max",
        "in_flight_avg",
        "buffer_total_bytes",
        "broker_bytes_in",
        "broker_bytes_out",
        "client_outgoing_bytes",
        "client_incoming_bytes",
        "client_outgoing_byte_rate",
        "client_incoming_byte_rate",
    ]
    return {
        "client_id": client_id,
        "time": T0 + 300,
        "kind": "producer",
        "pushes": 12,
        "push_interval_ms": 5000,
        **dict.fromkeys(columns),
        **figures,
    }


# the clients panel: a librdkafka producer, a Java producer (bytes and settings-like
# figures of its own) and a client known by the broker's byte count alone
TRENDS["clients"] = build_clients(
    [
        client_row("lib-p", **LIB, produce_latency_avg_ms=4.2, broker_bytes_in=3 * 2**20),
        client_row(
            "java-p",
            **JAVA,
            produce_latency_avg_ms=2.5,
            batch_size_avg=1536.0,
            batch_size_max=16384.0,
            in_flight_avg=1.5,
            buffer_total_bytes=32.0 * 2**20,
            broker_bytes_in=2**20,
            broker_bytes_out=2048,
            client_outgoing_bytes=2**20 + 512,
            client_incoming_bytes=4096,
            client_outgoing_byte_rate=1024.0,
            client_incoming_byte_rate=16.0,
        ),
        client_row("quiet", **LIB, kind=None, pushes=0, broker_bytes_in=7 * 2**20),
    ],
    [],
    window_s=600,
)


def rec(setting: str, status: str, current: int, recommended: int, **more: object) -> dict:
    return {
        "broker_id": 0,
        "setting": setting,
        "pool": "io",
        "listener": None,
        "action": "raise",
        "current": current,
        "recommended": recommended,
        "reason": "storage work queues for a thread",
        "evidence": {"from": "2025-02-19T21:00:00Z", "to": "2025-02-19T21:10:00Z", "buckets": 10},
        "status": status,
        "note": None,
        **more,
    }


ADVICE = {
    "schema": "trio-broker.recommendations/1",
    "generated_at": "2025-02-19T21:31:00Z",
    "thresholds": {"min_buckets": 3},
    "recommendations": [
        rec("num.io.threads", "applied", 2, 4),  # the live io pool has 4: in force
        rec("num.network.threads", "applied", 3, 6, pool="network:PLAINTEXT", listener="PLAINTEXT"),
        rec(
            "brokers",
            "advice",
            1,
            2,
            pool="loop",
            action="scale-out",
            reason="CPU-bound: the event loop was 97% busy; it is one CPU, so no pool size helps",
            evidence={"event_loop_busy_ratio_mean": 0.97, "busiest_requests": ["Produce"]},
            note="applied by an operator, not by --apply",
        ),
    ],
    "pools": [],
    "effects": [],
}


@pytest.fixture
def page(tmp_path: Path) -> Iterator[tuple[BrokerThread, Path]]:
    """A broker whose dashboard data the jobs wrote: trends with a missing bucket, advice
    applied (one still in force, one changed since) and CPU-bound scale-out advice."""
    data_dir = tmp_path / "dashboard"
    data_dir.mkdir()
    (data_dir / "dashboard.json").write_text(json.dumps(TRENDS))
    (data_dir / "recommendations.json").write_text(json.dumps(ADVICE))
    settings = {
        **ADMIN,
        "admin.token": TOKEN,
        "dashboard.data.dir": str(data_dir),
        "num.io.threads": "4",
        "num.network.threads": "2",
    }
    b = BrokerThread(tmp_path / "data", settings).start()
    yield b, tmp_path
    b.stop()


def attrs(dom: str, tag: str, **having: str) -> list[dict[str, str]]:
    """The attributes of each ``tag`` element whose attributes include ``having``."""
    found = []
    for m in re.finditer(rf"<{tag}\b([^>]*)>", dom):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', m[1]))
        if all(a.get(k.rstrip("_").replace("_", "-")) == v for k, v in having.items()):
            found.append(a)
    return found


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def test_without_a_token_the_page_says_how_to_give_one(
    page: tuple[BrokerThread, Path],
) -> None:
    b, _ = page
    dom = load(b.admin_url + "/dashboard")
    (body,) = attrs(dom, "body")
    assert body["data-state"] == "token-needed"
    assert "token needed: open /dashboard#token=..." in text(dom)
    assert "HTTP 401" not in dom
    rejected = load(b.admin_url + "/dashboard#token=wrong")
    assert "token rejected: open /dashboard#token=..." in text(rejected)


def test_with_a_token_the_page_shows_live_figures_trends_and_advice(
    page: tuple[BrokerThread, Path],
) -> None:
    b, tmp = page
    assert b.broker is not None
    host, port = b.broker.bound_listeners()["PLAINTEXT"]
    client = WireClient(f"{host}:{port}")
    for _ in range(3):  # errors before the page opens: none in its window
        (t,) = client.request(
            MetadataRequest(topics=[MetadataRequest.Topic(name="bad name!")]), 9
        ).topics
        assert t.error_code != 0
    shot = tmp / "dashboard.png"
    try:
        dom = load(b.admin_url + f"/dashboard#token={TOKEN}", screenshot=shot)
    finally:
        client.close()
    (body,) = attrs(dom, "body")
    assert body["data-state"] == "ready", body
    page_text = text(dom)

    # cards: plural forms, the event loop, the io threads' storage figures
    assert "1 connection " in page_text and "4 threads" in page_text and "2 threads" in page_text
    assert re.search(r"event loop\s+busy \d+%\s+stall p99 [\d.]+ ms, max [\d.]+ ms", page_text)
    assert re.search(r"idle \d+%, 0 jobs waiting, queue p99 [\d.]+ ms", page_text)
    assert re.search(r"cluster\s+single broker\s+no replication", page_text)
    # errors per second over the window, not the 3 errors since start
    row = re.search(r'<tr data-request="Metadata">(.*?)</tr>', dom)
    assert row is not None
    assert re.findall(r'<td class="errors">([^<]*)</td>', row[1]) == ["0.00"]

    # trends: the missing bucket is a gap, drawn and counted
    assert "1 gap in 5 buckets" in page_text and "1 scrape gap" in page_text
    charts = {a["data-chart"]: a for a in attrs(dom, "div", class_="chart")}
    assert charts["Pool idle ratio"]["data-gaps"] == "1"
    # ratios on a fixed 0..1 scale; ticks with the digits their step needs
    ticks = charts["Pool idle ratio"]["data-y-ticks"].split()
    assert ticks[0] == "0.0" and ticks[-1] == "1.0", ticks
    close = charts["Queue time, mean over all requests"]["data-y-ticks"].split()
    assert len(close) >= 3 and len(set(close)) == len(close), close
    for live in ("Idle ratio, live", "Queue depth, live", "Event loop stall, last second"):
        assert int(charts[live]["data-points"]) > 0, live

    # advice: "applied" only while in force; operator advice said as such
    rows = {a["data-setting"]: a for a in attrs(dom, "tr") if "data-setting" in a}
    assert rows["num.io.threads"]["class"] == "applied"
    assert rows["num.network.threads"]["class"] == "changed"
    assert "applied, in force" in page_text
    assert "applied, since changed to 2" in page_text
    assert "advice (for an operator)" in page_text and "add brokers (scale out)" in page_text
    assert "1 broker" in page_text and "2 brokers" in page_text
    assert "event loop busy 97%" in page_text
    # advice from before verdicts existed: no verdict table; no cluster data: said so
    assert 'id="verdicts"' not in dom
    assert "No brokers table yet: scrape every broker (spark_jobs.scrape --cluster)" in page_text
    assert "No balance plan yet: run python -m spark_jobs.balance" in page_text
    # clients: by produce latency, by the broker's bytes, and what they report of settings
    latency = [a["data-client"] for a in attrs(dom, "tr") if "data-client" in a]
    assert latency == ["lib-p", "java-p"]
    by_bytes = re.findall(r'<tr data-bytes-client="([^"]+)">(.*?)</tr>', dom)
    assert [cid for cid, _ in by_bytes] == ["quiet", "lib-p", "java-p"]
    cells = {cid: re.findall(r"<td[^>]*>([^<]*)</td>", row) for cid, row in by_bytes}
    assert cells["quiet"][2:4] == ["7.0 MiB", "\u2013"]  # no figure: a dash
    assert cells["java-p"][2:] == ["1.0 MiB", "2.0 KiB", "1.0 MiB / 4.0 KiB", "1.0 KiB/s / 16 B/s"]
    assert cells["lib-p"][4:] == ["not pushed", "not pushed"]
    settings = dict(re.findall(r'<tr data-settings-client="([^"]+)">(.*?)</tr>', dom))
    java = re.findall(r"<td[^>]*>([^<]*)</td>", settings["java-p"])
    assert java == [
        "java-p",
        "apache-kafka-java 4.1.0",
        "5000 ms",
        "1.5 KiB (max 16.0 KiB)",
        "1.50",
        "32.0 MiB",
    ]
    lib = re.findall(r"<td[^>]*>([^<]*)</td>", settings["lib-p"])
    assert lib[2:] == ["5000 ms", "not pushed", "not pushed", "not pushed"]
    assert "No KIP-714 client pushes its configuration" in page_text
    assert "not a metric the client pushed" in page_text.lower()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_fits_an_800_px_window(page: tuple[BrokerThread, Path]) -> None:
    b, _ = page
    dom = load(b.admin_url + f"/dashboard#token={TOKEN}", window=(800, 1600))
    (body,) = attrs(dom, "body")
    assert body["data-state"] == "ready", body
    assert 750 <= int(body["data-viewport-width"]) <= 800  # less a scroll bar
    assert int(body["data-scroll-width"]) <= int(body["data-viewport-width"]), body
    assert body["data-tables-cut"] == "0", body
