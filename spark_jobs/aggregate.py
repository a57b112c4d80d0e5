"""The per-bucket aggregation of snapshots, shared by the batch and the streaming job.

Owns: turning pairs of snapshots into deltas and the three bucket tables. The input is a
DataFrame of ``value`` (a snapshot's JSON) and ``prev`` (the JSON of the snapshot taken
just before it from the same broker, or null for the first one); the batch job finds
``prev`` with a window (``lag``), the streaming source hands it over with each snapshot.
From there the code is the same for both, and uses no window function, so that it runs on
a streaming DataFrame:

- ``bucket_rows``: one row per snapshot and subject (a request type, a pool, the
  connections), with counter deltas. Counters are cumulative since the broker started; a
  restart (``uptime_s`` smaller than the previous one, or a ``seq`` that did not grow) or
  a counter that went down means it started again from zero, so the delta is the counter
  itself, over the seconds since the restart.
- ``aggregate``: one ``groupBy`` over (bucket, kind, broker, subject).
- ``split``: the three tables, ``requests``, ``pools`` and ``connections``, each with a
  ``date`` (UTC) to partition by.

Rates are deltas over the seconds they cover (``uptime_s`` differences); the latency
percentiles are the median, over a bucket's snapshots, of the broker's own windowed
percentiles, and ``*_mean_ms`` is exact (cumulative sums and counts).
Must not: read or write files, or know where the snapshots came from.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from .snapshot_schema import SNAPSHOT

KINDS = ("requests", "pools", "connections")
LATENCIES = ("queue", "local", "total")

REQUEST_COLUMNS = (
    "broker_id",
    "time",
    "bucket_s",
    "request",
    "snapshots",
    "seconds",
    "requests",
    "errors",
    "request_rate",
    "error_rate",
    "error_ratio",
    *(f"{t}_{stat}_ms" for t in LATENCIES for stat in ("p50", "p99", "mean")),
    "date",
)
POOL_COLUMNS = (
    "broker_id",
    "time",
    "bucket_s",
    "pool",
    "kind",
    "listener",
    "snapshots",
    "size",
    "size_min",
    "size_max",
    "busy_avg",
    "idle_ratio",
    "idle_ratio_min",
    "queue_size_avg",
    "queue_size_max",
    "date",
)
CONNECTION_COLUMNS = (
    "broker_id",
    "time",
    "bucket_s",
    "snapshots",
    "seconds",
    "restarts",
    "connections_avg",
    "connections_max",
    "muted_avg",
    "muted_max",
    "throttled_avg",
    "throttled_max",
    "created",
    "closed",
    "rejected",
    "response_queue_avg",
    "date",
)


_ROW_FIELDS: tuple[tuple[str, DataType], ...] = (
    ("kind", StringType()),
    ("key", StringType()),
    ("d_seconds", DoubleType()),
    ("d_requests", LongType()),
    ("d_errors", LongType()),
    *((f"d_{t}_n", LongType()) for t in LATENCIES),
    *((f"d_{t}_sum", DoubleType()) for t in LATENCIES),
    *((f"{t}_{stat}", DoubleType()) for t in LATENCIES for stat in ("p50", "p99")),
    ("size", IntegerType()),
    ("busy", IntegerType()),
    ("idle_ratio", DoubleType()),
    ("queue_size", IntegerType()),
    ("restarted", IntegerType()),
    ("connections", LongType()),
    ("muted", LongType()),
    ("throttled", LongType()),
    ("response_queue", LongType()),
    ("d_created", LongType()),
    ("d_closed", LongType()),
    ("d_rejected", LongType()),
)
ROW = StructType([StructField(name, t, True) for name, t in _ROW_FIELDS])
"""One subject of one snapshot: every kind's fields, null where they do not apply."""


def _row(**values: Column) -> Column:
    unknown = set(values) - {name for name, _ in _ROW_FIELDS}
    assert not unknown, unknown
    return F.struct(
        *(
            (values[name] if name in values else F.lit(None)).cast(t).alias(name)
            for name, t in _ROW_FIELDS
        )
    )


