"""The batch trends job on made-up snapshots whose rates, means and idle ratios are known:
three brokers (one mostly idle that restarts, one whose io pool saturates, one whose
network threads saturate), a torn line, a duplicate and a gap marker. Then the advisor on
the tables, and the dashboard page drawn by a real browser."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_jobs import advise, trends
from spark_jobs.snapshot_schema import CLUSTER_SNAPSHOT, SNAPSHOT
from tests.support.browser import load
from tests.support.metrics import SCHEMA_PATH, validate_snapshot

from ..support.brokers import BrokerThread
from .conftest import ROOT
from .synthetic import FakeBroker, write_jsonl

TICKS = 66  # 10 s apart: 11 minutes, 23:50 to 00:01, two dates
RESTART_AFTER = 40


@dataclass
class Run:
    scraped: Path
    out: Path
    report: dict[str, Any]


def scenario(scraped: Path) -> None:
    idle, io_bound, net_bound = FakeBroker(0), FakeBroker(1, io_size=4), FakeBroker(2)
    lines0: list[dict[str, Any] | str] = []
    for i in range(TICKS):
        s = idle.tick(
            10,
            requests={"Produce": 100, "Metadata": 5},
            errors={"Produce": 10},
            queue_ms={"Produce": 0.1},
            io_idle=0.9,
            net_idle=0.95,
            connections=4,
            muted=1,
            new_connections=1,
        )
        if i == 0:
            validate_snapshot(s)  # the made-up snapshots keep the real contract
        lines0.append(s)
        if i == 10:
            lines0.append(json.dumps(s))  # the same snapshot twice (two scrapers)
        if i == 30:
            lines0.append('{"schema": "trio-broker.metrics/1", "broker_id": 0, "se')  # torn
            lines0.append(json.dumps({"marker": "gap", "broker_id": 0, "seconds": 12.5}))
        if i == RESTART_AFTER:
            idle.restart()
    write_jsonl(scraped / "broker=0" / "all.jsonl", lines0)
    write_jsonl(
        scraped / "broker=1" / "all.jsonl",
        [
            io_bound.tick(
                10,
                requests={"Produce": 100},
                queue_ms={"Produce": 1.0 + i},  # +6 ms a minute
                io_idle=max(0.02, 0.3 - 0.01 * i),
                net_idle=0.9,
                queue_depth=6,
            )
            for i in range(TICKS)
        ],
    )
    write_jsonl(
        scraped / "broker=2" / "all.jsonl",
        [
            net_bound.tick(10, requests={"Fetch": 50}, io_idle=0.6, net_idle=0.1)
            for _ in range(TICKS)
        ],
    )


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    base = tmp_path_factory.mktemp("trends")
    scraped, out = base / "scraped", base / "out"
    scenario(scraped)
    report = trends.run(spark, str(scraped), str(out), bucket_s=60, trend_window_s=600)  # type: ignore[arg-type]
    yield Run(scraped, out, report)


def rows(out: Path, table: str, **where: Any) -> list[dict[str, Any]]:
    found = pq.read_table(out / table).to_pylist()
    selected = [r for r in found if all(r[k] == v for k, v in where.items())]
    return sorted(selected, key=lambda r: (r["time"], *(str(v) for v in r.values())))


def full(r: dict[str, Any]) -> bool:
    """A bucket whose six snapshots all have a predecessor (no edge, no restart)."""
    return r["seconds"] == 60.0


def test_request_rates_errors_and_latencies_per_minute(run: Run) -> None:
    produce = rows(run.out, "requests", broker_id=0, request="Produce")
    assert len(produce) == 12  # 23:50 .. 00:01
    for r in filter(full, produce):
        assert r["request_rate"] == pytest.approx(10.0)
        assert r["error_rate"] == pytest.approx(1.0)
        assert r["error_ratio"] == pytest.approx(0.1)
        assert r["queue_mean_ms"] == pytest.approx(0.1)
        assert r["local_mean_ms"] == pytest.approx(1.0)
        assert r["total_mean_ms"] == pytest.approx(1.1)
        assert (r["queue_p50_ms"], r["queue_p99_ms"]) == (pytest.approx(0.1), pytest.approx(0.2))
        assert r["total_p99_ms"] == pytest.approx(2.2)
    assert sum(1 for r in produce if full(r)) >= 9
    metadata = rows(run.out, "requests", broker_id=0, request="Metadata")
    assert all(r["request_rate"] == pytest.approx(0.5) for r in metadata if full(r))


def test_a_restart_is_a_counter_reset_not_a_negative_rate(run: Run) -> None:
    produce = rows(run.out, "requests", broker_id=0, request="Produce")
    rates = [r["request_rate"] for r in produce if r["request_rate"] is not None]
    assert min(rates) > 9.0 and max(rates) <= 10.0 + 1e-9  # around the restart too
    conns = rows(run.out, "connections", broker_id=0)
    assert sum(r["restarts"] for r in conns) == 1
    assert run.report["input"]["restarts"] == 1
    # New connections counted across the restart: one per 10 s, never negative.
    assert all(0 <= r["created"] <= 6 for r in conns if r["created"] is not None)


def test_corrupt_lines_duplicates_and_markers_are_counted(run: Run) -> None:
    i = run.report["input"]
    assert (i["corrupt_lines"], i["duplicates"], i["markers"]) == (1, 1, {"gap": 1})
    assert i["snapshots"] == 3 * TICKS
    assert run.report["gaps"] == [{"marker": "gap", "broker_id": 0, "seconds": 12.5}]
    assert json.loads((run.out / "_report.json").read_text())["input"] == i


def test_tables_are_partitioned_by_date(run: Run) -> None:
    for table in ("requests", "pools", "connections", "trends"):
        dates = sorted(p.name for p in (run.out / table).iterdir() if p.is_dir())
        assert dates == ["date=2025-03-01", "date=2025-03-02"], table
    late = rows(run.out, "connections", broker_id=0)[-1]
    assert late["time"] == dt.datetime(2025, 3, 2, 0, 1, tzinfo=dt.UTC)
    assert str(late["date"]) == "2025-03-02"


def test_pools_and_connections_per_minute(run: Run) -> None:
    io = rows(run.out, "pools", broker_id=1, pool="io")
    assert {r["size"] for r in io} == {4}
    assert io[-1]["idle_ratio"] == pytest.approx(0.02)
    assert io[-1]["queue_size_avg"] == pytest.approx(6)
    net = rows(run.out, "pools", broker_id=2, pool="network:PLAINTEXT")
    assert {(r["kind"], r["listener"], r["size"]) for r in net} == {("network", "PLAINTEXT", 3)}
    assert all(r["idle_ratio"] == pytest.approx(0.1) for r in net)
    conns = rows(run.out, "connections", broker_id=0)
    assert {(r["connections_max"], r["muted_max"], r["throttled_max"]) for r in conns} == {
        (4, 1, 0)
    }


def test_trends_slope_queue_time_and_idle_ratio(run: Run) -> None:
    queue = rows(run.out, "trends", broker_id=1, metric="queue_mean_ms", subject="*")
    slopes = [r["slope_per_min"] for r in queue if r["points"] >= 3]
    # +1 ms per 10 s; the first bucket holds five snapshots, not six: a little less at first
    assert slopes and all(s == pytest.approx(6.0, rel=0.1) for s in slopes)
    assert all(r["slope_per_min"] is None for r in queue if r["points"] < 3)
    assert max(r["points"] for r in queue) == 10  # a 10 minute window of 1 minute buckets
    idle = rows(run.out, "trends", broker_id=1, metric="idle_ratio", subject="io")
    assert idle[4]["slope_per_min"] == pytest.approx(-0.06, rel=0.05)
    flat = rows(run.out, "trends", broker_id=0, metric="queue_mean_ms", subject="Produce")
    assert all(abs(r["slope_per_min"]) < 1e-6 for r in flat if r["slope_per_min"] is not None)


def test_dashboard_json_has_aligned_series_per_broker(run: Run) -> None:
    board = json.loads((run.out / "dashboard.json").read_text())
    assert board["schema"] == "trio-broker.dashboard/1" and board["bucket_s"] == 60
    assert [b["broker_id"] for b in board["brokers"]] == [0, 1, 2]
    b1 = board["brokers"][1]
    assert len(b1["time"]) == 12 and b1["time"] == sorted(b1["time"])
    charts = {c["id"]: c for c in b1["charts"]}
    assert {"request_rate", "queue_p99", "idle_ratio", "pool_size", "queue_trend"} <= set(charts)
    for c in b1["charts"]:
        assert all(len(s["values"]) == len(b1["time"]) for s in c["series"]), c["id"]
    assert board["input"]["corrupt_lines"] == 1


def test_the_explicit_schema_reads_only_documented_fields() -> None:
    documented = json.loads(SCHEMA_PATH.read_text())

    def check(spark_type: Any, schema: dict[str, Any], path: str) -> None:
        if "$ref" in schema:
            schema = documented["$defs"][schema["$ref"].split("/")[-1]]
        kind = spark_type.typeName()
        if kind == "struct":
            for f in spark_type.fields:
                props = schema.get("properties", {})
                sub = props.get(f.name) or schema.get("additionalProperties")
                assert isinstance(sub, dict), f"{path}.{f.name} is not in metrics.schema.json"
                check(f.dataType, sub, f"{path}.{f.name}")
        elif kind == "map":
            check(spark_type.valueType, schema["additionalProperties"], path + "[*]")
        elif kind == "array":
            check(spark_type.elementType, schema["items"], path + "[]")

    check(SNAPSHOT, documented, "snapshot")
    check(CLUSTER_SNAPSHOT, documented, "snapshot")


def test_the_job_runs_from_the_command_line() -> None:
    help_ = subprocess.run(
        [sys.executable, "-m", "spark_jobs.trends", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert help_.returncode == 0 and "--bucket-seconds" in help_.stdout


# ------------------------------------------------------------- the advisor


@pytest.fixture(scope="module")
def advice(run: Run) -> dict[str, Any]:
    now = dt.datetime(2025, 3, 2, 0, 5, tzinfo=dt.UTC)
    return advise.run(run.out, advise.Thresholds(), now=now)


def recs(advice: dict[str, Any], broker_id: int) -> list[dict[str, Any]]:
    return [r for r in advice["recommendations"] if r["broker_id"] == broker_id]


def test_saturated_io_pool_gets_more_io_threads_not_network(advice: dict[str, Any]) -> None:
    (rec,) = recs(advice, 1)
    assert (rec["setting"], rec["action"], rec["current"], rec["recommended"]) == (
        "num.io.threads",
        "raise",
        4,
        8,  # wanted 10 (busy + waiting), damped to doubling
    )
    ev = rec["evidence"]
    assert ev["io_idle_ratio_mean"] < 0.2 and ev["queue_time_ms_mean"] > 5
    assert ev["queue_time_slope_ms_per_min"] == pytest.approx(6.0, rel=0.05)
    assert (ev["from"], ev["to"]) == ("2025-03-01T23:52:00Z", "2025-03-02T00:02:00Z")
    assert ev["network_idle_ratio_mean"] == {"PLAINTEXT": 0.9}
    assert "network threads idle enough" in rec["reason"] and rec["status"] == "recommended"


def test_saturated_network_threads_get_more_network_threads(advice: dict[str, Any]) -> None:
    (rec,) = recs(advice, 2)
    assert (rec["setting"], rec["listener"], rec["current"], rec["recommended"]) == (
        "num.network.threads",
        "PLAINTEXT",
        3,
        6,
    )
    assert rec["evidence"]["network_idle_ratio_mean"] == pytest.approx(0.1)


def test_idle_pools_get_fewer_threads_at_most_halved(advice: dict[str, Any]) -> None:
    got = {(r["setting"], r["action"], r["current"], r["recommended"]) for r in recs(advice, 0)}
    assert got == {("num.io.threads", "lower", 8, 4), ("num.network.threads", "lower", 3, 2)}
    assert all("fewer threads do" in r["reason"] for r in recs(advice, 0))


def test_advice_is_written_for_the_dashboard(run: Run, advice: dict[str, Any]) -> None:
    written = json.loads((run.out / "recommendations.json").read_text())
    assert written == json.loads(json.dumps(advice))


# ------------------------------------------------------------- the dashboard


def test_dashboard_page_draws_the_trend_charts_in_a_browser(
    run: Run, advice: dict[str, Any], tmp_path: Path
) -> None:
    b = BrokerThread(
        tmp_path / "data",
        {"admin.listeners": "http://127.0.0.1:0", "dashboard.data.dir": str(run.out)},
    ).start()
    try:
        shot = tmp_path / "dashboard.png"
        dom = load(b.admin_url + "/dashboard", screenshot=shot)
    finally:
        b.stop()
    body = re.search(r"<body[^>]*>", dom)
    assert body and 'data-state="ready"' in body[0], body
    charts = int(re.search(r'data-trend-charts="(\d+)"', dom)[1])  # type: ignore[index]
    assert charts >= 3 * 8
    drawn = [
        (re.search(r'data-points="(\d+)"', div)[1], re.search(r'data-chart="([^"]+)"', div)[1])  # type: ignore[index]
        for div in re.findall(r'<div class="chart"[^>]*>', dom)
    ]
    assert len(drawn) == charts + 3  # and the three live charts
    assert all(int(n) > 0 for n, _ in drawn), drawn
    assert dom.count("<canvas") >= charts  # uPlot drew them
    assert "Queue time trend (10 min slope)" in dom
    assert "num.io.threads" in dom and "num.network.threads" in dom  # the advice table
    assert "io pool" in dom and "4 threads" in dom  # the live cards, from /v1/metrics
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
