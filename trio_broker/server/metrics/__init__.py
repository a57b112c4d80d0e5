"""Broker metrics: Kafka's request, pool, connection and topic metrics (the metrics issue).

Modules, each owning one concern: ``window`` (sliding windows of HDR histograms and sums),
``error_codes`` (compiled error-code counters of response bodies), ``requests`` (per
request type figures and the request-path observers), ``pools`` (idle ratios of handler
and processor pools across resizes), ``topics`` (BrokerTopicMetrics), ``partitions``
(per-partition load counters), ``snapshot`` (the JSON snapshot, docs/metrics.md),
``prometheus``, ``prometheus_partitions``, ``prometheus_groups`` and ``prometheus_clients``
(the same figures, and the clients' pushed metrics, for Prometheus),
``broker_metrics`` (``BrokerMetrics``: wiring, sampler task, the data path's API),
``event_loop`` (the loop's busy ratio and stalls) and ``report`` (``MetricsReport``: the
snapshot and Prometheus text read from a ``BrokerMetrics``).

Face: what ``__all__`` names. Uses of the server: ``handlers`` (the request path it
observes), ``common``; its sources come as constructor arguments.
"""

from .broker_metrics import BrokerMetrics
from .report import MetricsReport
from .snapshot import SCHEMA

__all__ = ["SCHEMA", "BrokerMetrics", "MetricsReport"]
