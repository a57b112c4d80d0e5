"""The trends job's per-broker and per-partition tables (issue 32): ``brokers`` and ``partitions``.

Owns: turning pairs of snapshots (``value``, and ``prev``, the one before it from the same
broker, as ``trends.snapshot_pairs`` finds it) into the two tables the balance job reads,
per bucket (``window`` over the later snapshot's ``ts``), each with ``bucket`` (its start),
``bucket_s`` and ``date`` (UTC, to partition by):

- ``partitions`` (``PARTITION_COLUMNS``): per bucket, broker and partition replica: its
  role, leader and replicas, the rates of its counters (``*_per_s``), and its log size,
  log end offset and lag at the bucket's last snapshot;
- ``brokers`` (``BROKER_COLUMNS``): per bucket and broker: its rack, the means over the
  bucket's snapshots of the event loop's busy ratio, the io threads' idle ratio and the
  data-plane listeners' network idle ratio (their mean), the median of the snapshots'
  ``all_requests`` queue time p99, the rates of its partitions' counters summed, and at
  the bucket's last snapshot its leader and replica counts and its log dirs' bytes.

A rate is the increase of a cumulative counter between a broker's consecutive snapshots
over the increase of its ``uptime_s``, summed over the bucket's pairs (``seconds`` says how
many seconds it covers): a pair across a restart (``uptime_s`` smaller, or ``seq`` not
grown) gives no rate, nor does a replica absent from the earlier snapshot or a counter
that went down (its topic deleted and made again), so a rate never counts what happened
before the pair. A broker's rates are the sums of its replicas' increases over the pairs'
seconds. Disk totals add up the log dirs (two dirs on one volume count it twice).
Must not: read or write files, or run Python on executors (no UDFs).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType

from .snapshot_schema import CLUSTER_SNAPSHOT, LOG_DIR, PARTITION

COUNTERS = (
    "messages_in",
    "bytes_in",
    "bytes_out",
    "produce_requests",
    "fetch_requests",
    "replication_bytes_in",
    "replication_bytes_out",
)
BROKER_RATES = (
    "bytes_in",
    "bytes_out",
    "messages_in",
    "replication_bytes_in",
    "replication_bytes_out",
)
PARTITION_COLUMNS = (
    "bucket",
    "date",
    "broker_id",
    "topic",
    "partition",
    "role",
    "leader",
    "replicas",
    *(f"{c}_per_s" for c in COUNTERS),
    "log_size_bytes",
    "log_end_offset",
    "lag_messages",
    "bucket_s",
    "snapshots",
    "seconds",
)
BROKER_COLUMNS = (
    "bucket",
    "date",
    "broker_id",
    "rack",
    "loop_busy_ratio",
    "io_idle_ratio",
    "network_idle_ratio",
    "request_queue_p99_ms",
    *(f"{c}_per_s" for c in BROKER_RATES),
    "leaders",
    "replicas",
    "disk_used_bytes",
    "disk_total_bytes",
    "disk_free_bytes",
    "bucket_s",
    "snapshots",
    "seconds",
)


def _key(e: Column) -> Column:
    return F.concat(e["topic"], F.lit("/"), e["partition"].cast("string"))


def _sum(items: Column, field: str) -> Column:
    return F.aggregate(
        items, F.lit(0).cast("long"), lambda acc, e: acc + F.coalesce(e[field], F.lit(0))
    )


def with_deltas(pairs: DataFrame) -> DataFrame:
    """Per snapshot: ``broker_id``, ``ts``, ``s`` (the snapshot), ``d_seconds`` (null: no
    rate for this pair) and ``parts``: each replica (``x``) with its counters' increases
    since the previous snapshot (``d_<counter>``, null where there is no rate)."""
    parsed = pairs.select(
        F.from_json("value", CLUSTER_SNAPSHOT).alias("s"),
        F.from_json("prev", CLUSTER_SNAPSHOT).alias("p"),
    )
    restarted = (F.col("s.uptime_s") < F.col("p.uptime_s")) | (F.col("s.seq") <= F.col("p.seq"))
    d_seconds = F.when(
        F.col("p").isNotNull() & ~restarted, F.col("s.uptime_s") - F.col("p.uptime_s")
    )
    empty = F.array().cast(ArrayType(PARTITION))
    before = F.map_from_entries(
        F.transform(F.coalesce(F.col("p.partitions"), empty), lambda e: F.struct(_key(e), e))
    )

    def deltas(x: Column) -> Column:
        pe = F.try_element_at(before, _key(x))
        valid = F.col("d_seconds").isNotNull() & pe.isNotNull()
        for c in COUNTERS:
            valid = valid & (x[c] >= pe[c])
        return F.struct(
            x.alias("x"), *(F.when(valid, x[c] - pe[c]).alias(f"d_{c}") for c in COUNTERS)
        )

    return (
        parsed.select("s", "p", d_seconds.alias("d_seconds"))
        .select(
            F.col("s.broker_id").alias("broker_id"),
            F.col("s.ts").try_cast("timestamp").alias("ts"),
            "s",
            "d_seconds",
            F.transform(F.coalesce(F.col("s.partitions"), empty), deltas).alias("parts"),
        )
        .filter(F.col("ts").isNotNull() & F.col("broker_id").isNotNull())
    )


def _timed(agg: DataFrame, bucket_s: int) -> DataFrame:
    return agg.select(
        "*",
        F.col("window.start").alias("bucket"),
        F.lit(bucket_s).alias("bucket_s"),
        F.to_date(F.col("window.start")).alias("date"),
    )


def partitions_table(snaps: DataFrame, bucket_s: int) -> DataFrame:
    """The ``partitions`` table from ``with_deltas``' rows."""
    rows = snaps.select("broker_id", "ts", "d_seconds", F.explode("parts").alias("r"))
    x = F.col("r.x")
    valid_seconds = F.when(F.col(f"r.d_{COUNTERS[0]}").isNotNull(), F.col("d_seconds"))
    last = {k: F.max_by(x[k], "ts").alias(k) for k in ("role", "leader", "replicas")}
    for k in ("log_size_bytes", "log_end_offset", "lag_messages"):
        last[k] = F.max_by(x[k], "ts").alias(k)
    agg = rows.groupBy(
        F.window("ts", f"{bucket_s} seconds").alias("window"),
        "broker_id",
        x["topic"].alias("topic"),
        x["partition"].alias("partition"),
    ).agg(
        F.count(F.lit(1)).alias("snapshots"),
        F.sum(valid_seconds).alias("seconds"),
        *(F.sum(f"r.d_{c}").alias(f"d_{c}") for c in COUNTERS),
        *last.values(),
    )
    rates = [F.try_divide(f"d_{c}", "seconds").alias(f"{c}_per_s") for c in COUNTERS]
    return _timed(agg, bucket_s).select("*", *rates).select(*PARTITION_COLUMNS)


