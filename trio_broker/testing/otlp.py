"""OTLP payloads as KIP-714 clients push them, built for tests and benchmarks.

Owns: ``otlp_metrics`` (a serialized ``MetricsData`` from plain specs, with the
OpenTelemetry project's generated classes, ``opentelemetry-proto``) and
``LIBRDKAFKA_PRODUCER`` (the ten ``org.apache.kafka.producer.*`` metrics librdkafka 2.16's
producer pushes: one sum and nine gauges, the per-broker ones with a ``node.id``
attribute). Compressing a payload is the caller's (``records.codec.compress``). Must not:
talk to a broker.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

Attributes = Mapping[str, "int | str"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric with one data point: ``kind`` is sum, gauge or histogram; a histogram's
    ``value`` is its sum and ``count`` its count; an int ``value`` of a sum or gauge is sent
    as ``as_int``, a float as ``as_double``."""

    name: str
    kind: str
    value: int | float
    attributes: Attributes = field(default_factory=dict)
    count: int = 0


def _attributes(attrs: Attributes) -> list[KeyValue]:
    return [
        KeyValue(
            key=k,
            value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=v),
        )
        for k, v in attrs.items()
    ]


def _metric(spec: MetricSpec, now: int) -> Metric:
    attrs = _attributes(spec.attributes)
    if spec.kind == "histogram":
        point = HistogramDataPoint(
            count=spec.count, sum=float(spec.value), time_unix_nano=now, attributes=attrs
        )
        return Metric(name=spec.name, histogram=Histogram(data_points=[point]))
    number = NumberDataPoint(time_unix_nano=now, attributes=attrs)
    if isinstance(spec.value, int):
        number.as_int = spec.value
    else:
        number.as_double = spec.value
    if spec.kind == "sum":
        return Metric(name=spec.name, sum=Sum(data_points=[number]))
    if spec.kind == "gauge":
        return Metric(name=spec.name, gauge=Gauge(data_points=[number]))
    raise ValueError(f"unknown metric kind {spec.kind!r}: sum, gauge or histogram")


def otlp_metrics(metrics: Sequence[MetricSpec], resource: Attributes | None = None) -> bytes:
    """A serialized OTLP ``MetricsData``: one resource, one scope, ``metrics`` in order."""
    now = time.time_ns()
    scope = ScopeMetrics(metrics=[_metric(spec, now) for spec in metrics])
    rm = ResourceMetrics(scope_metrics=[scope])
    if resource is not None:
        rm.resource.CopyFrom(Resource(attributes=_attributes(resource)))
    return MetricsData(resource_metrics=[rm]).SerializeToString()


_PRODUCER = "org.apache.kafka.producer."
_NODE = {"node.id": 0}
LIBRDKAFKA_PRODUCER: tuple[MetricSpec, ...] = (
    MetricSpec(_PRODUCER + "connection.creation.total", "sum", 1),
    *(
        MetricSpec(_PRODUCER + name, "gauge", 1.25, _NODE if name.startswith("node.") else {})
        for name in (
            "connection.creation.rate",
            "node.request.latency.avg",
            "node.request.latency.max",
            "produce.throttle.time.avg",
            "produce.throttle.time.max",
            "record.queue.time.avg",
            "record.queue.time.max",
            "request.latency.avg",
            "request.latency.max",
        )
    ),
)
