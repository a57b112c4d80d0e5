"""Fixtures of the Spark jobs' tests: one local Spark session per module, bounded.

Spark runs on ``local[2]`` with no UI and two shuffle partitions; sessions start in 6-12 s,
so a module that needs one shares it (``spark``, module scope).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
LOCAL_MASTER = "local[2]"


def spark_env() -> dict[str, str]:
    """The environment of a job run as a subprocess (python -m / spark-submit)."""
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONUNBUFFERED": "1",
    }


def spark_cli_args() -> list[str]:
    args = ["--master", LOCAL_MASTER]
    for k, v in SPARK_CONF.items():
        args += ["--conf", f"{k}={v}"]
    return args


def spark_submit() -> str:
    """The spark-submit that comes with the pyspark package of this interpreter."""
    found = Path(sys.executable).parent / "spark-submit"
    if found.exists():
        return str(found)
    which = shutil.which("spark-submit")
    assert which, "spark-submit not found (pip install pyspark)"
    return which


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    from spark_jobs.session import spark_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = spark_session("trio-broker-tests", LOCAL_MASTER, SPARK_CONF)
    yield session
    session.stop()
