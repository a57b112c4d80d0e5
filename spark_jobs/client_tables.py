"""The trends job's client tables, from the clients' KIP-714 telemetry the scraper kept.

Owns: reading the scraper's ``*.clients.ndjson`` lines (``trio-broker.client-metrics/1``:
``{"broker_id", "ts", "clients": [...]}`` as ``GET /v1/client-metrics`` gave them), each
client instance's push counted once (a push is ``(client_instance_id, last_push_time)``:
the scraper sees the same push again until the next one), and two tables, by ``date``:

- ``clients``: per bucket (of the push time) and client id: instances, pushes, software,
  and the mean over its pushes (unweighted: each push's average covers one push interval)
  of produce request latency, record queue time, produce throttle time, batch size,
  in-flight requests, consumer fetch latency and commit latency, with the largest ``.max``
  seen. A push whose ``.avg`` and ``.max`` are both 0 did no such work (librdkafka sends
  zeros for an empty window): it counts as no figure, not as 0 ms;
- ``produce_path``: per bucket and producing client id, the time of a produce request read
  end to end: ``client_queue_ms`` (record queue time), ``wire_ms`` (the client's request
  latency minus the broker's mean Produce total time, the same bucket, all brokers
  weighted by requests; negative when this client's requests were quicker than the
  brokers' mean: the figure is an estimate, not a per-request measure), then the
  broker's ``broker_queue_ms``, ``broker_local_ms`` and ``broker_rest_ms`` (total minus
  queue and local: remote, throttle and response times, which ``requests`` does not split).

The metric names are KIP-714's (``METRICS``). librdkafka 2.16 pushes no batch size and no
in-flight count (the Java client does): those columns are null for its clients. Its
``record.queue.time`` is its output buffer's latency, from a request built to its bytes
written to the socket (``outbuf_latency`` in its statistics), so it excludes ``linger.ms``;
the Java client's covers a record's whole wait in the accumulator, linger included.
Must not: run Python code on executors (no UDFs), or read the broker's snapshots.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

CLIENTS_SCHEMA_ID = "trio-broker.client-metrics/1"
CLIENTS_GLOB = "*.clients.ndjson"
P, C = "org.apache.kafka.producer.", "org.apache.kafka.consumer."
METRICS: dict[str, str] = {
    # column: KIP-714 metric name (without attributes)
    "produce_latency": P + "request.latency",
    "record_queue_time": P + "record.queue.time",
    "produce_throttle": P + "produce.throttle.time",
    "batch_size": P + "batch.size",
    "fetch_latency": C + "fetch.manager.fetch.latency",
    "commit_latency": C + "coordinator.commit.latency",
}
GAUGES: dict[str, str] = {"in_flight": P + "requests.in.flight"}

CLIENT = StructType(
    [
        StructField("client_instance_id", StringType()),
        StructField("client_id", StringType()),
        StructField("client_software_name", StringType()),
        StructField("client_software_version", StringType()),
        StructField("client_source_address", StringType()),
        StructField("last_push_time", DoubleType()),
        StructField("metrics", MapType(StringType(), StringType())),
    ]
)
LINE = StructType(
    [
        StructField("schema", StringType()),
        StructField("broker_id", LongType()),
        StructField("ts", StringType()),
        StructField("clients", ArrayType(CLIENT)),
    ]
)


def read_pushes(spark: SparkSession, in_dir: str) -> DataFrame | None:
    """One row per push seen: the client, the push time and its metrics; None when the
    input holds no client telemetry."""
    from pyspark.sql.utils import AnalysisException

    try:
        text = (
            spark.read.option("recursiveFileLookup", "true")
            .option("pathGlobFilter", CLIENTS_GLOB)
            .text(in_dir)
        )
    except AnalysisException:
        return None
    line = F.from_json("value", LINE)
    docs = text.select(line.alias("d")).filter(F.col("d.schema") == CLIENTS_SCHEMA_ID)
    clients = docs.select(
        F.col("d.broker_id").alias("broker_id"), F.explode("d.clients").alias("c")
    )
    return (
        clients.select("broker_id", "c.*")
        .filter(F.col("last_push_time").isNotNull() & F.col("client_id").isNotNull())
        .dropDuplicates(["client_instance_id", "last_push_time"])
    )


def _figure(name: str, stat: str) -> F.Column:
    return F.col("metrics")[f"{name}.{stat}"].try_cast("double")


def clients_table(pushes: DataFrame, bucket_s: int) -> DataFrame:
    """The ``clients`` table (see the module docstring)."""
    cols = []
    for col, name in METRICS.items():
        avg, mx = _figure(name, "avg"), _figure(name, "max")
        empty = (F.coalesce(avg, F.lit(0.0)) == 0) & (F.coalesce(mx, F.lit(0.0)) == 0)
        cols += [F.when(~empty, avg).alias(f"{col}_avg"), F.when(~empty, mx).alias(f"{col}_max")]
    for col, name in GAUGES.items():
        cols.append(F.col("metrics")[name].try_cast("double").alias(col))
    kind = (
        F.when(F.exists(F.map_keys("metrics"), lambda k: k.startswith(P)), "producer")
        .when(F.exists(F.map_keys("metrics"), lambda k: k.startswith(C)), "consumer")
        .otherwise("none")
    )
    start = F.floor(F.col("last_push_time") / bucket_s) * bucket_s
    rows = pushes.select(
        "client_id",
        "client_instance_id",
        "client_software_name",
        "client_software_version",
        kind.alias("kind"),
        F.timestamp_seconds(start).alias("time"),
        *cols,
    )
    figures = []
    for col in METRICS:
        unit = "" if col == "batch_size" else "_ms"
        figures += [
            F.avg(f"{col}_avg").alias(f"{col}_avg{unit}"),
            F.max(f"{col}_max").alias(f"{col}_max{unit}"),
        ]
    figures += [F.avg(col).alias(f"{col}_avg") for col in GAUGES]
    return rows.groupBy("client_id", "time").agg(
        F.lit(bucket_s).alias("bucket_s"),
        F.array_join(F.array_sort(F.collect_set("kind")), ",").alias("kind"),
        F.first("client_software_name", ignorenulls=True).alias("software_name"),
        F.first("client_software_version", ignorenulls=True).alias("software_version"),
        F.countDistinct("client_instance_id").alias("instances"),
        F.count(F.lit(1)).alias("pushes"),
        *figures,
        F.to_date("time").alias("date"),
    )


def produce_path(clients: DataFrame, requests: DataFrame) -> DataFrame:
    """The ``produce_path`` table: the producing clients' rows of ``clients`` joined with
    the broker's Produce rows of ``requests`` in the same bucket."""
    n = F.col("requests")
    broker = (
        requests.filter((F.col("request") == "Produce") & (n > 0))
        .groupBy("time", "bucket_s")
        .agg(
            F.sum("requests").alias("broker_requests"),
            *(
                F.try_divide(F.sum(F.col(f"{t}_mean_ms") * n), F.sum(n)).alias(f"broker_{t}_ms")
                for t in ("queue", "local", "total")
            ),
        )
    )
    producers = clients.filter(F.col("produce_latency_avg_ms").isNotNull())
    joined = producers.join(broker, ["time", "bucket_s"], "left")
    wire = F.col("produce_latency_avg_ms") - F.col("broker_total_ms")
    rest = F.col("broker_total_ms") - F.col("broker_queue_ms") - F.col("broker_local_ms")
    return joined.select(
        "client_id",
        "time",
        "bucket_s",
        "pushes",
        F.col("record_queue_time_avg_ms").alias("client_queue_ms"),
        F.col("produce_latency_avg_ms").alias("client_request_ms"),
        wire.alias("wire_ms"),
        "broker_queue_ms",
        "broker_local_ms",
        rest.alias("broker_rest_ms"),
        "broker_total_ms",
        "broker_requests",
        "date",
    )
