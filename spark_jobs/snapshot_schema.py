"""The metrics snapshot as the Spark jobs read it: the one contract with the broker.

Owns: ``SCHEMA_ID`` (``trio-broker.metrics/1``), the explicit Spark schemas of the fields
the jobs use (``SNAPSHOT``, and ``CLUSTER_SNAPSHOT`` for the per-broker and per-partition
tables; every field nullable, unknown fields ignored, as version 1
allows fields to be added), ``HEAD`` (the few fields that identify a line) and the
scraper's marker lines (``MARKER_KEY``). The source of truth is ``docs/metrics.md`` and
``docs/metrics.schema.json``; a test checks that every field named here is in that schema.
Must not: import the broker (``trio_broker``): a snapshot is all the jobs know of it.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

SCHEMA_ID = "trio-broker.metrics/1"
MARKER_KEY = "marker"
"""Lines the scraper writes beside snapshots carry this key (``gap``, ``restart``)."""


def _struct(**fields: object) -> StructType:
    return StructType([StructField(name, t, True) for name, t in fields.items()])  # type: ignore[arg-type]


DISTRIBUTION = _struct(
    p50=DoubleType(),
    p75=DoubleType(),
    p95=DoubleType(),
    p99=DoubleType(),
    p999=DoubleType(),
    max=DoubleType(),
    window_count=LongType(),
    count=LongType(),
    sum=DoubleType(),
)

TIMES = (
    "queue_time_ms",
    "local_time_ms",
    "remote_time_ms",
    "throttle_time_ms",
    "response_queue_time_ms",
    "response_send_time_ms",
    "total_time_ms",
)

REQUEST_TYPE = _struct(
    count=LongType(),
    errors=LongType(),
    closed=LongType(),
    bytes=LongType(),
    handler_time_ms=DoubleType(),
    rate_per_s=DoubleType(),
    **dict.fromkeys(TIMES, DISTRIBUTION),
)

HANDLER_POOL = _struct(
    plane=StringType(), size=IntegerType(), busy=IntegerType(), idle_ratio=DoubleType()
)
NETWORK_POOL = _struct(plane=StringType(), size=IntegerType(), idle_ratio=DoubleType())
QUEUE = _struct(size=IntegerType(), capacity=IntegerType())

SNAPSHOT = _struct(
    schema=StringType(),
    broker_id=IntegerType(),
    seq=LongType(),
    ts=StringType(),
    uptime_s=DoubleType(),
    window_s=DoubleType(),
    metrics_enabled=BooleanType(),
    pools=_struct(
        io=HANDLER_POOL,
        control=HANDLER_POOL,
        network=MapType(StringType(), NETWORK_POOL),
    ),
    event_loop=_struct(busy_ratio=DoubleType()),
    request_queue=MapType(StringType(), QUEUE),
    response_queue=_struct(size=LongType()),
    connections=_struct(
        count=LongType(),
        created=LongType(),
        closed=LongType(),
        rejected=LongType(),
        reaped=LongType(),
        evicted=LongType(),
        muted=LongType(),
        throttled=LongType(),
    ),
    requests=MapType(StringType(), REQUEST_TYPE),
)
"""The snapshot fields the jobs read, typed as ``docs/metrics.schema.json`` types them."""

HEAD = _struct(
    schema=StringType(),
    broker_id=IntegerType(),
    seq=LongType(),
    ts=StringType(),
    uptime_s=DoubleType(),
    marker=StringType(),
)
"""What tells a line apart: a snapshot (``schema``, ``broker_id``, ``seq``, ``ts``,
``uptime_s``), a scraper marker (``marker``), or neither (a corrupt line)."""

PARTITION = _struct(
    topic=StringType(),
    partition=IntegerType(),
    leader=IntegerType(),
    role=StringType(),
    replicas=ArrayType(IntegerType()),
    log_size_bytes=LongType(),
    log_end_offset=LongType(),
    messages_in=LongType(),
    bytes_in=LongType(),
    bytes_out=LongType(),
    produce_requests=LongType(),
    fetch_requests=LongType(),
    replication_bytes_in=LongType(),
    replication_bytes_out=LongType(),
    lag_messages=LongType(),
)
LOG_DIR = _struct(size_bytes=LongType(), total_bytes=LongType(), free_bytes=LongType())

CLUSTER_SNAPSHOT = _struct(
    schema=StringType(),
    broker_id=IntegerType(),
    seq=LongType(),
    ts=StringType(),
    uptime_s=DoubleType(),
    event_loop=_struct(busy_ratio=DoubleType()),
    pools=_struct(
        io=_struct(idle_ratio=DoubleType()),
        network=MapType(StringType(), _struct(plane=StringType(), idle_ratio=DoubleType())),
    ),
    all_requests=_struct(queue_time_ms=_struct(p99=DoubleType(), window_count=LongType())),
    cluster=_struct(rack=StringType()),
    partitions=ArrayType(PARTITION),
    log_dirs=ArrayType(LOG_DIR),
)
"""What the per-broker and per-partition tables read of a snapshot (``cluster_tables``)."""
