"""A PushTelemetry payload read: decompressed and checked on the request path, decoded as
OTLP ``MetricsData`` when it is read.

Owns: ``read_payload``, ``decode`` and ``Point``. ``read_payload`` is what a push costs
on the request path: the payload decompressed with the record codecs (``records.codec``:
gzip, snappy, lz4, zstd, as Kafka accepts), never past ``telemetry.max.bytes`` (a small
zstd payload may stand for gigabytes), and parsed once with the OpenTelemetry project's
generated classes (``opentelemetry-proto``), not a hand-written protobuf reader, to answer
a payload that is not OTLP at once. A payload that does not decompress or parse raises
``PayloadError`` (INVALID_RECORD); one that decompresses to more than the limit raises it
with TELEMETRY_TOO_LARGE. ``decode`` turns the checked bytes into points, later, when
someone reads them: sums, gauges and histograms, each data point with its attributes, and
the resources' attributes; exponential histograms and summaries are skipped (librdkafka
and the Java client send neither). Pure computation: no I/O, no event loop.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData, NumberDataPoint

from ...protocol.errors import ErrorCode
from ...records import Compression, RecordsError
from ...records.codec import decompress_at_most

SUM, GAUGE, HISTOGRAM = "sum", "gauge", "histogram"


class PayloadError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True, slots=True)
class Point:
    """The latest data point of one metric series (name and attributes)."""

    name: str
    kind: str  # sum, gauge or histogram
    value: float  # histograms: their sum
    attributes: tuple[tuple[str, str], ...]
    time_unix_nano: int
    count: int = 0  # histograms only

    @property
    def series(self) -> str:
        """The series' key: its name, with ``{k=v,...}`` when it has attributes."""
        if not self.attributes:
            return self.name
        return sys.intern(self.name + "{" + ",".join(f"{k}={v}" for k, v in self.attributes) + "}")


def _text(value: AnyValue) -> str:
    kind = value.WhichOneof("value")
    return "" if kind is None else str(getattr(value, kind))


def _attributes(attrs: list[KeyValue]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((sys.intern(kv.key), _text(kv.value)) for kv in attrs))


def _number(point: NumberDataPoint) -> float:
    return float(point.as_double if point.WhichOneof("value") == "as_double" else point.as_int)


def read_payload(compression_type: int, payload: bytes, max_bytes: int) -> bytes:
    """The payload decompressed and checked to parse as OTLP ``MetricsData``."""
    try:
        raw = decompress_at_most(Compression(compression_type), payload, max_bytes)
    except (RecordsError, ValueError) as exc:
        raise PayloadError(ErrorCode.INVALID_RECORD, f"payload not decompressed: {exc}") from None
    if len(raw) > max_bytes:
        raise PayloadError(
            ErrorCode.TELEMETRY_TOO_LARGE,
            f"the payload decompresses to {len(raw)} bytes, over telemetry.max.bytes={max_bytes}",
        )
    raw = bytes(raw)
    try:
        MetricsData().ParseFromString(raw)  # ~3 us for librdkafka's producer set
    except DecodeError as exc:
        raise PayloadError(ErrorCode.INVALID_RECORD, f"not OTLP MetricsData: {exc}") from None
    return raw


def decode(raw: bytes) -> tuple[dict[str, str], list[Point]]:
    """The resource attributes and the data points of a payload ``read_payload`` passed."""
    data = MetricsData()
    data.ParseFromString(raw)
    resource: dict[str, str] = {}
    points: list[Point] = []
    for rm in data.resource_metrics:
        resource.update(_attributes(list(rm.resource.attributes)))
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                kind = metric.WhichOneof("data")
                # every client of a kind pushes the same names: one copy of each is kept
                name = sys.intern(metric.name)
                if kind in (SUM, GAUGE):
                    for p in getattr(metric, kind).data_points:
                        attrs = _attributes(list(p.attributes))
                        points.append(Point(name, kind, _number(p), attrs, p.time_unix_nano))
                elif kind == HISTOGRAM:
                    for h in metric.histogram.data_points:
                        attrs = _attributes(list(h.attributes))
                        points.append(Point(name, kind, h.sum, attrs, h.time_unix_nano, h.count))
    return resource, points
