"""Every pool gets a verdict, raise, lower or hold, with the comparisons that decided it:
on hand-made trend rows where each verdict happens (the thresholds, the cooldown, a
CPU-bound loop, too few buckets), through ``python -m spark_jobs.advise`` (text and
``--json``) for the one-io-thread broker 76% busy that used to print only "no change
recommended", and with thresholds moved, to show the reasons are the decision's own."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from spark_jobs import advise
from spark_jobs.advise import AdvisorState, Tables, Thresholds, judge_broker

from .conftest import ROOT
from .test_advise import T0, pool_rows, tables, write_tables

TH = Thresholds()


def verdicts(t: Tables, th: Thresholds = TH) -> dict[str, advise.Verdict]:
    return {v.pool: v for v in judge_broker(t, 0, th).verdicts}


def texts(v: advise.Verdict) -> list[str]:
    return [r["text"] for r in v.reasons]


def busy_io_thread() -> Tables:
    """One io thread 76% busy (idle 24%), requests waiting 0.5 ms (p99 1 ms) for 1 ms of
    handler time, the network pool 90% idle: no rule fires."""
    return tables([(1, 0.24)] * 10, [0.5] * 10)


def test_a_76_percent_busy_io_thread_holds_and_says_which_thresholds_kept_it() -> None:
    v = verdicts(busy_io_thread())
    io = v["io"]
    assert (io.verdict, io.current, io.proposed, io.because) == ("hold", 1, None, "thresholds")
    said = texts(io)
    assert "io idle (mean) 24% is at least 20% (io_idle_low)" in said
    assert "queue time (mean) 0.5 ms is below 5.0 ms (queue_high_ms)" in said
    assert "queue time / handler time 0.5x is below 2.0x (queue_to_local)" in said
    assert "io idle (min) 24% is below 80% (io_idle_high)" in said  # nor lowered
    by_check = {r["check"]: r for r in io.reasons}
    assert by_check["io idle (mean)"]["measured"] == 0.24
    assert by_check["io idle (mean)"]["threshold"] == 0.2
    net = v["network:PLAINTEXT"]
    assert (net.verdict, net.setting, net.listener) == ("hold", "num.network.threads", "PLAINTEXT")
    assert "PLAINTEXT network idle (mean) 90% is at least 30% (net_idle_low)" in texts(net)


def test_the_command_prints_and_writes_a_verdict_for_every_pool(tmp_path: Path) -> None:
    out = tmp_path / "trends"
    write_tables(out, busy_io_thread())
    cmd = [sys.executable, "-m", "spark_jobs.advise", "--in", str(out)]
    text = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert text.returncode == 0, text.stderr
    assert (
        "[hold] broker 0 io num.io.threads: hold at 1 (thresholds): "
        "io idle (mean) 24% is at least 20% (io_idle_low)"
    ) in text.stdout
    assert "[hold] broker 0 network:PLAINTEXT num.network.threads (PLAINTEXT): hold at 3" in (
        text.stdout
    )
    doc = json.loads(
        subprocess.run(
            [*cmd, "--json"], capture_output=True, text=True, cwd=ROOT, timeout=60
        ).stdout
    )
    assert doc["recommendations"] == []  # kept, for those who read it
    assert [(v["pool"], v["verdict"], v["current"], v["proposed"]) for v in doc["verdicts"]] == [
        ("io", "hold", 1, None),
        ("network:PLAINTEXT", "hold", 3, None),
    ]
    reason = doc["verdicts"][0]["reasons"][0]
    assert {k: reason[k] for k in ("measured", "threshold", "threshold_name", "met")} == {
        "measured": 0.24,
        "threshold": 0.2,
        "threshold_name": "io_idle_low",
        "met": False,
    }
    assert json.loads((out / "recommendations.json").read_text())["verdicts"] == doc["verdicts"]


def test_a_raise_says_what_met_its_thresholds() -> None:
    io = verdicts(tables([(8, 0.05)] * 10, [20.0] * 10))["io"]
    assert (io.verdict, io.current, io.proposed, io.because) == ("raise", 8, 16, None)
    assert texts(io) == [
        "io idle (mean) 5% is below 20% (io_idle_low)",
        "queue time (mean) 20.0 ms is at least 5.0 ms (queue_high_ms)",
        "queue time / handler time 20.0x is at least 2.0x (queue_to_local)",
        "io pool size 8 is below 64 (max_io)",
    ]


def test_a_busy_listener_raises_its_network_pool() -> None:
    v = verdicts(tables([(8, 0.5)] * 10, [0.5] * 10, net_idle=0.1))
    net = v["network:PLAINTEXT"]
    assert (net.verdict, net.current, net.proposed) == ("raise", 3, 6)
    assert "PLAINTEXT network idle (mean) 10% is below 30% (net_idle_low)" in texts(net)
    assert v["io"].verdict == "hold"


def test_idle_pools_are_lowered_and_say_why() -> None:
    v = verdicts(tables([(8, 0.99)] * 5, [0.1] * 5, net_idle=0.99))
    io = v["io"]
    assert (io.verdict, io.current, io.proposed) == ("lower", 8, 4)
    assert "io idle (min) 99% is at least 80% (io_idle_high)" in texts(io)
    assert "PLAINTEXT network idle (min) 99% is at least 80% (net_idle_high)" in texts(io)
    assert "queue time (mean) 0.1 ms is below 5.0 ms (queue_high_ms)" in texts(io)
    assert "lowered io size 4 is below 8 (the current size)" in texts(io)
    assert v["network:PLAINTEXT"].verdict == "lower"


def test_a_pool_at_its_floor_holds_for_its_size() -> None:
    idle = tables([(1, 0.99)] * 5, [0.1] * 5, net_idle=0.99)
    io = verdicts(idle)["io"]
    assert (io.verdict, io.because) == ("hold", "size limit")
    said = texts(io)  # what would lower it, and the floor that stops it
    assert said[0] == "io idle (min) 99% is at least 80% (io_idle_high)"
    assert said[-1] == "lowered io size 1 is at least 1 (the current size)"


def test_too_few_buckets_hold_every_pool_for_want_of_data() -> None:
    v = verdicts(tables([(4, 0.02)] * 2, [40.0] * 2))
    for pool in ("io", "network:PLAINTEXT"):
        assert (v[pool].verdict, v[pool].because) == ("hold", "not enough data"), pool
        assert texts(v[pool]) == [
            "io buckets since the pool last changed size 2 is below 3 (min_buckets)"
        ]


def test_a_cpu_bound_loop_holds_every_pool() -> None:
    t = tables([(4, 0.02)] * 5, [40.0] * 5)
    j = judge_broker(Tables(t.requests, t.pools + pool_rows("loop", [(1, 0.05)] * 5)), 0, TH)
    assert [r.action for r in j.recommendations] == ["scale-out"]
    for v in j.verdicts:
        assert (v.verdict, v.because) == ("hold", "CPU-bound")
        assert texts(v) == ["event loop busy (mean) 95% is at least 90% (loop_busy_high)"]


def test_a_change_within_the_cooldown_holds_and_says_until_when(tmp_path: Path) -> None:
    out = tmp_path / "trends"
    write_tables(out, tables([(8, 0.01)] * 10, [30.0] * 10))
    at = T0 + dt.timedelta(minutes=10)
    state = AdvisorState(out / "advisor" / "state.json")
    state.changes.append(
        {
            "key": "0/num.io.threads",
            "broker_id": 0,
            "setting": "num.io.threads",
            "pool": "io",
            "listener": None,
            "from": 4,
            "to": 8,
            "at": at.isoformat().replace("+00:00", "Z"),
        }
    )
    state.save()
    doc = advise.run(out, TH, now=at + dt.timedelta(minutes=5))
    io: dict[str, Any] = doc["verdicts"][0]
    assert (io["pool"], io["verdict"], io["proposed"], io["because"]) == (
        "io",
        "hold",
        None,
        "cooldown",
    )
    assert io["reasons"][0]["text"] == (
        "time since the change 4 -> 8 at 2025-03-01T12:10:00Z 300 s is below 600 s (cooldown_s)"
    )
    assert io["reasons"][1]["text"] == "would raise 8 -> 16"
    assert "io idle (mean) 1% is below 20% (io_idle_low)" in [r["text"] for r in io["reasons"]]
    assert [r["status"] for r in doc["recommendations"]] == ["held"]
    later = advise.run(out, TH, now=at + dt.timedelta(minutes=11))
    assert later["verdicts"][0]["verdict"] == "raise"


def test_the_reasons_follow_the_thresholds_the_rules_used() -> None:
    """Moved thresholds change both the decision and the words: one comparison, not two."""
    io = verdicts(busy_io_thread(), Thresholds(io_idle_low=0.3, queue_to_local=0.4))["io"]
    assert (io.verdict, io.proposed) == ("raise", 2)
    assert "io idle (mean) 24% is below 30% (io_idle_low)" in texts(io)
    assert "queue time / handler time 0.5x is at least 0.4x (queue_to_local)" in texts(io)
    held = verdicts(busy_io_thread(), Thresholds(io_idle_low=0.25))["io"]
    assert held.verdict == "hold"
    assert "queue time / handler time 0.5x is below 2.0x (queue_to_local)" in texts(held)
