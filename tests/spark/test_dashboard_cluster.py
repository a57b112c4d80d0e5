"""The dashboard's cluster view and the advisor's verdicts, in headless Chromium, over what
the real jobs wrote: made-up snapshots of three brokers with known rates go through the
trends job (Spark), the advisor and the balance job (``--engine python``, as its own
process), into a broker's ``dashboard.data.dir``; the page is read as a user reads it.

The cluster: broker 0 leads orders-0 (5000 B/s in, 2000 out), orders-1 (1000 in) and
orders-2 (200 in) until orders-1's leadership moves to broker 2 at 23:53 (the balance
execution recorded in ``balance/actions.jsonl``, whose effect the balance job measures
from the tables); broker 1 leads orders-3 (300 in). Broker 0 has one io thread, 76% busy.
"""

from __future__ import annotations

import copy
import datetime as dt
import html
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_jobs import advise, trends
from tests.admin.conftest import ADMIN, TOKEN
from tests.admin.test_dashboard import attrs, text
from tests.support.brokers import BrokerThread
from tests.support.browser import load

from .conftest import ROOT
from .synthetic import T0, FakeBroker, write_jsonl
from .test_cluster_tables import ZERO, with_load

TICKS = 35  # 10 s apart: 23:50:10 .. 23:55:50, six one-minute buckets
MOVED_AT = T0 + dt.timedelta(minutes=3)  # orders-1 led by broker 2 from here on
RATES_IN = {0: 5000, 1: 1000, 2: 200, 3: 300}  # bytes in per second at the leader
RATES_OUT = {0: 2000}
REPLICAS = {0: [0, 1, 2], 1: [0, 1, 2], 2: [0, 1, 2], 3: [1, 2, 0]}
SIZE = 1_000_000  # each replica's log
ENGINE = ("--engine", "python")
NONE = "\u2013"  # what the page shows for no value (an en dash)


def leader(partition: int, at: dt.datetime) -> int:
    if partition == 1 and at >= MOVED_AT:
        return 2
    return REPLICAS[partition][0]


def scenario(scraped: Path) -> None:
    brokers = {0: FakeBroker(0, io_size=1), 1: FakeBroker(1), 2: FakeBroker(2)}
    counters = {(b, p): dict(ZERO) for b in brokers for p in REPLICAS}
    lines: dict[int, list[dict[str, Any]]] = {b: [] for b in brokers}
    for _ in range(TICKS):
        at = brokers[0].now + dt.timedelta(seconds=10)
        for b, fb in brokers.items():
            parts = []
            for p, replicas in REPLICAS.items():
                c = counters[(b, p)]
                lead = leader(p, at)
                if lead == b:
                    c["bytes_in"] += RATES_IN[p] * 10
                    c["bytes_out"] += RATES_OUT.get(p, 0) * 10
                    c["messages_in"] += RATES_IN[p] // 100 * 10
                else:
                    c["replication_bytes_in"] += RATES_IN[p] * 10
                parts.append(
                    {
                        "topic": "orders",
                        "partition": p,
                        "leader": lead,
                        "role": "leader" if lead == b else "follower",
                        "replicas": replicas,
                        "isr": replicas,
                        "log_size_bytes": SIZE,
                        "log_start_offset": 0,
                        "log_end_offset": 1000,
                        "high_watermark": 1000,
                        **c,
                        "lag_messages": 0,
                        "follower_lag_messages": {},
                    }
                )
            after = at >= MOVED_AT
            busy = {0: 0.5 if after else 0.6, 1: 0.3, 2: 0.2 if after else 0.1}[b]
            io_idle = {0: 0.24, 1: 0.8, 2: 0.9}[b]
            snap = fb.tick(
                10,
                requests={"Produce": 600},
                queue_ms={"Produce": 0.5},
                local_ms={"Produce": 1.0},
                io_idle=io_idle,
                net_idle=0.95,
            )
            snap = with_load(snap, copy.deepcopy(parts), busy)
            snap["log_dirs"] = [  # one 100 GB volume
                {
                    "path": "/d1",
                    "size_bytes": 4 * SIZE,
                    "total_bytes": 10**11,
                    "free_bytes": 9 * 10**10,
                }
            ]
            lines[b].append(snap)
    for b, snaps in lines.items():
        write_jsonl(scraped / f"broker={b}" / "all.jsonl", snaps)


def iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


