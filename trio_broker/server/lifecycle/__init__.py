"""The broker's assembly and lifetime.

Owns: ``Broker``, which builds every part from a ``BrokerConfig`` and runs them in nested
nurseries (``broker``), putting a run-time config change in force (``config_apply``),
and what the broker reports of its cluster (``cluster_report``).

Face: what ``__all__`` names. Uses of the server: ``coordination``, ``transactions``,
``groups``, ``metrics``, ``topics``, ``handlers``, ``access``, ``replication``, ``quotas``,
``telemetry``, ``config``, ``common``, ``datadir``; never the admin adapter or the composition root
(``server.node``), which hand the broker its admin server.
"""

from .broker import Broker
from .cluster_report import cluster_view

__all__ = ["Broker", "cluster_view"]
