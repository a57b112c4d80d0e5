"""Starting the Spark session the jobs share, and the command-line options for it.

Owns: ``spark_session`` (local ``local[*]`` unless a master is given, or set by
``spark-submit``; never a hard-coded cluster), the defaults the jobs want (UTC session time
zone, microsecond Parquet timestamps, dynamic partition overwrite, a few shuffle
partitions, which ``--conf`` or ``spark-submit --conf`` override), and ``add_spark_args``
(``--master``, ``--conf key=value``).
Must not: start anything at import time.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence

from pyspark import SparkConf
from pyspark.sql import SparkSession

DEFAULTS: Mapping[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # The tables are small (one row per minute and subject): a handful of partitions.
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
}


def add_spark_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        help="Spark master URL (default: what spark-submit set, else local[*])",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, as spark-submit --conf takes it (repeatable)",
    )


def parse_confs(confs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--conf {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def spark_session(
    app: str, master: str | None = None, confs: Mapping[str, str] | None = None
) -> SparkSession:
    """The session for a job: ``master`` if given, else the one spark-submit set, else
    ``local[*]``. Settings in ``confs`` win over spark-submit's, which win over
    ``DEFAULTS``."""
    submitted = SparkConf()  # holds what spark-submit passed (spark.master, --conf ...)
    chosen = master or submitted.get("spark.master") or "local[*]"
    if chosen.startswith("local"):
        # A local session must not depend on how this machine's hostname resolves.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers (the streaming data source) run this interpreter, not "python3".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app).master(chosen)
    for key, value in DEFAULTS.items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
    for key, value in (confs or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
