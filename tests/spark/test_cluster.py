"""The Spark jobs on a Spark standalone cluster: a master and two workers, each its own
process started from the PySpark install (``spark-class``), on 127.0.0.1 with ports
picked by Spark. The trends job submitted with ``--master spark://...`` writes the same
tables as on ``local[*]``; a scrape with per-partition counters goes through the trends
job and then the balance job on the cluster, and the plan is the one made locally; every
job's tasks ran in the workers' executors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_jobs import trends

from .conftest import ROOT, spark_env
from .test_trends import scenario

START_S = 60


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class Daemon:
    """One ``spark-class`` process, its output in a log file."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        env = {**spark_env(), "SPARK_HOME": str(spark_home())}
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def wait_for(self, pattern: str, count: int = 1) -> list[str]:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            found = re.findall(pattern, self.log.read_text(errors="replace"))
            if len(found) >= count:
                return found
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            time.sleep(0.2)  # polling a log file another process writes: no event to await
        raise AssertionError(f"no {pattern!r} in {self.log} within {START_S} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Path]]]:
    base = tmp_path_factory.mktemp("cluster")
    daemons: list[Daemon] = []
    try:
        master = Daemon(
            base / "master.log",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
        )
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")[0]
        work_dirs = []
        for i in (1, 2):
            work = base / f"worker{i}"
            work.mkdir()
            work_dirs.append(work)
            daemons.append(
                Daemon(
                    base / f"worker{i}.log",
                    "org.apache.spark.deploy.worker.Worker",
                    url,
                    *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
                    *("--cores", "1", "--memory", "1g", "--work-dir", str(work)),
                )
            )
        master.wait_for(r"Registering worker", count=2)
        yield url, work_dirs
    finally:
        for d in reversed(daemons):
            d.stop()


def test_the_trends_job_on_a_standalone_cluster_writes_what_local_writes(
    spark: Any, cluster: tuple[str, list[Path]], tmp_path: Path
) -> None:
    url, work_dirs = cluster
    scraped = tmp_path / "scraped"
    scenario(scraped)
    on_cluster = tmp_path / "cluster"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_jobs.trends",
            *("--in", str(scraped), "--out", str(on_cluster), "--master", url),
            *("--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m"),
            *("--conf", "spark.sql.shuffle.partitions=2"),
        ],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "198 snapshots from 3 broker(s)" in done.stdout

    local = tmp_path / "local"
    trends.run(spark, str(scraped), str(local), bucket_s=60, trend_window_s=600)  # type: ignore[arg-type]
    for name in trends.TABLES:
        key = lambda r: repr(sorted(r.items()))  # noqa: E731
        assert sorted(map(key, pq.read_table(on_cluster / name).to_pylist())) == sorted(
            map(key, pq.read_table(local / name).to_pylist())
        ), name

    # The work ran in the workers' executors, not in the driver.
    finished = [
        p for w in work_dirs for p in w.glob("app-*/*/stderr") if "Finished task" in p.read_text()
    ]
    assert finished, "no executor of the cluster finished a task"


def test_the_trends_and_balance_jobs_on_a_standalone_cluster_plan_what_local_plans(
    cluster: tuple[str, list[Path]], tmp_path: Path
) -> None:
    """A scrape (per-partition counters, broker 0 leading everything) through the trends
    job and then the balance job, both submitted to the cluster: the plan is the one the
    plain-Python engine makes over the same tables, and both jobs' tasks ran in the
    workers' executors."""
    from spark_jobs.balance.report import same_plan

    from . import skewed_scrape
    from .test_balance_spark import balance

    url, work_dirs = cluster
    apps_before = {p for w in work_dirs for p in w.glob("app-*")}
    scraped, out = tmp_path / "scraped", tmp_path / "trends"
    skewed_scrape.write(scraped)
    on_cluster = [
        *("--master", url, "--conf", "spark.ui.enabled=false"),
        *("--conf", "spark.executor.memory=512m", "--conf", "spark.sql.shuffle.partitions=2"),
    ]
    done = subprocess.run(
        [
            *(sys.executable, "-m", "spark_jobs.trends"),
            *("--in", str(scraped), "--out", str(out), *on_cluster),
        ],
        capture_output=True,
        text=True,
        env=spark_env(),
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "39 snapshots from 3 broker(s)" in done.stdout
    planned = balance(out, *on_cluster, timeout=600)
    local = balance(out, "--engine", "python")
    assert planned["moves"] and same_plan(planned, local)
    assert [b["after"]["leaders"] for b in planned["brokers"]] == [2, 2, 2]
    # Both jobs ran their tasks in the workers' executors, not in the driver.
    apps = {p for w in work_dirs for p in w.glob("app-*")} - apps_before
    finished = [
        a for a in apps if any("Finished task" in p.read_text() for p in a.glob("*/stderr"))
    ]
    # (an application has a directory on each worker that ran one of its executors)
    ran = {a.name for a in finished}
    assert len(ran) == 2, f"the trends and balance jobs did not both run tasks there: {ran}"
