"""The balance job over tables written through Spark (Parquet, partitioned by date, as the
trends job writes them): Spark's aggregation and the plain-Python one observe the same
figures, and ``python -m spark_jobs.balance`` on ``local[2]`` writes the same plan as
``--engine python`` does, run after run."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from spark_jobs.balance.monitor import observe_files, observe_spark
from spark_jobs.balance.report import same_plan
from spark_jobs.balance.tables import BROKERS, PARTITIONS, write_rows

from .balance_rows import B, P, rows, skewed
from .conftest import ROOT, spark_cli_args, spark_env


def write_skewed(spark: Any, out: Path) -> None:
    brokers, parts = skewed(12, rf=2)
    brokers[2] = B(loop_busy=0.2, buckets=[0, 1, 2])  # gone for the last two buckets
    parts[("payments", 0)] = P([1, 2], bytes_in=1000.0, size=123)
    brows, prows = rows(brokers, parts)
    write_rows(spark, BROKERS, brows, str(out))
    write_rows(spark, PARTITIONS, prows, str(out))


def test_spark_and_plain_python_observe_the_same(spark: Any, tmp_path: Path) -> None:
    write_skewed(spark, tmp_path)
    assert sorted(p.name for p in (tmp_path / BROKERS).glob("date=*")) == [
        "date=2025-03-01",
        "date=2025-03-02",
    ]
    by_spark = observe_spark(spark, str(tmp_path), 600.0, history_s=3600)
    by_python = observe_files(tmp_path, 600.0, history_s=3600)
    assert asdict(by_spark) == asdict(by_python)
    assert len(by_spark.brokers) == 3 and len(by_spark.partitions) == 13
    assert [b.buckets for b in by_spark.brokers] == [5, 5, 3]
    payments = by_spark.partitions[-1]
    assert payments.key == ("payments", 0) and payments.leader_rates["bytes_in_per_s"] == 1000.0
    assert payments.follower_replication_in_per_s == 1000.0 and payments.log_size_bytes == 123

    # A shorter window: only the newest two buckets count.
    recent = observe_spark(spark, str(tmp_path), 120.0)
    assert [b.buckets for b in recent.brokers] == [2, 2]
    assert asdict(recent) == asdict(observe_files(tmp_path, 120.0))


def balance(trends: Path, *extra: str, timeout: float = 300) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "spark_jobs.balance", "--in", str(trends), *extra, "balance"],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=ROOT,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "leader count balance" in done.stdout
    doc: dict[str, Any] = json.loads((trends / "balance" / "plan.json").read_text())
    return doc


def test_the_job_on_local_spark_plans_as_plain_python_does(spark: Any, tmp_path: Path) -> None:
    write_skewed(spark, tmp_path)
    on_spark = balance(tmp_path, *spark_cli_args(), "--down-after-seconds", "90")
    python = balance(tmp_path, "--engine", "python", "--down-after-seconds", "90")
    again = balance(tmp_path, "--engine", "python", "--down-after-seconds", "90")
    assert on_spark["moves"] and same_plan(on_spark, python) and same_plan(python, again)
    # Broker 2 has been gone for two buckets (more than 90 s): it is dead, holds replicas
    # the plan leaves alone (fix-offline is the command for them), and takes none.
    roles = {b["broker_id"]: b["role"] for b in on_spark["brokers"]}
    assert roles == {0: "member", 1: "member", 2: "dead"}
    assert all(2 not in mv["adding"] for mv in on_spark["moves"])
