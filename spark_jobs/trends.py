"""The batch trends job: scraped snapshots in, Parquet trend tables and ``dashboard.json`` out.

    spark-submit [--master URL] spark_jobs/trends.py --in SCRAPED --out TRENDS
    python -m spark_jobs.trends --in SCRAPED --out TRENDS [--master local[2]]

Owns: reading the scraper's JSON Lines (any layout under ``--in``: every ``*.jsonl``) with
an explicit schema; sorting lines into snapshots, scraper markers and corrupt lines
(counted and reported, never fatal); pairing each snapshot with the one before it from the
same broker; the four tables under ``--out``, each partitioned by ``date`` (UTC):

- ``requests``: per bucket, broker and request type: request and error rates, p50/p99 and
  mean of queue, local and total time;
- ``pools``: per bucket, broker and pool (``io``, ``control``, ``network:<listener>``):
  size, idle ratio, busy handlers, request queue depth;
- ``connections``: per bucket and broker: open, muted and throttled connections,
  connections created/closed/rejected, restarts seen;
- ``trends``: per bucket, broker and series (``queue_mean_ms``/``queue_p99_ms`` per
  request type and ``*`` for all, ``idle_ratio`` per pool): the value, and the least
  squares slope per minute over the trailing ``--trend-window`` (null under 3 points);
- ``brokers`` and ``partitions`` (``spark_jobs.cluster_tables``): per bucket and broker,
  its load (event loop, io and network idle, queue time, bytes and messages per second,
  replication, leaders, replicas, disk), and per bucket, broker and partition replica, the
  replica's rates, log and lag: what the balance job reads;
- ``clients`` and ``produce_path`` (``spark_jobs.client_tables``), when the scraper kept
  client telemetry (``*.clients.ndjson``): per bucket and client id, its pushed latencies,
  queue time and sizes, the bytes the broker counted on its connections (and the
  client's own, where it pushes them), and a produce request's time end to end, client
  to broker;

and ``dashboard.json`` (the charts of the last ``--dashboard-hours``, and the cluster view:
the brokers by load and the hottest partitions over the last ``--trend-window-seconds``, from
``spark_jobs.dashboard_cluster``; the clients panel, from ``spark_jobs.dashboard_clients``)
and ``_report.json``
(what was read: lines, snapshots, duplicates, corrupt lines, markers, brokers). A run
recomputes every date it has input for and leaves other dates alone. Buckets are one minute
unless ``--bucket-seconds`` says otherwise (the tests use seconds to see trends quickly).
Must not: run Python code on executors (no UDFs): only the driver needs this package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # spark-submit spark_jobs/trends.py: find the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.utils import AnalysisException

from spark_jobs.aggregate import aggregate, bucket_rows, split
from spark_jobs.client_tables import clients_table, produce_path, pushes_of, read_client_lines
from spark_jobs.cluster_tables import cluster_tables
from spark_jobs.dashboard_clients import build_clients
from spark_jobs.dashboard_cluster import build_cluster
from spark_jobs.dashboard_data import build_dashboard
from spark_jobs.durable import write_json_atomic
from spark_jobs.session import add_spark_args, parse_confs, spark_session
from spark_jobs.snapshot_schema import HEAD, SCHEMA_ID

TABLES = ("requests", "pools", "connections", "trends")
MIN_TREND_POINTS = 3
MAX_MARKERS_REPORTED = 200


def read_lines(spark: SparkSession, in_dir: str) -> DataFrame:
    """Every line of every ``*.jsonl`` under ``in_dir``, classified by ``kind``:
    ``snapshot``, ``marker``, ``unsupported`` (another schema version) or ``corrupt``."""
    lines = (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.jsonl")
        .text(in_dir)
        .filter(F.trim("value") != "")
    )
    h = F.from_json("value", HEAD)
    lines = lines.select("value", h.alias("h"))
    t = F.col("h.ts").try_cast("timestamp")
    valid = (
        (F.col("h.schema") == SCHEMA_ID)
        & F.col("h.broker_id").isNotNull()
        & F.col("h.seq").isNotNull()
        & F.col("h.uptime_s").isNotNull()
        & t.isNotNull()
    )
    kind = (
        F.when(F.col("h.marker").isNotNull(), "marker")
        .when(valid, "snapshot")
        .when(F.col("h.schema").startswith("trio-broker.metrics/"), "unsupported")
        .otherwise("corrupt")
    )
    return lines.select(
        "value",
        kind.alias("kind"),
        F.col("h.broker_id").alias("broker_id"),
        F.col("h.seq").alias("seq"),
        t.alias("t"),
    )


def snapshot_pairs(snapshots: DataFrame) -> DataFrame:
    """``value`` and ``prev``: each snapshot with the one before it from its broker."""
    w = Window.partitionBy("broker_id").orderBy("t", "seq")
    return snapshots.select("value", F.lag("value").over(w).alias("prev"))


def trend_table(
    spark: SparkSession, out: str, bucket_s: int, trend_window_s: int
) -> DataFrame | None:
    """The ``trends`` table over everything written so far in ``requests`` and ``pools``."""
    try:
        req = spark.read.parquet(f"{out}/requests").filter(F.col("bucket_s") == bucket_s)
        pools = spark.read.parquet(f"{out}/pools").filter(F.col("bucket_s") == bucket_s)
    except AnalysisException:
        return None

    def series(df: DataFrame, metric: str, subject: str, value: str) -> DataFrame:
        return df.select(
            "broker_id",
            "time",
            F.lit(metric).alias("metric"),
            F.col(subject).cast("string").alias("subject"),
            F.col(value).cast("double").alias("value"),
        )

    weighted = (
        req.filter(F.col("queue_mean_ms").isNotNull() & (F.col("requests") > 0))
        .groupBy("broker_id", "time")
        .agg(
            F.try_divide(
                F.sum(F.col("queue_mean_ms") * F.col("requests")), F.sum("requests")
            ).alias("v")
        )
        .select("broker_id", "time", F.lit("*").alias("s"), "v")
    )
    parts = [
        series(req, "queue_mean_ms", "request", "queue_mean_ms"),
        series(req, "queue_p99_ms", "request", "queue_p99_ms"),
        series(weighted, "queue_mean_ms", "s", "v"),
        series(pools, "idle_ratio", "pool", "idle_ratio"),
    ]
    all_series = parts[0]
    for p in parts[1:]:
        all_series = all_series.unionByName(p)
    all_series = all_series.filter(F.col("value").isNotNull())
    x = F.unix_seconds("time")
    w = (
        Window.partitionBy("broker_id", "metric", "subject")
        .orderBy(x)
        .rangeBetween(-(trend_window_s - bucket_s), 0)
    )
    points = F.count("value").over(w)
    slope = F.regr_slope("value", x / F.lit(60.0)).over(w)
    return all_series.select(
        "broker_id",
        "time",
        F.lit(bucket_s).alias("bucket_s"),
        "metric",
        "subject",
        "value",
        F.avg("value").over(w).alias("window_mean"),
        F.when(points >= MIN_TREND_POINTS, slope).alias("slope_per_min"),
        points.alias("points"),
        F.lit(trend_window_s).alias("window_s"),
        F.to_date("time").alias("date"),
    )


def _markers(lines: DataFrame) -> list[dict[str, Any]]:
    rows = lines.filter(F.col("kind") == "marker").select("value").limit(MAX_MARKERS_REPORTED)
    out = []
    for r in rows.collect():
        try:
            value = json.loads(r["value"])
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return sorted(out, key=lambda m: str(m.get("to") or m.get("at") or ""))


def run(
    spark: SparkSession,
    in_dir: str,
    out: str,
    *,
    bucket_s: int = 60,
    trend_window_s: int = 600,
    dashboard: Path | None = None,
    dashboard_hours: float = 6.0,
) -> dict[str, Any]:
    """The whole job; returns the report (also written to ``out/_report.json`` when
    ``out`` is a local path)."""
    if bucket_s < 1 or trend_window_s < bucket_s:
        raise ValueError("need 1 <= bucket_s <= trend_window_s")
    lines = read_lines(spark, in_dir).persist()
    counts = {r["kind"]: r["count"] for r in lines.groupBy("kind").count().collect()}
    markers = _markers(lines)
    snapshots = lines.filter(F.col("kind") == "snapshot").dropDuplicates(["broker_id", "seq", "t"])
    snapshots = snapshots.persist()
    iso = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"  # the session time zone is UTC
    brokers = [
        r.asDict()
        for r in snapshots.groupBy("broker_id")
        .agg(
            F.count(F.lit(1)).alias("snapshots"),
            F.date_format(F.min("t"), iso).alias("from"),
            F.date_format(F.max("t"), iso).alias("to"),
        )
        .orderBy("broker_id")
        .collect()
    ]
    distinct = sum(b["snapshots"] for b in brokers)
    report: dict[str, Any] = {
        "input": {
            "path": in_dir,
            "lines": sum(counts.values()),
            "snapshots": distinct,
            "duplicates": counts.get("snapshot", 0) - distinct,
            "corrupt_lines": counts.get("corrupt", 0),
            "unsupported_schema_lines": counts.get("unsupported", 0),
            "markers": {
                kind: sum(1 for m in markers if m.get("marker") == kind)
                for kind in sorted({str(m.get("marker")) for m in markers})
            },
            "restarts": 0,
        },
        "brokers": brokers,
        "gaps": [m for m in markers if m.get("marker") == "gap"],
        "bucket_s": bucket_s,
        "trend_window_s": trend_window_s,
        "tables": {},
    }
    if distinct:
        pairs = snapshot_pairs(snapshots).persist()
        agg = aggregate(bucket_rows(pairs), bucket_s).persist()
        tables = split(agg, bucket_s)
        for name, df in tables.items():
            # One file per date: the tables are small.
            df.repartition("date").write.mode("overwrite").partitionBy("date").parquet(
                f"{out}/{name}"
            )
        report["tables"] = {r["kind"]: r["count"] for r in agg.groupBy("kind").count().collect()}
        restarts = agg.filter(F.col("kind") == "connections").agg(F.sum("restarts")).first()
        report["input"]["restarts"] = int((restarts and restarts[0]) or 0)
        agg.unpersist()
        for name, df in cluster_tables(pairs, bucket_s).items():
            df.repartition("date").write.mode("overwrite").partitionBy("date").parquet(
                f"{out}/{name}"
            )
            try:
                report["tables"][name] = spark.read.parquet(f"{out}/{name}").count()
            except AnalysisException:  # no rows: Spark wrote no file (snapshots without
                report["tables"][name] = 0  # partitions, as from a broker holding none)
        pairs.unpersist()
        trends = trend_table(spark, out, bucket_s, trend_window_s)
        if trends is not None:
            trends.repartition("date").write.mode("overwrite").partitionBy("date").parquet(
                f"{out}/trends"
            )
            report["tables"]["trends"] = spark.read.parquet(f"{out}/trends").count()
    lines.unpersist()
    snapshots.unpersist()
    report["clients"] = _client_tables(spark, in_dir, out, bucket_s)

    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    report["generated_at"] = generated
    local_out = _local_dir(out)
    if dashboard is None and local_out is not None:
        dashboard = local_out / "dashboard.json"
    if dashboard is not None:
        write_json_atomic(
            dashboard,
            _dashboard(spark, out, report, bucket_s, trend_window_s, dashboard_hours, generated),
            compact=True,
        )
    if local_out is not None:
        write_json_atomic(local_out / "_report.json", report)
    return report


def _client_tables(spark: SparkSession, in_dir: str, out: str, bucket_s: int) -> dict[str, Any]:
    """The ``clients`` and ``produce_path`` tables, when the input holds client telemetry."""
    lines = read_client_lines(spark, in_dir)
    if lines is None:
        return {"pushes": 0}
    lines = lines.persist()
    seen = pushes_of(lines).count()
    summary: dict[str, Any] = {"pushes": seen}
    if seen:
        clients = clients_table(lines, bucket_s)
        clients.repartition("date").write.mode("overwrite").partitionBy("date").parquet(
            f"{out}/clients"
        )
        clients = spark.read.parquet(f"{out}/clients").filter(F.col("bucket_s") == bucket_s)
        summary["client_ids"] = sorted(
            r[0] for r in clients.select("client_id").distinct().collect()
        )
        try:
            requests = spark.read.parquet(f"{out}/requests")
        except AnalysisException:
            requests = None
        if requests is not None:
            path = produce_path(clients, requests.filter(F.col("bucket_s") == bucket_s))
            path.repartition("date").write.mode("overwrite").partitionBy("date").parquet(
                f"{out}/produce_path"
            )
    lines.unpersist()
    return summary


def _dashboard(
    spark: SparkSession,
    out: str,
    report: dict[str, Any],
    bucket_s: int,
    trend_window_s: int,
    hours: float,
    generated: str,
) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in TABLES:
        try:
            df = spark.read.parquet(f"{out}/{name}").filter(F.col("bucket_s") == bucket_s)
        except AnalysisException:
            rows[name] = []
            continue
        df = df.withColumn("time", F.unix_seconds("time"))  # epoch seconds, whatever the TZ
        latest = df.agg(F.max("time")).first()
        if latest is None or latest[0] is None:
            rows[name] = []
            continue
        since = int(latest[0] - hours * 3600)
        rows[name] = [r.asDict() for r in df.filter(F.col("time") >= since).collect()]
    recent: dict[str, list[dict[str, Any]]] = {}
    for name in ("brokers", "partitions"):  # the last trend window: the cluster view
        try:
            df = spark.read.parquet(f"{out}/{name}").filter(F.col("bucket_s") == bucket_s)
        except AnalysisException:
            recent[name] = []
            continue
        df = df.withColumn("bucket", F.unix_seconds("bucket"))
        latest = df.agg(F.max("bucket")).first()
        if latest is None or latest[0] is None:
            recent[name] = []
            continue
        since = int(latest[0] - trend_window_s)
        recent[name] = [r.asDict() for r in df.filter(F.col("bucket") > since).collect()]
    doc = build_dashboard(
        requests=rows["requests"],
        pools=rows["pools"],
        connections=rows["connections"],
        trends=rows["trends"],
        bucket_s=bucket_s,
        trend_window_s=trend_window_s,
        generated_at=generated,
        input_report=report["input"],
    )
    doc["cluster"] = build_cluster(recent["brokers"], recent["partitions"], window_s=trend_window_s)
    client_rows: dict[str, list[dict[str, Any]]] = {}
    for name in ("clients", "produce_path"):  # the clients panel: the last trend window
        try:
            df = spark.read.parquet(f"{out}/{name}").filter(F.col("bucket_s") == bucket_s)
            last = df.agg(F.max("time")).first()
            if last is not None and last[0] is not None:
                cut = F.lit(last[0]) - F.expr(f"INTERVAL {trend_window_s} SECONDS")
                df = df.filter(F.col("time") > cut)
            client_rows[name] = [r.asDict() for r in df.collect()]
        except AnalysisException:
            client_rows[name] = []
    doc["clients"] = build_clients(
        client_rows["clients"], client_rows["produce_path"], window_s=trend_window_s
    )
    return doc


def _local_dir(out: str) -> Path | None:
    if out.startswith("file:"):
        return Path(out.removeprefix("file:").removeprefix("//"))
    return None if "://" in out else Path(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="trends", description="Trend tables and dashboard.json from scraped broker metrics."
    )
    p.add_argument("--in", dest="input", required=True, help="the scraper's output directory")
    p.add_argument("--out", required=True, help="directory of the Parquet tables")
    p.add_argument("--bucket-seconds", type=int, default=60, help="bucket length (default 60)")
    p.add_argument(
        "--trend-window-seconds",
        type=int,
        default=600,
        help="the trailing window of the slopes (default 600: 10 minutes)",
    )
    p.add_argument(
        "--dashboard",
        type=Path,
        help="where to write dashboard.json (default OUT/dashboard.json for a local OUT)",
    )
    p.add_argument("--dashboard-hours", type=float, default=6.0, help="hours the charts cover")
    add_spark_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = spark_session("trio-broker-trends", args.master, parse_confs(args.conf))
    try:
        report = run(
            spark,
            args.input,
            args.out,
            bucket_s=args.bucket_seconds,
            trend_window_s=args.trend_window_seconds,
            dashboard=args.dashboard,
            dashboard_hours=args.dashboard_hours,
        )
    except AnalysisException as exc:
        print(f"trends: cannot read {args.input}: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    i = report["input"]
    print(
        f"trends: {i['snapshots']} snapshots from {len(report['brokers'])} broker(s), "
        f"{i['corrupt_lines']} corrupt line(s), {i['duplicates']} duplicate(s), "
        f"{i['markers'].get('gap', 0)} gap(s), {i['restarts']} restart(s); "
        f"tables: {json.dumps(report['tables'], sort_keys=True)} -> {args.out}"
    )
    if i["corrupt_lines"]:
        print(f"trends: warning: skipped {i['corrupt_lines']} corrupt line(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
