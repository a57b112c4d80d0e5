"""Reading the broker's metrics out: the JSON snapshot and the Prometheus text.

Owns: ``MetricsReport``, over one ``BrokerMetrics``: ``snapshot`` (schema
``trio-broker.metrics/1``, each call a new ``seq``), ``figures`` (the same without a new
``seq``) and ``prometheus_text`` (the same figures in Prometheus' text format, from one
registry built once). Reading changes no figure.
"""

from __future__ import annotations

from typing import Any

from .broker_metrics import BrokerMetrics
from .prometheus import prometheus_text, registry_for
from .snapshot import build_snapshot


class MetricsReport:
    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics
        self.seq = 0
        # (the clients' series are set on the metrics once telemetry is built: read them late)
        self._registry = registry_for(
            self.figures, metrics.partition_series, lambda: metrics.client_series()
        )

    def snapshot(self) -> dict[str, Any]:
        """The JSON snapshot (schema ``trio-broker.metrics/1``); ``seq`` grows by one."""
        self.seq += 1
        return build_snapshot(self.metrics, self.seq)

    def figures(self) -> dict[str, Any]:
        """The same figures without taking a snapshot (``seq`` is the last one taken)."""
        return build_snapshot(self.metrics, self.seq)

    def prometheus_text(self) -> bytes:
        """The figures in Prometheus' text format (takes no snapshot: ``seq`` stays)."""
        return prometheus_text(self._registry)
