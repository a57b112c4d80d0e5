"""The trends job on a Spark standalone cluster: a master and two workers, each its own
process started from the PySpark install (``spark-class``), on 127.0.0.1 with ports
picked by Spark; the job submitted with ``--master spark://...`` writes the same tables
as on ``local[*]``, and its tasks ran in the workers' executors."""

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


def test_the_balance_job_on_a_standalone_cluster_plans_what_local_plans(
    spark: Any, cluster: tuple[str, list[Path]], tmp_path: Path
) -> None:
    from spark_jobs.balance.report import same_plan

    from .test_balance_spark import balance, write_skewed

    url, work_dirs = cluster
    apps_before = {p for w in work_dirs for p in w.glob("app-*")}
    write_skewed(spark, tmp_path)
    on_cluster = balance(
        tmp_path,
        *("--master", url, "--down-after-seconds", "90"),
        *("--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m"),
        *("--conf", "spark.sql.shuffle.partitions=2"),
    )
    local = balance(tmp_path, "--engine", "python", "--down-after-seconds", "90")
    assert on_cluster["moves"] and same_plan(on_cluster, local)
    # The aggregation ran in the workers' executors, not in the driver.
    apps = {p for w in work_dirs for p in w.glob("app-*")} - apps_before
    finished = [p for a in apps for p in a.glob("*/stderr") if "Finished task" in p.read_text()]
    assert finished, "no executor of the cluster finished a task of the balance job"