def bucket_rows(pairs: DataFrame) -> DataFrame:
    """Per snapshot and subject: ``broker_id``, ``ts``, and the fields of ``ROW``.

    One linear plan (an array of subjects per snapshot, exploded), never a union of
    branches: on a stream, each branch of a union would be a source of its own.
    """
    parsed = pairs.select(
        F.from_json("value", SNAPSHOT).alias("s"), F.from_json("prev", SNAPSHOT).alias("p")
    )
    # As spark_jobs.fetch.is_restart: a smaller uptime, or a seq that did not grow.
    restarted = F.col("p.uptime_s").isNotNull() & (
        (F.col("s.uptime_s") < F.col("p.uptime_s")) | (F.col("s.seq") <= F.col("p.seq"))
    )
    base = parsed.select(
        "s",
        "p",
        restarted.alias("restarted"),
        F.when(F.col("p").isNull(), F.lit(None))
        .when(restarted, F.col("s.uptime_s"))
        .otherwise(F.col("s.uptime_s") - F.col("p.uptime_s"))
        .alias("d_seconds"),
    )
    d_seconds = F.col("d_seconds")

    def request(e: Column) -> Column:
        return _row(kind=F.lit("requests"), key=e["key"], d_seconds=d_seconds, **_request_fields(e))

    def pool(name: str, plane: str) -> Column:
        p = F.col(f"s.pools.{name}")
        return _row(
            kind=F.lit("pools"),
            key=F.lit(name),
            size=p["size"],
            busy=p["busy"],
            idle_ratio=p["idle_ratio"],
            queue_size=F.try_element_at(F.col("s.request_queue"), F.lit(plane))["size"],
        )

    def network(e: Column) -> Column:
        return _row(
            kind=F.lit("pools"),
            key=F.concat(F.lit("network:"), e["key"]),
            size=e["value"]["size"],
            idle_ratio=e["value"]["idle_ratio"],
        )

    c, pc = F.col("s.connections"), F.col("p.connections")
    connections = _row(
        kind=F.lit("connections"),
        key=F.lit(""),
        d_seconds=d_seconds,
        restarted=F.col("restarted").cast("int"),
        connections=c["count"],
        muted=c["muted"],
        throttled=c["throttled"],
        response_queue=F.col("s.response_queue.size"),
        **{f"d_{n}": _delta(c[n], pc[n]) for n in ("created", "closed", "rejected")},
    )
    empty = F.array().cast(ArrayType(ROW))

    def entries(m: str, fn: Callable[[Column], Column]) -> Column:
        return F.coalesce(F.transform(F.map_entries(F.col(m)), fn), empty)

    # The event loop as a pool of one: its idle ratio is 1 - busy ratio (the CPU signal).
    loop = _row(
        kind=F.lit("pools"),
        key=F.lit("loop"),
        size=F.when(F.col("s.event_loop.busy_ratio").isNotNull(), F.lit(1)),
        idle_ratio=F.lit(1.0) - F.col("s.event_loop.busy_ratio"),
    )
    present_pools = F.filter(
        F.array(pool("io", "data"), pool("control", "control"), loop),
        lambda r: r["size"].isNotNull() | r["idle_ratio"].isNotNull(),
    )
    subjects = F.concat(
        entries("s.requests", request),
        present_pools,
        entries("s.pools.network", network),
        F.array(connections),
    )
    return (
        base.select(
            F.col("s.broker_id").alias("broker_id"),
            F.col("s.ts").try_cast("timestamp").alias("ts"),
            F.explode(subjects).alias("r"),
        )
        .filter(F.col("ts").isNotNull() & F.col("broker_id").isNotNull())
        .select("broker_id", "ts", "r.*")
    )


def _delta(cur: Column, prev: Column) -> Column:
    """The increase of a cumulative counter since the previous snapshot (``p``): after a
    restart, or when it went down, the counter started again from zero."""
    fresh = F.col("restarted") | prev.isNull() | (cur < prev)
    return (
        F.when(F.col("p").isNull() | cur.isNull(), F.lit(None))
        .when(fresh, cur)
        .otherwise(cur - prev)
    )


