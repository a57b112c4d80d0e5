"""The balance job over what the trends job writes (issue 32's loop): snapshots with known
per-partition rates (``skewed_scrape``: broker 0 leads every partition and is the busy
one) go through the trends job (Spark ``local[2]``), and the balance job reads its
``brokers`` and ``partitions`` tables: every column its contract (``balance.tables``)
names is there with that type, both engines observe exactly the rates the snapshots
carry, and the plan moves leadership off broker 0. A table with a column renamed is
refused, naming it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs import trends
from spark_jobs.balance import tables
from spark_jobs.balance.cli import make_plan, state_from_tables
from spark_jobs.balance.model import Settings
from spark_jobs.balance.monitor import observe_files, observe_spark
from spark_jobs.balance.report import same_plan

from . import skewed_scrape as sc
from .conftest import ROOT

WINDOW_S = 600.0


@pytest.fixture(scope="module")
def out(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("balance_trends")
    sc.write(base / "scraped")
    report = trends.run(spark, str(base / "scraped"), str(base / "out"), bucket_s=60)  # type: ignore[arg-type]
    # Three one-minute buckets; broker 0 holds 6 replicas, brokers 1 and 2 three each.
    assert report["tables"]["brokers"] == 3 * 3 and report["tables"]["partitions"] == 12 * 3
    yield base / "out"


def _arrow(t: pa.DataType) -> Any:
    return ("list", t.value_type) if pa.types.is_list(t) else t


def test_the_trends_tables_are_what_the_balance_contract_names(spark: Any, out: Path) -> None:
    for table, columns in tables.COLUMNS.items():
        # As the Spark engine reads them (the date is the partition directory's).
        found = {f.name: f.dataType for f in spark.read.parquet(str(out / table)).schema}
        for name, kind in columns:
            assert name in found, f"{table}.{name}: not written by the trends job"
            assert found[name] == tables.spark_type(kind), f"{table}.{name}"
        # As the plain-Python engine reads them (pyarrow).
        schema = pq.read_table(out / table, partitioning="hive").schema
        want = tables.arrow_schema(table)
        for name, _ in columns:
            if name != "date":
                assert _arrow(schema.field(name).type) == _arrow(want.field(name).type), name
        # The trends job's only other columns: the bucket's length and what its rates cover.
        assert set(found) - {n for n, _ in columns} == {"bucket_s", "snapshots", "seconds"}


def expected_partition(p: int) -> dict[str, Any]:
    r = sc.rates(p)
    return {
        "topic": "t",
        "partition": p,
        "leader": 0,
        "replicas": (0, sc.follower(p)),
        "buckets": 3,
        "leader_rates": {
            "bytes_in_per_s": r["bytes_in"],
            "bytes_out_per_s": r["bytes_out"],
            "messages_in_per_s": r["messages_in"],
            "produce_requests_per_s": r["produce_requests"],
            "fetch_requests_per_s": r["fetch_requests"],
            "replication_bytes_out_per_s": r["replication_bytes_out"],
        },
        "follower_replication_in_per_s": r["bytes_in"],
        "log_size_bytes": sc.log_size(p, sc.TICKS),
    }


def test_both_engines_observe_the_rates_the_snapshots_carry(spark: Any, out: Path) -> None:
    by_spark = observe_spark(spark, str(out), WINDOW_S, history_s=3600)
    by_python = observe_files(out, WINDOW_S, history_s=3600)
    assert asdict(by_spark) == asdict(by_python)
    assert [asdict(p) for p in by_spark.partitions] == [
        expected_partition(p) for p in range(sc.PARTITIONS)
    ]
    led = sum(1000 * (p + 1) for p in range(sc.PARTITIONS))
    followed = {b: sum(1000 * (p + 1) for p in range(6) if sc.follower(p) == b) for b in (1, 2)}
    figures = {b.broker_id: dict(b.figures) for b in by_spark.brokers}
    assert [b.buckets for b in by_spark.brokers] == [3, 3, 3]
    for b, (busy, idle) in sc.LOAD.items():
        f = figures[b]
        assert (f["loop_busy_ratio"], f["io_idle_ratio"]) == (busy, idle)
        assert f["request_queue_p99_ms"] == 4.0 and f["rack"] is None
        assert f["replicas"] == (6 if b == 0 else 3) and f["leaders"] == (6 if b == 0 else 0)
        assert f["disk_total_bytes"] == 10**12
    assert figures[0]["bytes_in_per_s"] == led and figures[0]["replication_bytes_in_per_s"] == 0
    assert figures[0]["replication_bytes_out_per_s"] == led
    assert figures[0]["bytes_out_per_s"] == led / 2
    assert figures[0]["disk_used_bytes"] == sum(sc.log_size(p, sc.TICKS) for p in range(6))
    for b in (1, 2):
        assert figures[b]["replication_bytes_in_per_s"] == followed[b]
        assert figures[b]["bytes_in_per_s"] == 0 and figures[b]["bytes_out_per_s"] == 0
    assert len(by_spark.history) == 9  # three buckets of three brokers, for detect and effect


def test_the_plan_from_the_trends_tables_moves_leadership_off_the_busy_broker(
    spark: Any, out: Path
) -> None:
    observed = observe_spark(spark, str(out), WINDOW_S)
    state = state_from_tables(observed, down_after_s=300)
    assert set(state.brokers) == {0, 1, 2} and not state.dead()
    doc = make_plan("balance", [], observed, state, Settings())
    again = make_plan("balance", [], observe_files(out, WINDOW_S), state, Settings())
    assert same_plan(doc, again)
    by_id = {b["broker_id"]: b for b in doc["brokers"]}
    # The model's input is the observation: broker 0's own cost makes it the busy one.
    assert by_id[0]["observed"]["loop_busy_ratio"] == 0.6
    assert by_id[0]["before"]["leaders"] == 6 and by_id[0]["before"]["loop_busy"] == 0.6
    assert by_id[0]["before"]["io_busy"] == pytest.approx(0.8)
    goals = {g["name"]: g["status"] for g in doc["goals"]}
    for goal in ("replica count balance", "leader count balance", "event-loop busy balance"):
        assert goals[goal] == "met", goals
    # Replicas 6/3/3 become 4/4/4 (two moves off broker 0, each copying its log as the
    # table sized it), leaders 6/0/0 become 2/2/2.
    assert [b["after"]["replicas"] for b in doc["brokers"]] == [4, 4, 4]
    assert [b["after"]["leaders"] for b in doc["brokers"]] == [2, 2, 2]
    copied = [mv for mv in doc["moves"] if mv["kind"] == "replicas"]
    assert len(copied) == 2 and all(0 in mv["replicas_before"] for mv in copied)
    sizes = {mv["partition"]: sc.log_size(mv["partition"], sc.TICKS) for mv in copied}
    assert doc["summary"]["bytes_to_copy"] == sum(sizes.values())
    assert max(by_id[i]["after"]["loop_busy"] for i in (0, 1, 2)) < 0.6


def test_a_table_with_a_column_renamed_is_refused_by_name(
    spark: Any, out: Path, tmp_path: Path
) -> None:
    renamed = tmp_path / "trends"
    shutil.copytree(out / tables.PARTITIONS, renamed / tables.PARTITIONS)
    brokers = pq.read_table(out / tables.BROKERS, partitioning="hive")
    names = ["io_idle" if n == "io_idle_ratio" else n for n in brokers.column_names]
    pq.write_to_dataset(
        brokers.rename_columns(names),
        root_path=str(renamed / tables.BROKERS),
        partition_cols=["date"],
    )
    with pytest.raises(tables.TableError, match=r"no column\(s\) io_idle_ratio"):
        observe_spark(spark, str(renamed), WINDOW_S)
    with pytest.raises(tables.TableError, match=r"no column\(s\) io_idle_ratio"):
        observe_files(renamed, WINDOW_S)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs.balance",
            "--in",
            str(renamed),
            "--engine",
            "python",
            "balance",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{renamed / tables.BROKERS}: not the brokers table" in done.stderr
    assert "Traceback" not in done.stderr and not (renamed / "balance" / "plan.json").exists()
