"""The trends job's client tables, from the clients' KIP-714 telemetry the scraper kept.

Owns: reading the scraper's ``*.clients.ndjson`` lines (``trio-broker.client-metrics/1``:
``{"broker_id", "ts", "clients": [...]}`` as ``GET /v1/client-metrics`` gave them,
``read_client_lines``), each client instance's push counted once (a push is
``(client_instance_id, last_push_time)``: the scraper sees the same push again until the
next one), and two tables, by ``date``:

- ``clients``: per bucket and client id: instances, pushes, software, push interval, and
  the mean over its pushes (unweighted: each push's average covers one push interval) of
  produce request latency, record queue time, produce throttle time, batch size,
  in-flight requests, consumer fetch latency and commit latency, with the largest ``.max``
  seen. A push whose ``.avg`` and ``.max`` are both 0 did no such work (librdkafka sends
  zeros for an empty window): it counts as no figure, not as 0 ms. Where the client
  pushes them (Kafka's Java client; librdkafka does not) its own byte counts,
  ``client_outgoing_bytes``/``client_incoming_bytes`` (its ``outgoing.byte.total`` and
  ``incoming.byte.total`` summed over the pushes: deltas, as the broker asks for delta
  temporality) and mean ``..._byte_rate`` (bytes/s), and ``buffer_total_bytes`` (the Java
  producer's ``buffer.total.bytes``: its ``buffer.memory`` setting). And the broker's own
  byte count of the client (``broker_bytes_in``/``_out``: received from it, sent to it),
  from the ``broker_connections`` of each scrape line: per connection, the increase of its
  counters between two samples in a row, in the bucket of the later one (a connection's
  first sample gives none, nor a counter that went down; a pair across a gap in the
  scrape puts the gap's bytes in the bucket where it resumed: ``broker_bytes_span_s``, the
  longest pair, shows it). The bucket of a push is that of its push time; a bucket may
  hold byte counts and no push (``pushes`` 0: pushes rarer than buckets);
- ``produce_path``: per bucket and producing client id, the time of a produce request read
  end to end: ``client_queue_ms`` (record queue time), ``wire_ms`` (the client's request
  latency minus the broker's mean Produce total time, the same bucket, all brokers
  weighted by requests; negative when this client's requests were quicker than the
  brokers' mean: the figure is an estimate, not a per-request measure), then the
  broker's ``broker_queue_ms``, ``broker_local_ms`` and ``broker_rest_ms`` (total minus
  queue and local: remote, throttle and response times, which ``requests`` does not split).

The metric names are KIP-714's (``METRICS``). librdkafka 2.16 pushes no batch size, no
in-flight count and no bytes (the Java client does): those columns are null for its
clients. Its ``record.queue.time`` is its output buffer's latency, from a request built to
its bytes written to the socket (``outbuf_latency`` in its statistics), so it excludes
``linger.ms``; the Java client's covers a record's whole wait in the accumulator, linger
included. No client pushes its configuration: the settings themselves are not here.
Must not: run Python code on executors (no UDFs), or read the broker's snapshots.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
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
# the Java client's own byte counts (producer-metrics and consumer-metrics, no attributes):
# column: metric name after the producer's or the consumer's prefix
CLIENT_BYTES: dict[str, str] = {
    "client_outgoing_bytes": "outgoing.byte.total",
    "client_incoming_bytes": "incoming.byte.total",
}
CLIENT_BYTE_RATES: dict[str, str] = {
    "client_outgoing_byte_rate": "outgoing.byte.rate",
    "client_incoming_byte_rate": "incoming.byte.rate",
}
BUFFER_TOTAL = P + "buffer.total.bytes"  # the Java producer's buffer.memory

CONNECTION = StructType(
    [
        StructField("id", StringType()),
        StructField("bytes_in", LongType()),
        StructField("bytes_out", LongType()),
    ]
)

CLIENT = StructType(
    [
        StructField("client_instance_id", StringType()),
        StructField("client_id", StringType()),
        StructField("client_software_name", StringType()),
        StructField("client_software_version", StringType()),
        StructField("client_source_address", StringType()),
        StructField("push_interval_ms", LongType()),
        StructField("last_push_time", DoubleType()),
        StructField("broker_connections", ArrayType(CONNECTION)),
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


def read_client_lines(spark: SparkSession, in_dir: str) -> DataFrame | None:
    """One row per client entry of each scrape line: ``broker_id``, the line's ``ts``
    (a timestamp) and the entry's fields; None when the input holds no client telemetry."""
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
        F.col("d.broker_id").alias("broker_id"),
        F.col("d.ts").try_cast("timestamp").alias("ts"),
        F.explode("d.clients").alias("c"),
    )
    return clients.select("broker_id", "ts", "c.*").filter(
        F.col("client_id").isNotNull() & F.col("ts").isNotNull()
    )


def pushes_of(lines: DataFrame) -> DataFrame:
    """Each push once (the scraper sees it again until the next)."""
    return lines.filter(F.col("last_push_time").isNotNull()).dropDuplicates(
        ["client_instance_id", "last_push_time"]
    )


def _figure(name: str, stat: str) -> F.Column:
    return F.col("metrics")[f"{name}.{stat}"].try_cast("double")


