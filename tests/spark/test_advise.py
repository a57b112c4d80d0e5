"""The advisor's rules and damping on hand-made trend rows (no Spark): the hysteresis band,
queue evidence needed to add io threads, evidence only since the last resize, the
cooldown, the ceiling, and --apply against a real broker's admin API."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs import advise
from spark_jobs.advise import AdvisorState, Tables, Thresholds, advise_broker

from ..support.brokers import BrokerThread
from .conftest import ROOT

T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
TH = Thresholds()


def pool_rows(
    pool: str, buckets: list[tuple[int, float]], *, broker_id: int = 0, depth: float = 0.0
) -> list[dict[str, Any]]:
    """One row a minute: (size, idle ratio)."""
    return [
        {
            "broker_id": broker_id,
            "time": T0 + dt.timedelta(minutes=i),
            "bucket_s": 60,
            "pool": pool,
            "kind": "network" if pool.startswith("network:") else "handler",
            "listener": pool.split(":", 1)[1] if ":" in pool else None,
            "size": size,
            "size_min": size,
            "size_max": size,
            "busy_avg": None,
            "idle_ratio": idle,
            "idle_ratio_min": idle,
            "queue_size_avg": depth if pool == "io" else None,
        }
        for i, (size, idle) in enumerate(buckets)
    ]


def request_rows(queue_ms: list[float], *, broker_id: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "broker_id": broker_id,
            "time": T0 + dt.timedelta(minutes=i),
            "request": "Produce",
            "requests": 600,
            "queue_mean_ms": q,
            "queue_p99_ms": 2 * q,
            "local_mean_ms": 1.0,
        }
        for i, q in enumerate(queue_ms)
    ]


def tables(io: list[tuple[int, float]], queue: list[float], net_idle: float = 0.9) -> Tables:
    net = [(3, net_idle)] * len(io)
    return Tables(
        request_rows(queue), pool_rows("io", io, depth=3) + pool_rows("network:PLAINTEXT", net)
    )


def test_between_the_thresholds_nothing_changes() -> None:
    recs, pools = advise_broker(tables([(8, 0.5)] * 10, [20.0] * 10), 0, TH)
    assert recs == []
    assert {p["pool"]: p["idle_ratio_mean"] for p in pools} == {"io": 0.5, "network:PLAINTEXT": 0.9}


def test_busy_handlers_with_nothing_waiting_are_no_reason_to_add_threads() -> None:
    recs, _ = advise_broker(tables([(8, 0.05)] * 10, [0.2] * 10), 0, TH)
    assert recs == []


def test_queue_time_long_next_to_handler_time_is_high() -> None:
    # 3 ms is under the 5 ms threshold, but three times the 1 ms a handler takes.
    (rec,) = advise_broker(tables([(8, 0.05)] * 10, [3.0] * 10), 0, TH)[0]
    assert rec.setting == "num.io.threads" and "3.0x the time to serve one" in rec.reason
    assert advise_broker(tables([(8, 0.05)] * 10, [1.5] * 10), 0, TH)[0] == []


def test_rising_queue_time_is_enough_with_busy_handlers() -> None:
    # Mean 4.7 ms: under the 5 ms threshold; but +1 ms a minute.
    th = Thresholds(queue_to_local=10)
    recs, _ = advise_broker(tables([(8, 0.05)] * 10, [0.2 + i for i in range(10)]), 0, th)
    (rec,) = recs
    assert (rec.setting, rec.current, rec.recommended) == ("num.io.threads", 8, 16)
    assert "rising +1.0 ms/min" in rec.reason
    assert rec.evidence["queue_time_slope_ms_per_min"] == 1.0
    slower, _ = advise_broker(tables([(8, 0.05)] * 10, [0.2 + i / 2 for i in range(10)]), 0, th)
    assert slower == []


def test_only_buckets_since_the_last_resize_count() -> None:
    saturated = [(2, 0.01)] * 10
    after = [(4, 0.5)] * 3
    recs, pools = advise_broker(tables(saturated + after, [50.0] * 10 + [3.0] * 3), 0, TH)
    assert recs == []  # the old pool's figures no longer speak
    io = next(p for p in pools if p["pool"] == "io")
    assert (io["size"], io["buckets"], io["enough_data"]) == (4, 3, True)
    _, pools = advise_broker(tables(saturated + after[:2], [50.0] * 12), 0, TH)
    io = next(p for p in pools if p["pool"] == "io")
    assert io["enough_data"] is False


def test_a_raise_stops_at_the_ceiling_and_lowering_at_the_floor() -> None:
    th = Thresholds(max_io=8, min_io=6)
    assert advise_broker(tables([(8, 0.0)] * 5, [50.0] * 5), 0, th)[0] == []
    (lower, _) = advise_broker(tables([(8, 0.99)] * 5, [0.1] * 5, net_idle=0.99), 0, th)[0]
    assert (lower.setting, lower.recommended) == ("num.io.threads", 6)


def test_after_an_applied_change_the_setting_is_held_for_the_cooldown(tmp_path: Path) -> None:
    recs, _ = advise_broker(tables([(8, 0.01)] * 10, [30.0] * 10), 0, TH)
    state = AdvisorState(tmp_path / "state.json")
    at = T0 + dt.timedelta(minutes=10)
    state.changes.append(
        {"key": "0/num.io.threads", "from": 4, "to": 8, "at": at.isoformat().replace("+00:00", "Z")}
    )
    held = advise.hold_for_cooldown(recs, state, at + dt.timedelta(minutes=5), TH.cooldown_s)
    assert [r.status for r in held] == ["held"] and "cooldown" in (held[0].note or "")
    later = advise.hold_for_cooldown(recs, state, at + dt.timedelta(minutes=11), TH.cooldown_s)
    assert [r.status for r in later] == ["recommended"]


def write_tables(out: Path, t: Tables) -> None:
    for name, data in (("requests", t.requests), ("pools", t.pools)):
        d = out / name / "date=2025-03-01"
        d.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(data), d / "part.parquet")


def test_apply_resizes_through_the_admin_api_once(tmp_path: Path) -> None:
    out = tmp_path / "trends"
    write_tables(out, tables([(4, 0.02)] * 10, [40.0] * 10))
    b = BrokerThread(tmp_path / "data", {"admin.listeners": "http://127.0.0.1:0"}).start()
    try:
        cmd = [sys.executable, "-m", "spark_jobs.advise", "--in", str(out), "--apply"]
        cmd += ["--admin", b.admin_url]
        first = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert first.returncode == 0, first.stderr
        assert "[applied] broker 0 num.io.threads: 4 -> 8" in first.stdout
        assert httpx.get(b.admin_url + "/v1/pools").json()["io"]["size"] == 8
        again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert "[held] broker 0 num.io.threads: 4 -> 8" in again.stdout  # cooldown
        assert httpx.get(b.admin_url + "/v1/pools").json()["io"]["size"] == 8
        actions = [
            json.loads(x) for x in (out / "advisor" / "actions.jsonl").read_text().splitlines()
        ]
        assert [(a["setting"], a["from"], a["to"]) for a in actions] == [("num.io.threads", 4, 8)]
        # Someone resized the pool meanwhile: the advice no longer fits, nothing is done.
        (out / "advisor" / "state.json").unlink()
        httpx.put(b.admin_url + "/v1/pools/io", json={"size": 5})
        stale = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert "[skipped]" in stale.stdout and "the pool is 5 now, not 4" in stale.stdout
        assert httpx.get(b.admin_url + "/v1/pools").json()["io"]["size"] == 5
    finally:
        b.stop()


def test_a_pool_at_one_thread_is_never_advised_lower() -> None:
    idle = tables([(1, 0.99)] * 5, [0.1] * 5, net_idle=0.99)
    idle = Tables(idle.requests, idle.pools + pool_rows("network:CONTROLLER", [(1, 0.99)] * 5))
    recs, _ = advise_broker(idle, 0, TH)
    assert recs, "three idle pools: the PLAINTEXT network pool (3) may be lowered"
    assert all(r.recommended >= 1 for r in recs), recs
    assert not [r for r in recs if r.current == 1], recs  # nothing below one thread


def test_a_busy_event_loop_is_cpu_bound_advice_and_no_pool_change() -> None:
    """Queue time high and io threads busy, but the loop is 95% busy: more threads would
    only queue on the one CPU. The advice is scale-out, and nothing for --apply."""
    t = tables([(4, 0.02)] * 5, [40.0] * 5)
    t = Tables(t.requests, t.pools + pool_rows("loop", [(1, 0.05)] * 5))
    recs, pools = advise_broker(t, 0, TH)
    assert [(r.setting, r.action, r.status) for r in recs] == [("brokers", "scale-out", "advice")]
    assert "CPU-bound" in recs[0].reason and "no pool size helps" in recs[0].reason
    assert recs[0].evidence["event_loop_busy_ratio_mean"] == 0.95
    assert any(p["pool"] == "loop" for p in pools)
    # the same figures with an idle loop: raise the io pool as before
    calm = Tables(t.requests, [r for r in t.pools if r["pool"] != "loop"])
    calm = Tables(calm.requests, calm.pools + pool_rows("loop", [(1, 0.6)] * 5))
    assert [r.setting for r in advise_broker(calm, 0, TH)[0]] == ["num.io.threads"]


def test_too_few_buckets_is_said_plainly(tmp_path: Path) -> None:
    out = tmp_path / "trends"
    write_tables(out, tables([(4, 0.02)] * 2, [40.0] * 2))
    run = subprocess.run(
        [sys.executable, "-m", "spark_jobs.advise", "--in", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "Not enough data for broker 0 io (need 3 buckets, have 2)" in run.stdout


def test_a_refused_apply_exits_non_zero_with_the_servers_message(tmp_path: Path) -> None:
    out = tmp_path / "trends"
    write_tables(out, tables([(4, 0.02)] * 10, [40.0] * 10))
    b = BrokerThread(
        tmp_path / "data",
        {"admin.listeners": "http://127.0.0.1:0", "admin.token": "s3cret"},
    ).start()
    try:
        cmd = [sys.executable, "-m", "spark_jobs.advise", "--in", str(out), "--apply"]
        cmd += ["--admin", b.admin_url, "--token", "wrong"]
        run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert run.returncode != 0
        assert "HTTP 401" in run.stderr
        assert "requires an Authorization: Bearer <admin.token> header" in run.stderr
        assert httpx.get(b.admin_url + "/v1/status/ready").status_code == 200
        pools = httpx.get(
            b.admin_url + "/v1/pools", headers={"Authorization": "Bearer s3cret"}
        ).json()
        assert pools["io"]["size"] == 4  # nothing changed
    finally:
        b.stop()
