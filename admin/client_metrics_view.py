"""What the admin API's client telemetry routes need of the broker: ``ClientMetricsView``.

Owns: the ``ClientMetricsView`` protocol (KIP-714's clients as kept, and the
``CLIENT_METRICS`` subscriptions: the one set Kafka's config APIs change too). Imports
nothing of the broker, so the routes can be read and tested against any object of this
shape. Every method runs on the broker's event loop and never blocks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class ClientMetricsView(Protocol):
    def client_metrics(self) -> Sequence[Mapping[str, Any]]:
        """One entry per client instance kept (a copy)."""
        ...

    def client_metrics_subscriptions(self) -> Sequence[Mapping[str, Any]]:
        """Every subscription: ``{"name", "metrics", "interval.ms", "match"}``."""
        ...

    def client_metrics_subscription(self, name: str) -> Mapping[str, Any]:
        """One subscription; ``NotFound`` when there is none of that name."""
        ...

    async def put_client_metrics_subscription(
        self, name: str, configs: Mapping[str, str]
    ) -> Mapping[str, Any]:
        """Create or replace a subscription; ``Invalid`` with Kafka's message."""
        ...

    async def delete_client_metrics_subscription(self, name: str) -> Mapping[str, Any]:
        """Remove a subscription and return it; ``NotFound`` when there is none."""
        ...
