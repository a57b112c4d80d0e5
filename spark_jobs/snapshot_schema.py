"""The metrics snapshot as the Spark jobs read it: the one contract with the broker.

Owns: ``SCHEMA_ID`` (``trio-broker.metrics/1``), the explicit Spark schema of the fields
the jobs use (``SNAPSHOT``; every field nullable, unknown fields ignored, as version 1
allows fields to be added), ``HEAD`` (the few fields that identify a line) and the
scraper's marker lines (``MARKER_KEY``). The source of truth is ``docs/metrics.md`` and
``docs/metrics.schema.json``; a test checks that every field named here is in that schema.
Must not: import the broker (``trio_broker``): a snapshot is all the jobs know of it.
"""

from __future__ import annotations

from pyspark.sql.types import (
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
