"""The admin API's client telemetry over a running broker: ``ClientMetricsAdmin``.

Owns: the broker side of ``admin.client_metrics_view.ClientMetricsView``: the clients as
``ClientTelemetry`` keeps them, joined when read with the byte counters of the socket
server's open connections (``ConnectionBytes``: no cost on the request path), and the
``CLIENT_METRICS`` subscriptions changed through ``ClientTelemetry.alter_subscription``,
the path IncrementalAlterConfigs takes (checked as Kafka checks them; in a ZooKeeper
cluster written to ZooKeeper first). Kafka's refusals
become ``Invalid`` (400) with Kafka's message. Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from admin.view import Invalid, NotFound

from ...apis.services import TopicError
from ..telemetry import ConnectionBytes, Subscription

if TYPE_CHECKING:
    from ..lifecycle import Broker

DELETE = 1  # IncrementalAlterConfigs' operation


def _json(sub: Subscription) -> dict[str, Any]:
    return {
        "name": sub.name,
        "metrics": ",".join(sub.metrics),
        "interval.ms": sub.interval_ms,
        "match": sub.configs.get("match", ""),
    }


class ClientMetricsAdmin:
    broker: Broker

    def client_metrics(self) -> Sequence[Mapping[str, Any]]:
        connections = (
            ConnectionBytes(
                c.id,
                c.client_id or "",
                c.client_software_name or "",
                c.client_software_version or "",
                c.remote[0],
                c.bytes_in,
                c.bytes_out,
            )
            for c in self.broker.socket_server.all_connections()
        )
        return self.broker.telemetry.clients(connections)

    def client_metrics_subscriptions(self) -> Sequence[Mapping[str, Any]]:
        return [_json(s) for s in self.broker.telemetry.subscriptions()]

    def client_metrics_subscription(self, name: str) -> Mapping[str, Any]:
        sub = self.broker.telemetry.store.get(name)
        if sub is None:
            raise NotFound("unknown-subscription", f"no client metrics subscription {name!r}")
        return _json(sub)

    async def put_client_metrics_subscription(
        self, name: str, configs: Mapping[str, str]
    ) -> Mapping[str, Any]:
        try:
            await self.broker.telemetry.put(name, configs)
        except TopicError as exc:
            raise Invalid("invalid-config", exc.message) from None
        return self.client_metrics_subscription(name)

    async def delete_client_metrics_subscription(self, name: str) -> Mapping[str, Any]:
        found = self.client_metrics_subscription(name)
        keys = [(k, DELETE, None) for k in ("metrics", "interval.ms", "match")]
        await self.broker.telemetry.alter_subscription(name, keys, validate_only=False)
        return found