def brokers_table(snaps: DataFrame, bucket_s: int) -> DataFrame:
    """The ``brokers`` table from ``with_deltas``' rows."""
    s = F.col("s")
    data_net = F.transform(
        F.filter(F.map_values(s["pools"]["network"]), lambda v: v["plane"] == "data"),
        lambda v: v["idle_ratio"],
    )
    net_mean = F.try_divide(
        F.aggregate(data_net, F.lit(0.0), lambda acc, v: acc + F.coalesce(v, F.lit(0.0))),
        F.size(data_net),
    )
    queue = s["all_requests"]["queue_time_ms"]
    dirs = F.coalesce(s["log_dirs"], F.array().cast(ArrayType(LOG_DIR)))
    held = F.coalesce(s["partitions"], F.array().cast(ArrayType(PARTITION)))
    has_rate = F.col("d_seconds").isNotNull()
    per_snapshot = snaps.select(
        "broker_id",
        "ts",
        "d_seconds",
        s["cluster"]["rack"].alias("rack"),
        s["event_loop"]["busy_ratio"].alias("loop_busy_ratio"),
        s["pools"]["io"]["idle_ratio"].alias("io_idle_ratio"),
        net_mean.alias("network_idle_ratio"),
        F.when(F.coalesce(queue["window_count"], F.lit(1)) > 0, queue["p99"]).alias("queue_p99"),
        *(F.when(has_rate, _sum(F.col("parts"), f"d_{c}")).alias(f"d_{c}") for c in BROKER_RATES),
        F.size(F.filter(held, lambda e: e["role"] == "leader")).alias("leaders"),
        F.size(held).alias("replicas"),
        *(_sum(dirs, k).alias(f"disk_{k}") for k in ("size_bytes", "total_bytes", "free_bytes")),
    )
    agg = per_snapshot.groupBy(
        F.window("ts", f"{bucket_s} seconds").alias("window"), "broker_id"
    ).agg(
        F.count(F.lit(1)).alias("snapshots"),
        F.sum("d_seconds").alias("seconds"),
        F.max_by("rack", "ts").alias("rack"),
        F.avg("loop_busy_ratio").alias("loop_busy_ratio"),
        F.avg("io_idle_ratio").alias("io_idle_ratio"),
        F.avg("network_idle_ratio").alias("network_idle_ratio"),
        F.percentile_approx("queue_p99", 0.5).alias("request_queue_p99_ms"),
        *(F.sum(f"d_{c}").alias(f"d_{c}") for c in BROKER_RATES),
        F.max_by("leaders", "ts").alias("leaders"),
        F.max_by("replicas", "ts").alias("replicas"),
        F.max_by("disk_size_bytes", "ts").alias("disk_used_bytes"),
        F.max_by("disk_total_bytes", "ts").alias("disk_total_bytes"),
        F.max_by("disk_free_bytes", "ts").alias("disk_free_bytes"),
    )
    rates = [F.try_divide(f"d_{c}", "seconds").alias(f"{c}_per_s") for c in BROKER_RATES]
    return _timed(agg, bucket_s).select("*", *rates).select(*BROKER_COLUMNS)


def cluster_tables(pairs: DataFrame, bucket_s: int) -> dict[str, DataFrame]:
    """Both tables over the same snapshot pairs."""
    snaps = with_deltas(pairs)
    return {
        "brokers": brokers_table(snaps, bucket_s),
        "partitions": partitions_table(snaps, bucket_s),
    }
