"""Starting the Spark session the jobs share, and the command-line options for it.

Owns: ``spark_session`` (local ``local[*]`` unless a master is given, or set by
``spark-submit``; never a hard-coded cluster), the defaults the jobs want (UTC session time
zone, microsecond Parquet timestamps, dynamic partition overwrite, a few shuffle
partitions, which ``--conf`` or ``spark-submit --conf`` override), and ``add_spark_args``
(``--master``, ``--conf key=value``); ``require_java``: a job on a machine without Java
stops with one line saying what to install (exit 2), not a Py4J traceback.
Must not: start anything at import time.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def require_java() -> None:
    """Exit 2 with one line if there is no ``java`` (``$JAVA_HOME/bin`` or the PATH)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java"):
        return
    where = f"JAVA_HOME={home} has no bin/java" if home else "no java on the PATH"
    print(
        f"spark_jobs: Spark needs a Java 17 runtime and found none ({where}): install one "
        "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME",
        file=sys.stderr,
    )
    raise SystemExit(2)


def spark_session(
    app: str, master: str | None = None, confs: Mapping[str, str] | None = None
) -> SparkSession:
    """The session for a job: ``master`` if given, else the one spark-submit set, else
    ``local[*]``. Settings in ``confs`` win over spark-submit's, which win over
    ``DEFAULTS``."""
    require_java()
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
