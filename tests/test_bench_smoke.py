"""The benchmark scripts run end to end (tiny loads): they must not rot unnoticed.

Each script is run as a user runs it (``python bench/x.py``) with the smallest load its
options allow, and must exit 0 and write its JSON results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

pytestmark = pytest.mark.slow


def _run(script: str, *args: str, tmp_path: Path, timeout: float = 240) -> dict:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args, "--wait-quiet", "0", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "command: " in proc.stdout
    return json.loads(out.read_text())


def test_request_rate(tmp_path: Path) -> None:
    doc = _run(
        "request_rate.py",
        *("--kinds", "api_versions,produce", "--connections", "2"),
        *("--seconds", "0.2", "--warmup", "0.1", "--repeats", "1"),
        tmp_path=tmp_path,
    )
    cells = doc["results"]["cells"]
    assert {c["target"] for c in cells} == {"echo", "skeleton", "broker"}
    assert all(c["requests"] > 0 for c in cells)


def test_codec_speed(tmp_path: Path) -> None:
    doc = _run(
        "codec_speed.py",
        *("--budget", "0.001", "--rounds", "1", "--repeats", "1"),
        tmp_path=tmp_path,
    )
    best = doc["results"]["best_ns"]["this"]
    assert {c.split(".")[0] for c in best} == {"frame", "decode", "encode", "records", "handler"}
    assert all(ns > 0 for ns in best.values())


def test_connections(tmp_path: Path) -> None:
    doc = _run(
        "connections.py",
        *("--counts", "20", "--settle", "0.1", "--no-echo"),
        tmp_path=tmp_path,
    )
    assert doc["results"]["runs"][0]["opened"] == 20


def test_throughput(tmp_path: Path) -> None:
    doc = _run(
        "throughput.py",
        *("--sizes", "1024", "--acks", "1", "--pairs", "1", "--mb", "2"),
        *("--consume-mb", "1", "--consume-passes", "1", "--paced-seconds", "0.5"),
        tmp_path=tmp_path,
    )
    runs = doc["results"]["runs"]
    assert {r["target"] for r in runs} == {"ours", "mock"}
    assert all(r["produce"]["complete"] and r["consume"]["complete"] for r in runs)


def test_control_plane(tmp_path: Path) -> None:
    doc = _run(
        "control_plane.py",
        *("--rounds", "1", "--connections", "20", "--warmup", "0.3"),
        tmp_path=tmp_path,
    )
    for setup in ("separate", "shared"):
        (run,) = doc["results"][setup]
        assert run["not_leader_ms"] > 0


def test_resize(tmp_path: Path) -> None:
    doc = _run(
        "resize.py",
        *("--phase-seconds", "0.5", "--producers", "1", "--rate", "500"),
        tmp_path=tmp_path,
    )
    assert [(r["io"], r["network"]) for r in doc["results"]] == [(8, 3), (2, 1), (16, 4), (8, 3)]
    assert all(r["errors"] == 0 and r["msg_per_s"] > 0 for r in doc["results"])


def test_soak(tmp_path: Path) -> None:
    doc = _run(
        "soak.py",
        *("--duration", "20", "--warmup", "4", "--sample-interval", "1"),
        *("--member-interval", "6", "--resize-interval", "3", "--quota-interval", "4"),
        *("--rate", "300", "--churn", "10"),
        tmp_path=tmp_path,
    )
    results = doc["results"]
    assert all(results["checks"].values()), results["checks"]
    assert results["acknowledged"] > 5000 and results["lost"] == 0
    events = results["events"]
    assert events["resize"] >= 4 and events["quota_change"] >= 3
    assert events["member_replaced"] >= 2 and events["churn_connections"] >= 100


def test_reassignment(tmp_path: Path) -> None:
    # A real ZooKeeper (Debian's, as tests/control) and three broker processes.
    doc = _run(
        "reassignment.py",
        *("--mb", "2", "--rate", "200", "--after-seconds", "0.5"),
        tmp_path=tmp_path,
    )
    result = doc["results"]
    assert result["reader"]["acknowledged"] > 1900
    assert result["reader"]["missing"] == 0 == result["moved"]["missing"]


def test_txn_drill(tmp_path: Path) -> None:
    # A consume-transform-produce app killed with kill -9 mid-work, the broker restarted.
    doc = _run(
        "txn_drill.py",
        *("--records", "2000", "--kills", "3", "--restart-every", "2"),
        tmp_path=tmp_path,
    )
    result = doc["results"]
    assert result["kills"] == 3 and result["broker_restarts"] == 1
    committed = result["read_committed"]
    assert committed["read"] == 2000
    assert committed["missing"] == 0 == committed["duplicates"] == committed["unexpected"]


def test_txn_drill_on_three_brokers(tmp_path: Path) -> None:
    # The same across three brokers: the transaction coordinator's broker killed (kill -9)
    # while the app works, then started again on its data.
    doc = _run(
        "txn_drill.py",
        *("--cluster", "--records", "8000", "--kills", "2", "--restart-every", "2"),
        tmp_path=tmp_path,
    )
    result = doc["results"]
    assert result["kills"] == 2 and result["brokers_killed"] == 1
    committed = result["read_committed"]
    assert committed["read"] == 8000
    assert committed["missing"] == 0 == committed["duplicates"] == committed["unexpected"]


def test_transactions(tmp_path: Path) -> None:
    doc = _run("transactions.py", *("--records", "500", "--pairs", "1"), tmp_path=tmp_path)
    summary = doc["results"]["summary"]
    assert summary["transactional"]["records_per_s"] > 0
    assert summary["ratio_transactional_to_idempotent"] > 0


def test_balance_proof(tmp_path: Path) -> None:
    # Real ZooKeeper and broker processes; the balance job runs as an operator runs it, on
    # its plain-Python engine (the Spark engine's own tests are tests/spark/), over tables
    # from spark_jobs.balance.sample (no Spark). The grow proof only: the skew proof runs
    # in the next test, over the default tables (the scraper and the trends job). Tiny
    # loads: the figures are the script's, the checks here only that it works end to end.
    doc = _run(
        "balance_proof.py",
        *("--tables", "sample", "--engine", "python", "--only", "grow"),
        *("--rf", "2", "--partitions", "3", "--warmup", "1"),
        *("--phase-seconds", "2", "--sample-seconds", "2", "--interval", "1"),
        *("--effect-seconds", "0", "--grow-partitions", "3", "--fill-mb", "3"),
        *("--rate", "100", "--throttle", "1000000", "--after-seconds", "1"),
        tmp_path=tmp_path,
    )
    assert "skew_rf2" not in doc["results"]
    grow = doc["results"]["grow"]
    assert grow["add"]["execution"]["status"] == "done" and grow["add"]["replicas_on_3"] > 0
    assert grow["remove"]["replicas_left_on_1"] == 0 and grow["remove"]["broker_1_exit_code"] == 0
    check = grow["check"]
    assert check["acknowledged"] > 1000 and check["failed"] == 0
    assert check["missing"] == 0 == check["duplicates"] == check["offset_differs"]


def test_balance_proof_over_the_trends_tables(tmp_path: Path) -> None:
    # The script's default source of tables: spark_jobs.scrape --cluster for 3 s, then the
    # trends job (Spark local[2]) over what it scraped; the skew proof only (one Spark job).
    doc = _run(
        "balance_proof.py",
        *("--tables", "trends", "--only", "skew", "--engine", "python", "--rf", "2"),
        *("--partitions", "3", "--warmup", "1", "--phase-seconds", "2"),
        *("--sample-seconds", "3", "--interval", "1", "--effect-seconds", "0"),
        tmp_path=tmp_path,
        timeout=420,
    )
    skew = doc["results"]["skew_rf2"]
    assert skew["execution"]["status"] == "done" and skew["exit_status"] == 0
    assert skew["after"]["brokers"]["0"]["leaders"] < 3 and skew["delivery_errors"] == 0
    assert skew["plan"]["leadership_moves"] + skew["plan"]["replica_moves"] > 0


def test_compaction_segments(tmp_path: Path) -> None:
    doc = _run(
        "compaction_segments.py",
        *("--seconds", "3", "--warmup", "0", "--rate", "300"),
        tmp_path=tmp_path,
    )
    results = doc["results"]
    assert results["updates"] > 0 and results["keys_wrong"] == []
    assert results["samples"] and results["segments_final"] >= 1


def test_partitions(tmp_path: Path) -> None:
    # Tiny counts: the figures are the script's; the checks are that every phase runs and
    # every partition's message is read back after both restarts.
    doc = _run(
        "partitions.py",
        *("--counts", "30", "--per-topic", "10", "--metadata-repeats", "1"),
        *("--fanout-partitions", "20", "--fanout-rounds", "2"),
        tmp_path=tmp_path,
    )
    (row,) = doc["results"]["counts"]
    assert row["partitions"] == 30 and row["topics"] == 3
    assert row["clean_restart_records_ok"] and row["kill9_restart_records_ok"]
    assert row["fds"] >= 30 * 3 and row["stop_s"] > 0
    assert {r["target"] for r in doc["results"]["fanout"]} == {"ours", "mock"}


def test_partitions_with_a_bound_on_open_segment_files(tmp_path: Path) -> None:
    # 60 partitions (180 segment files) under log.open.files.max=30: the process holds the
    # bound and its other descriptors (fewer than 60 of those), and every message is read
    # back after both restarts.
    doc = _run(
        "partitions.py",
        *("--counts", "60", "--per-topic", "20", "--metadata-repeats", "1"),
        *("--fanout-partitions", "0", "--open-files-max", "30"),
        tmp_path=tmp_path,
    )
    (row,) = doc["results"]["counts"]
    assert row["open_files_max"] == 30
    assert row["clean_restart_records_ok"] and row["kill9_restart_records_ok"]
    for fds in (row["fds"], row["fds_clean_restart"], row["fds_kill9_restart"]):
        assert 30 <= fds < 30 + 60, row


def test_partitions_refuses_more_than_the_open_files_limit(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "partitions.py"), "--counts", "100000000"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refused: 100,000,000 partitions need" in proc.stderr
    assert "RLIMIT_NOFILE" in proc.stderr and "command: " not in proc.stdout


def test_telemetry(tmp_path: Path) -> None:
    doc = _run(
        "telemetry.py",
        *("--instances", "20", "--cap", "16384,10", "--faults"),
        tmp_path=tmp_path,
    )
    rows = doc["results"]["rows"]
    assert [(r["cap"], r["faults"]) for r in rows] == [
        (16384, False),
        (16384, True),
        (10, False),
        (10, True),
    ]
    assert [(r["instances_kept"], r["evicted"]) for r in rows] == [(40, 0)] * 2 + [(10, 30)] * 2
    assert all(r["clients_read"] == r["instances_kept"] for r in rows)
    assert all(r["code"] == "this" for r in rows)


def test_telemetry_against_another_checkout(tmp_path: Path) -> None:
    """``--compare-src``: each setting runs the other checkout's broker first (here this
    checkout again, standing for a worktree of a base commit)."""
    doc = _run(
        "telemetry.py",
        *("--instances", "5", "--cap", "16384", "--compare-src", str(BENCH.parent)),
        tmp_path=tmp_path,
    )
    rows = doc["results"]["rows"]
    assert [r["code"] for r in rows] == ["compared", "this"]
    assert all(r["instances_kept"] == 10 and r["first_read_ms"] > 0 for r in rows)


def test_rebalance(tmp_path: Path) -> None:
    doc = _run(
        "rebalance.py",
        *("--repetitions", "1", "--partitions", "12", "--rate", "120", "--read", "10"),
        tmp_path=tmp_path,
    )
    rows = doc["results"]["rows"]
    assert {r["mode"] for r in rows} == {"classic-range", "classic-coop", "consumer"}
    for r in rows:
        assert r["broker_state"] == "STABLE" and r["two_owners"] == 0
        assert 0 < r["seventh_assigned_s"] <= r["stable_s"] + 1e-3
        assert r["seventh_holds"] in (1, 2)