def _request_fields(e: Column) -> dict[str, Column]:
    """For one entry (``key``, ``value``) of the ``requests`` map: deltas, percentiles."""
    before = F.try_element_at(F.col("p.requests"), e["key"])
    value = e["value"]
    out = {
        "d_requests": _delta(value["count"], before["count"]),
        "d_errors": _delta(value["errors"], before["errors"]),
    }
    for t in LATENCIES:
        dist, prev = value[f"{t}_time_ms"], before[f"{t}_time_ms"]
        out[f"d_{t}_n"] = _delta(dist["count"], prev["count"])
        out[f"d_{t}_sum"] = _delta(dist["sum"], prev["sum"])
        in_window = F.coalesce(dist["window_count"], F.lit(1)) > 0
        for stat in ("p50", "p99"):
            out[f"{t}_{stat}"] = F.when(in_window, dist[stat])
    return out


def aggregate(rows: DataFrame, bucket_s: int) -> DataFrame:
    """One row per (bucket, kind, broker_id, key); every kind's figures in one groupBy."""
    figures = [
        F.count(F.lit(1)).alias("snapshots"),
        F.sum("d_seconds").alias("seconds"),
        F.sum("d_requests").alias("requests"),
        F.sum("d_errors").alias("errors"),
        *(F.sum(f"d_{t}_n").alias(f"{t}_n") for t in LATENCIES),
        *(F.sum(f"d_{t}_sum").alias(f"{t}_sum") for t in LATENCIES),
        *(
            F.percentile_approx(f"{t}_{stat}", 0.5).alias(f"{t}_{stat}")
            for t in LATENCIES
            for stat in ("p50", "p99")
        ),
        F.max_by("size", "ts").alias("size"),
        F.min("size").alias("size_min"),
        F.max("size").alias("size_max"),
        F.avg("busy").alias("busy_avg"),
        F.avg("idle_ratio").alias("idle_ratio"),
        F.min("idle_ratio").alias("idle_ratio_min"),
        F.avg("queue_size").alias("queue_size_avg"),
        F.max("queue_size").alias("queue_size_max"),
        F.sum("restarted").alias("restarts"),
        F.avg("connections").alias("connections_avg"),
        F.max("connections").alias("connections_max"),
        F.avg("muted").alias("muted_avg"),
        F.max("muted").alias("muted_max"),
        F.avg("throttled").alias("throttled_avg"),
        F.max("throttled").alias("throttled_max"),
        F.sum("d_created").alias("created"),
        F.sum("d_closed").alias("closed"),
        F.sum("d_rejected").alias("rejected"),
        F.avg("response_queue").alias("response_queue_avg"),
    ]
    bucket = F.window("ts", f"{bucket_s} seconds").alias("bucket")
    return rows.groupBy(bucket, "kind", "broker_id", "key").agg(*figures)


def split(agg: DataFrame, bucket_s: int) -> dict[str, DataFrame]:
    """The aggregate as the three tables (columns: ``*_COLUMNS``)."""
    timed = agg.select(
        "*",
        F.col("bucket.start").alias("time"),
        F.lit(bucket_s).alias("bucket_s"),
        F.to_date(F.col("bucket.start")).alias("date"),
    )
    requests = timed.filter(F.col("kind") == "requests").select(
        "*",
        F.col("key").alias("request"),
        F.try_divide("requests", "seconds").alias("request_rate"),
        F.try_divide("errors", "seconds").alias("error_rate"),
        F.try_divide("errors", "requests").alias("error_ratio"),
        *(F.col(f"{t}_{s}").alias(f"{t}_{s}_ms") for t in LATENCIES for s in ("p50", "p99")),
        *(F.try_divide(f"{t}_sum", f"{t}_n").alias(f"{t}_mean_ms") for t in LATENCIES),
    )
    pools = timed.filter(F.col("kind") == "pools").select(
        "*",
        F.col("key").alias("pool"),
        F.when(F.col("key").startswith("network:"), "network")
        .when(F.col("key") == "loop", "loop")
        .otherwise("handler")
        .alias("k"),
        F.when(F.col("key").startswith("network:"), F.substring_index(F.col("key"), ":", -1)).alias(
            "listener"
        ),
    )
    pools = pools.drop("kind").withColumnRenamed("k", "kind")
    connections = timed.filter(F.col("kind") == "connections")
    return {
        "requests": requests.select(*REQUEST_COLUMNS),
        "pools": pools.select(*POOL_COLUMNS),
        "connections": connections.select(*CONNECTION_COLUMNS),
    }
