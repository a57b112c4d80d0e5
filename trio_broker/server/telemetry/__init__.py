"""Client telemetry (KIP-714): what clients push about themselves, received and kept.

Owns: the ``CLIENT_METRICS`` subscriptions, checked as Kafka checks them and persisted in
the data dir (``subscriptions``); the client instances and their GetTelemetrySubscriptions
and PushTelemetry exchanges, as Kafka's ``ClientMetricsManager``, each instance dropped with
the connection it was made on (``instances``: ``ClientInstances.connection_closed``,
which ``lifecycle`` hands the network layer); a pushed payload's decompression and check
on the request path, and its OTLP decoding when read (``otlp``); and ``ClientTelemetry``,
the view the handlers and the admin API work through, with the clients read out for the
admin API and Prometheus, each with the bytes of its client's open connections as the
broker counts them (``service``: ``ConnectionBytes``).

Face: what ``__all__`` names. Uses of the server: ``datadir``. Must not import the
network or ZooKeeper: ``coordination`` keeps a cluster's subscriptions in step through
``ClientTelemetry.store_change`` and ``keep``.
"""

from .instances import IDLE_INTERVALS, ClientInstances
from .service import ClientTelemetry, ConnectionBytes, StoreChange
from .subscriptions import Subscription, SubscriptionError, parse_subscription

__all__ = [
    "IDLE_INTERVALS",
    "ClientInstances",
    "ClientTelemetry",
    "ConnectionBytes",
    "StoreChange",
    "Subscription",
    "SubscriptionError",
    "parse_subscription",
]
