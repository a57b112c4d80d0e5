"""The monitor: the ``brokers`` and ``partitions`` tables reduced to one observation per
broker and per partition over a window, with Spark or in plain Python (same rules, same
figures).

Owns: ``Observed`` (what the model is built from) and the two ways to compute it:
``observe_spark`` (DataFrame aggregations only, no Python on executors, so it runs on a
standalone cluster as on ``local[*]``) and ``observe_rows`` (the same over Python rows,
for small clusters without Spark). The window is the last ``window_s`` seconds of buckets,
ending at the newest bucket in the tables:

- a broker: the mean of each ratio and rate over its buckets (nulls ignored), and its
  rack, leaders, replicas and disk figures from its newest bucket;
- a partition: per bucket, the rates of its leader's row (the leader bears produce, fetch
  and replication out) and the mean replication in of its followers' rows; then the mean
  of those over the buckets, its leader and replicas from the newest bucket (the leader's
  row there, else the row of the lowest broker id) and its largest log size there.

Every figure is rounded to 6 decimals, so that both ways give the same plan.
Must not: model, plan or apply anything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tables import BROKERS, PARTITIONS, epoch, read_rows

BROKER_MEANS = (
    "loop_busy_ratio",
    "io_idle_ratio",
    "network_idle_ratio",
    "request_queue_p99_ms",
    "bytes_in_per_s",
    "bytes_out_per_s",
    "messages_in_per_s",
    "replication_bytes_in_per_s",
    "replication_bytes_out_per_s",
)
BROKER_LATEST: tuple[str, ...] = (
    "rack",
    "leaders",
    "replicas",
    "disk_used_bytes",
    "disk_total_bytes",
    "disk_free_bytes",
)
LEADER_RATES = (
    "bytes_in_per_s",
    "bytes_out_per_s",
    "messages_in_per_s",
    "produce_requests_per_s",
    "fetch_requests_per_s",
    "replication_bytes_out_per_s",
)
BUCKET_COLUMNS: tuple[str, ...] = ("bucket", "broker_id", *BROKER_MEANS, "leaders", "replicas")
BUCKET_COLUMNS += ("disk_used_bytes", "disk_total_bytes")
DIGITS = 6


def _r(x: Any) -> Any:
    return round(float(x), DIGITS) if isinstance(x, float) else x


@dataclass(frozen=True)
class BrokerObserved:
    broker_id: int
    buckets: int
    last_bucket: float  # epoch seconds
    figures: Mapping[str, Any]  # BROKER_MEANS (means) and BROKER_LATEST (newest bucket)

    def get(self, name: str) -> Any:
        return self.figures.get(name)


@dataclass(frozen=True)
class PartitionObserved:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    buckets: int
    leader_rates: Mapping[str, float | None]  # LEADER_RATES, means over the buckets
    follower_replication_in_per_s: float | None
    log_size_bytes: int | None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass
class Observed:
    source: str
    window_from: float | None = None
    window_to: float | None = None
    brokers: list[BrokerObserved] = field(default_factory=list)
    partitions: list[PartitionObserved] = field(default_factory=list)
    # The brokers table's rows of the last ``history_s`` (anomaly detection), sorted.
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.partitions

    def summary(self) -> dict[str, Any]:
        from .tables import iso

        return {
            "source": self.source,
            "from": None if self.window_from is None else iso(self.window_from),
            "to": None if self.window_to is None else iso(self.window_to),
            "brokers": len(self.brokers),
            "partitions": len(self.partitions),
            "buckets": max((b.buckets for b in self.brokers), default=0),
        }


# ----------------------------------------------------------------- plain Python


def _mean(values: Iterable[Any]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def observe_rows(
    broker_rows: Iterable[Mapping[str, Any]],
    partition_rows: Iterable[Mapping[str, Any]],
    window_s: float,
    history_s: float = 0.0,
    source: str = "trends tables",
) -> Observed:
    brows = [dict(r, bucket=epoch(r["bucket"])) for r in broker_rows]
    prows = [dict(r, bucket=epoch(r["bucket"])) for r in partition_rows]
    last = max((r["bucket"] for r in (brows or prows)), default=None)
    if last is None:
        return Observed(source)
    since = last - window_s
    out = Observed(source, min(r["bucket"] for r in brows + prows if r["bucket"] > since), last)
    by_broker: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in brows:
        if r["bucket"] > since:
            by_broker[int(r["broker_id"])].append(r)
    for b in sorted(by_broker):
        mine = by_broker[b]
        last_row = max(mine, key=lambda r: r["bucket"])
        figures: dict[str, Any] = {k: _r(_mean(r.get(k) for r in mine)) for k in BROKER_MEANS}
        figures.update({k: _r(last_row.get(k)) for k in BROKER_LATEST})
        out.brokers.append(BrokerObserved(b, len(mine), last_row["bucket"], figures))
    per_bucket: dict[tuple[str, int], dict[float, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in prows:
        if r["bucket"] > since:
            per_bucket[(str(r["topic"]), int(r["partition"]))][r["bucket"]].append(r)
    for key in sorted(per_bucket):
        buckets = per_bucket[key]
        sums: dict[str, list[float | None]] = {k: [] for k in LEADER_RATES}
        follower_in: list[float | None] = []
        for rows in buckets.values():
            leaders = [r for r in rows if r.get("role") == "leader"]
            for k in LEADER_RATES:
                vals = [float(r[k]) for r in leaders if r.get(k) is not None]
                sums[k].append(sum(vals) if vals else None)
            followers = [r for r in rows if r.get("role") != "leader"]
            follower_in.append(_mean(r.get("replication_bytes_in_per_s") for r in followers))
        newest_t = max(buckets)
        newest = buckets[newest_t]
        state = max(newest, key=lambda r: (r.get("role") == "leader", -int(r["broker_id"])))
        sizes = [int(r["log_size_bytes"]) for r in newest if r.get("log_size_bytes") is not None]
        out.partitions.append(
            PartitionObserved(
                topic=key[0],
                partition=key[1],
                leader=-1 if state.get("leader") is None else int(state["leader"]),
                replicas=tuple(int(x) for x in (state.get("replicas") or ())),
                buckets=len(buckets),
                leader_rates={k: _r(_mean(v)) for k, v in sums.items()},
                follower_replication_in_per_s=_r(_mean(follower_in)),
                log_size_bytes=max(sizes) if sizes else None,
            )
        )
    if history_s > 0:
        keep = [r for r in brows if r["bucket"] > last - history_s]
        out.history = [
            {k: _r(r.get(k)) for k in BUCKET_COLUMNS}
            for r in sorted(keep, key=lambda r: (r["bucket"], int(r["broker_id"])))
        ]
    return out


def observe_files(trends: Path, window_s: float, history_s: float = 0.0) -> Observed:
    """``observe_rows`` over the tables under ``trends`` (pyarrow, no Spark)."""
    return observe_rows(
        read_rows(trends, BROKERS), read_rows(trends, PARTITIONS), window_s, history_s
    )


# ------------------------------------------------------------------------ Spark


def _read(spark: Any, trends: str, table: str) -> Any:
    from pyspark.sql.utils import AnalysisException

    try:
        df = spark.read.parquet(f"{trends}/{table}")
    except AnalysisException:
        return None
    from pyspark.sql import functions as F

    from .tables import COLUMNS, check_columns, spark_type

    check_columns(
        f"{trends}/{table}",
        table,
        {f.name: f.dataType for f in df.schema},
        {n: spark_type(k) for n, k in COLUMNS[table]},
    )

    return df.withColumn("t", F.unix_micros(F.col("bucket").cast("timestamp")) / F.lit(1e6))


def observe_spark(spark: Any, trends: str, window_s: float, history_s: float = 0.0) -> Observed:
    from pyspark.sql import functions as F

    brokers = _read(spark, trends, BROKERS)
    partitions = _read(spark, trends, PARTITIONS)
    lasts = [df.agg(F.max("t")).first()[0] for df in (brokers, partitions) if df is not None]
    lasts = [x for x in lasts if x is not None]
    if not lasts:
        return Observed("trends tables")
    last = float(lasts[0])
    since = last - window_s
    firsts = [
        df.filter(F.col("t") > since).agg(F.min("t")).first()[0]
        for df in (brokers, partitions)
        if df is not None
    ]
    out = Observed("trends tables", min(float(x) for x in firsts if x is not None), last)
    if brokers is not None:
        win = brokers.filter(F.col("t") > since)
        agg = win.groupBy("broker_id").agg(
            F.count(F.lit(1)).alias("buckets"),
            F.max("t").alias("last"),
            *(F.avg(F.col(k).cast("double")).alias(k) for k in BROKER_MEANS),
            *(F.max_by(k, "t").alias(k) for k in BROKER_LATEST),
        )
        for r in agg.orderBy("broker_id").collect():
            figures = {k: _r(r[k]) for k in (*BROKER_MEANS, *BROKER_LATEST)}
            out.brokers.append(
                BrokerObserved(int(r["broker_id"]), int(r["buckets"]), float(r["last"]), figures)
            )
        if history_s > 0:
            rows = (
                brokers.filter(F.col("t") > last - history_s)
                .select(F.col("t").alias("bucket"), *(c for c in BUCKET_COLUMNS if c != "bucket"))
                .orderBy("bucket", "broker_id")
                .collect()
            )
            out.history = [{k: _r(r[k]) for k in BUCKET_COLUMNS} for r in rows]
    if partitions is not None:
        out.partitions = _partitions_spark(partitions.filter(F.col("t") > since))
    return out


def _partitions_spark(win: Any) -> list[PartitionObserved]:
    from pyspark.sql import functions as F

    is_leader = F.col("role") == "leader"
    rank = is_leader.cast("long") * F.lit(1 << 40) - F.col("broker_id").cast("long")
    per_bucket = win.groupBy("topic", "partition", "t").agg(
        *(F.sum(F.when(is_leader, F.col(k).cast("double"))).alias(k) for k in LEADER_RATES),
        F.avg(F.when(~is_leader, F.col("replication_bytes_in_per_s").cast("double"))).alias(
            "follower_in"
        ),
        F.max_by(F.struct("leader", "replicas"), rank).alias("state"),
        F.max(F.col("log_size_bytes").cast("long")).alias("size"),
    )
    agg = per_bucket.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("buckets"),
        *(F.avg(k).alias(k) for k in LEADER_RATES),
        F.avg("follower_in").alias("follower_in"),
        F.max_by("state", "t").alias("state"),
        F.max_by("size", "t").alias("size"),
    )
    out = []
    for r in agg.orderBy("topic", "partition").collect():
        state = r["state"]
        out.append(
            PartitionObserved(
                topic=str(r["topic"]),
                partition=int(r["partition"]),
                leader=-1 if state["leader"] is None else int(state["leader"]),
                replicas=tuple(int(x) for x in (state["replicas"] or ())),
                buckets=int(r["buckets"]),
                leader_rates={k: _r(r[k]) for k in LEADER_RATES},
                follower_replication_in_per_s=_r(r["follower_in"]),
                log_size_bytes=None if r["size"] is None else int(r["size"]),
            )
        )
    return out
