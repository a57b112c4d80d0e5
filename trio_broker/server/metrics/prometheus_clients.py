"""The clients' own metrics (KIP-714 pushes) in Prometheus' text format.

Owns: ``ClientSeriesCollector``, a collector over the points client telemetry hands out
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

from prometheus_client.core import Metric

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