@pytest.fixture(scope="module")
def data_dir(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The trends job's output, the advisor's and the balance job's, in one directory."""
    base = tmp_path_factory.mktemp("dashboard_cluster")
    scenario(base / "scraped")
    out = base / "trends"
    trends.run(spark, str(base / "scraped"), str(out), bucket_s=60)  # type: ignore[arg-type]
    advise.run(out, advise.Thresholds())
    (out / "balance").mkdir()
    execution = {"plan_generated_at": "2025-03-01T23:52:30Z", "status": "done"}
    execution |= {"started_at": iso(MOVED_AT), "finished_at": iso(MOVED_AT), "moves": []}
    (out / "balance" / "actions.jsonl").write_text(json.dumps(execution) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.balance", "--in", str(out), *ENGINE, "balance"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    yield out


def test_the_trends_job_writes_the_cluster_view(data_dir: Path) -> None:
    cluster = json.loads((data_dir / "dashboard.json").read_text())["cluster"]
    assert [b["broker_id"] for b in cluster["brokers"]] == [0, 1, 2]  # busiest loop first
    b0 = cluster["brokers"][0]
    # 6200 B/s for the 160 s measured before the move, 5200 for the 180 s after
    assert b0["bytes_in_per_s"] == pytest.approx((6200 * 160 + 5200 * 180) / 340, abs=0.01)
    assert b0["loop_busy_ratio"] == pytest.approx(0.55)
    assert (b0["leaders"], b0["replicas"], b0["disk_used_bytes"]) == (2, 4, 4 * SIZE)
    hot = cluster["partitions"]
    assert [(p["partition"], p["bytes_in_per_s"], p["bytes_out_per_s"]) for p in hot] == [
        (0, 5000.0, 2000.0),
        (1, 1000.0, 0.0),
        (3, 300.0, 0.0),
        (2, 200.0, 0.0),
    ]
    assert hot[1]["leader"] == 2


@pytest.fixture(scope="module")
def page(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = {**ADMIN, "admin.token": TOKEN, "dashboard.data.dir": str(data_dir)}
    b = BrokerThread(tmp_path_factory.mktemp("broker"), settings).start()
    try:
        yield load(b.admin_url + f"/dashboard#token={TOKEN}")
    finally:
        b.stop()


def rows_of(dom: str, table_id: str) -> list[tuple[dict[str, str], str]]:
    """Each body row of a table: its attributes and its text."""
    m = re.search(rf'<table id="{table_id}">(.*?)</table>', dom, re.S)
    assert m is not None, f"no table {table_id}"
    body = m[1].split("<tbody>", 1)[1]
    found = []
    for r in re.finditer(r"<tr\b([^>]*)>(.*?)</tr>", body, re.S):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', r[1]))
        found.append((a, " ".join(text(r[2]).split())))
    return found


def test_the_page_shows_each_pools_verdict_and_why_it_holds(page: str) -> None:
    (body,) = attrs(page, "body")
    assert body["data-state"] == "ready", body
    verdicts = dict((a["data-pool"], t) for a, t in rows_of(page, "verdicts"))
    held = verdicts["0/io"]
    assert "hold (thresholds)" in held and "1 thread" in held
    assert "io idle (mean) 24% is at least 20% (io_idle_low)" in held
    assert "queue time (mean) 0.5 ms is below 5.0 ms (queue_high_ms)" in held
    assert "lower 8 → 4 threads" in verdicts["2/io"]
    assert "io idle (min) 90% is at least 80% (io_idle_high)" in verdicts["2/io"]


def test_the_page_shows_the_brokers_by_load_and_the_hottest_partitions(page: str) -> None:
    brokers = rows_of(page, "cluster-brokers")
    assert [a["data-broker"] for a, _ in brokers] == ["0", "1", "2"]
    first = brokers[0][1]
    assert first.startswith("0 (r1) 55% 24% 95% 5.7 kB 2.0 kB 2 4 4.0 MB of 100.0 GB"), first
    hot = rows_of(page, "hot-partitions")
    assert hot[0][0]["data-partition"] == "orders-0"  # the hottest named first
    assert hot[0][1] == "orders-0 0 0, 1, 2 5.0 kB 2.0 kB 50.0 1.0 MB"
    assert [a["data-partition"] for a, _ in hot] == ["orders-0", "orders-1", "orders-3", "orders-2"]
    assert "One broker in the tables" not in html.unescape(page)


def test_the_page_shows_the_last_plan_its_state_and_the_measured_effect(
    page: str, data_dir: Path
) -> None:
    plan = json.loads((data_dir / "balance" / "plan.json").read_text())
    said = text(page)
    assert f"balance, generated {plan['generated_at']}" in said
    assert "State: planned, not applied" in said
    moves = {a["data-move"]: t for a, t in rows_of(page, "balance-moves")}
    assert plan["moves"], "the skewed leadership gives the plan moves"
    for m in plan["moves"]:
        key = f"{m['topic']}-{m['partition']}"
        row = moves[key]
        assert f"{key} {', '.join(map(str, m['replicas_before']))} → " in row
        assert f"{m['leader_before']} → {m['leader_after']} planned" in row
    effect = dict((a["data-broker"], t) for a, t in rows_of(page, "effect-tables"))
    # broker 0 before and after the move of orders-1's leadership, from the brokers table
    assert effect["0"] == "0 60% → 50% 24% → 24% 6.2 kB → 5.2 kB 2.0 kB → 2.0 kB 3 → 2 4 → 4"
    assert effect["2"].startswith("2 10% → 20% 90% → 90% 0 B → 1.0 kB")


def test_a_plan_being_applied_shows_each_moves_state_and_the_live_effect(
    data_dir: Path, tmp_path: Path
) -> None:
    """The plan the balance job wrote, with an execution as ``executor.execute`` records
    it: first under way (what the job writes into plan.json as moves start and end), then
    done with the executor's measurements before and after."""
    plan = json.loads((data_dir / "balance" / "plan.json").read_text())
    first, *rest = plan["moves"]
    key = f"{first['topic']}-{first['partition']}"
    shown = tmp_path / "dashboard"
    (shown / "balance").mkdir(parents=True)
    (shown / "dashboard.json").write_text((data_dir / "dashboard.json").read_text())
    moving = {"topic": first["topic"], "partition": first["partition"], "status": "moving"}
    running = {"started_at": "2025-03-01T23:57:00Z", "status": "running", "moves": [moving]}
    (shown / "balance" / "plan.json").write_text(json.dumps({**plan, "execution": running}))
    settings = {**ADMIN, "admin.token": TOKEN, "dashboard.data.dir": str(shown)}
    b = BrokerThread(tmp_path / "broker", settings).start()
    try:
        dom = load(b.admin_url + f"/dashboard#token={TOKEN}")
        assert "State: applying since 2025-03-01T23:57:00Z; moves: 1 moving" in text(dom)
        states = {a["data-move"]: t for a, t in rows_of(dom, "balance-moves")}
        assert " moving " in states[key]
        assert "No measured effect yet" not in text(dom)  # the tables' effect is still there

        figures = {"loop_busy_ratio": 0.6, "io_idle_ratio": 0.24, "bytes_in_per_s": 6200.0}
        after = {"loop_busy_ratio": 0.45, "io_idle_ratio": 0.3, "bytes_in_per_s": 5000.0}
        done_moves = [{**moving, "status": "done", "seconds": 1.5}]
        finished = {
            **running,
            "status": "done",
            "finished_at": "2025-03-01T23:57:30Z",
            "moves": done_moves,
            "before": {"0": {**figures, "leaders": 3, "replicas": 4}},
            "after": {"0": {**after, "leaders": 2, "replicas": 4}},
        }
        (shown / "balance" / "plan.json").write_text(json.dumps({**plan, "execution": finished}))
        dom = load(b.admin_url + f"/dashboard#token={TOKEN}")
    finally:
        b.stop()
    said = text(dom)
    assert "State: done (2025-03-01T23:57:00Z .. 2025-03-01T23:57:30Z); moves: 1 done" in " ".join(
        said.split()
    )
    states = {a["data-move"]: t for a, t in rows_of(dom, "balance-moves")}
    assert " done " in states[key]
    assert all(f" {NONE} " in states[f"{m['topic']}-{m['partition']}"] for m in rest)
    (live,) = rows_of(dom, "effect-live")
    assert live[1] == f"0 60% → 45% 24% → 30% 6.2 kB → 5.0 kB {NONE} → {NONE} 3 → 2 4 → 4"


def test_one_broker_and_no_plan_are_said_plainly(
    spark: Any, data_dir: Path, tmp_path: Path
) -> None:
    """The trends job over broker 0's snapshots alone, and no balance job run."""
    out = tmp_path / "one"
    scraped = data_dir.parent / "scraped" / "broker=0"
    trends.run(spark, str(scraped), str(out), bucket_s=60)  # type: ignore[arg-type]
    settings = {**ADMIN, "admin.token": TOKEN, "dashboard.data.dir": str(out)}
    b = BrokerThread(tmp_path / "broker", settings).start()
    try:
        dom = load(b.admin_url + f"/dashboard#token={TOKEN}")
    finally:
        b.stop()
    said = " ".join(text(dom).split())
    assert "One broker in the tables: there is nothing to balance between brokers." in said
    assert [a["data-broker"] for a, _ in rows_of(dom, "cluster-brokers")] == ["0"]
    assert "No balance plan yet: run python -m spark_jobs.balance" in said
    assert "No change recommended" not in said and "No advice yet" in said
