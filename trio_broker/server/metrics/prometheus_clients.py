"""The clients' own metrics (KIP-714 pushes) in Prometheus' text format.

Owns: ``client_telemetry_families`` (the snapshot's ``client_telemetry`` counters, always
there) and ``ClientSeriesCollector``, a collector over the points client telemetry hands out
(empty unless ``client.metrics.prometheus.enable``): each pushed metric becomes the gauge
``kafka_client_<name>``, its name's dots and other signs as underscores (librdkafka's
``org.apache.kafka.producer.record.queue.time.avg`` is
``kafka_client_org_apache_kafka_producer_record_queue_time_avg``), labelled with the
client's instance id, client id and software and the point's own attributes. Must not:
compute or keep anything (the figures are ``server.telemetry``'s).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

ClientSeries = Callable[[], list[tuple[str, dict[str, str], float]]]

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def _name(text: str) -> str:
    return _NOT_NAME.sub("_", text)


def _label(text: str) -> str:
    cleaned = _name(text)
    return cleaned if cleaned and not cleaned[0].isdigit() else f"_{cleaned}"


class ClientSeriesCollector:
    def __init__(self, series: ClientSeries) -> None:
        self.series = series

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for name, labels, value in self.series():
            full = "kafka_client_" + _name(name)
            family = families.get(full)
            if family is None:
                family = families[full] = Metric(full, f"Pushed by clients: {name}", "gauge")
            family.add_sample(full, {_label(k): v for k, v in labels.items()}, value)
        yield from families.values()


_COUNTERS = (
    ("pushes", "PushTelemetry requests whose metrics were kept"),
    ("push_errors", "PushTelemetry requests refused (any of Kafka's errors)"),
    ("throttled", "Telemetry requests sooner than the push interval"),
    ("unknown_subscription", "Pushes with an outdated subscription id"),
    ("evicted", "Client instances dropped over client.metrics.max.clients"),
    ("expired", "Client instances dropped after max(60 s, 3 push intervals) unheard"),
    ("disconnected", "Client instances dropped with the connection they were made on"),
)


def client_telemetry_families(section: dict[str, Any] | None) -> Iterator[Metric]:
    """The ``client_telemetry`` section: Kafka's ``client-metrics`` instance count, and
    ``trio_broker_client_telemetry_<counter>_total``."""
    if section is None:
        return
    yield GaugeMetricFamily(
        "kafka_server_client_metrics_instance_count",
        "Client instances whose telemetry is kept (Kafka's client-metrics instance-count)",
        value=section["instances"],
    )
    for key, doc in _COUNTERS:
        yield CounterMetricFamily(f"trio_broker_client_telemetry_{key}", doc, value=section[key])