def _either(name: str) -> Column:
    """A metric the producer and the consumer both push under their own prefix."""
    m = F.col("metrics")
    return F.coalesce(m[P + name], m[C + name]).try_cast("double")


def _bucket(seconds: Column, bucket_s: int) -> Column:
    return F.timestamp_seconds(F.floor(seconds / bucket_s) * bucket_s)


def _push_figures(lines: DataFrame, bucket_s: int) -> DataFrame:
    """Per client id and bucket of the push time: the pushes' figures."""
    cols = []
    for col, name in METRICS.items():
        avg, mx = _figure(name, "avg"), _figure(name, "max")
        empty = (F.coalesce(avg, F.lit(0.0)) == 0) & (F.coalesce(mx, F.lit(0.0)) == 0)
        cols += [F.when(~empty, avg).alias(f"{col}_avg"), F.when(~empty, mx).alias(f"{col}_max")]
    for col, name in GAUGES.items():
        cols.append(F.col("metrics")[name].try_cast("double").alias(col))
    for col, name in {**CLIENT_BYTES, **CLIENT_BYTE_RATES}.items():
        cols.append(_either(name).alias(col))
    cols.append(F.col("metrics")[BUFFER_TOTAL].try_cast("double").alias("buffer_total_bytes"))
    kind = (
        F.when(F.exists(F.map_keys("metrics"), lambda k: k.startswith(P)), "producer")
        .when(F.exists(F.map_keys("metrics"), lambda k: k.startswith(C)), "consumer")
        .otherwise("none")
    )
    rows = pushes_of(lines).select(
        "client_id",
        "client_instance_id",
        "client_software_name",
        "client_software_version",
        "push_interval_ms",
        kind.alias("kind"),
        _bucket(F.col("last_push_time"), bucket_s).alias("time"),
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
    figures += [F.sum(col).alias(col) for col in CLIENT_BYTES]
    figures += [F.avg(col).alias(col) for col in CLIENT_BYTE_RATES]
    figures.append(F.max("buffer_total_bytes").alias("buffer_total_bytes"))
    return rows.groupBy("client_id", "time").agg(
        F.array_join(F.array_sort(F.collect_set("kind")), ",").alias("kind"),
        F.first("client_software_name", ignorenulls=True).alias("software_name"),
        F.first("client_software_version", ignorenulls=True).alias("software_version"),
        F.max("push_interval_ms").alias("push_interval_ms"),
        F.countDistinct("client_instance_id").alias("instances"),
        F.count(F.lit(1)).alias("pushes"),
        *figures,
    )


def _broker_bytes(lines: DataFrame, bucket_s: int) -> DataFrame:
    """Per client id and bucket: the increase of its connections' byte counters between
    two samples in a row (see the module docstring)."""
    conns = lines.select(
        "broker_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "ts",
        F.explode("broker_connections").alias("x"),
    ).select(
        "broker_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "ts",
        F.col("x.id").alias("connection"),
        F.col("x.bytes_in").alias("bytes_in"),
        F.col("x.bytes_out").alias("bytes_out"),
    )
    # instances that share a connection list it each: one sample a connection a line
    conns = conns.dropDuplicates(["broker_id", "connection", "ts"])
    w = Window.partitionBy("broker_id", "connection").orderBy("ts")
    d_in = F.col("bytes_in") - F.lag("bytes_in").over(w)
    d_out = F.col("bytes_out") - F.lag("bytes_out").over(w)
    span = F.unix_seconds("ts") - F.unix_seconds(F.lag("ts").over(w))
    pairs = conns.select(
        "client_id",
        "client_software_name",
        "client_software_version",
        _bucket(F.unix_seconds("ts"), bucket_s).alias("time"),
        d_in.alias("d_in"),
        d_out.alias("d_out"),
        span.alias("span"),
    ).filter((F.col("d_in") >= 0) & (F.col("d_out") >= 0))
    return pairs.groupBy("client_id", "time").agg(
        F.first("client_software_name", ignorenulls=True).alias("bytes_software_name"),
        F.first("client_software_version", ignorenulls=True).alias("bytes_software_version"),
        F.sum("d_in").alias("broker_bytes_in"),
        F.sum("d_out").alias("broker_bytes_out"),
        F.max("span").alias("broker_bytes_span_s"),
    )


def clients_table(lines: DataFrame, bucket_s: int) -> DataFrame:
    """The ``clients`` table (see the module docstring) from ``read_client_lines``."""
    joined = _push_figures(lines, bucket_s).join(
        _broker_bytes(lines, bucket_s), ["client_id", "time"], "full_outer"
    )
    taken = {"client_id", "time", "kind", "software_name", "software_version", "instances"}
    taken |= {"pushes", "bytes_software_name", "bytes_software_version"}
    return joined.select(
        "client_id",
        "time",
        F.lit(bucket_s).alias("bucket_s"),
        "kind",
        F.coalesce("software_name", "bytes_software_name").alias("software_name"),
        F.coalesce("software_version", "bytes_software_version").alias("software_version"),
        F.coalesce("instances", F.lit(0)).alias("instances"),
        F.coalesce("pushes", F.lit(0)).alias("pushes"),
        *[c for c in joined.columns if c not in taken],  # the figures, in their order
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
