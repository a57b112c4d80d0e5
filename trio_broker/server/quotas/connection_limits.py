"""The network layer's connection limits, from the broker's config.

Owns: ``connection_limits_from``: ``max.connections`` and ``max.connection.creation.rate``
(broker-wide and per listener), ``max.connections.per.ip`` and its overrides, as the
socket server's ``ConnectionLimits``. Kept apart from ``config`` so that the config
modules stay free of the network layer (and of trio).
"""

from __future__ import annotations

from ...network.connection_quotas import ConnectionLimits
from ..config import BrokerConfig

# The broker keys whose change applies to the running listeners' limits at once.
CONNECTION_KEYS = frozenset(
    {
        "max.connections",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "max.connection.creation.rate",
    }
)


def connection_limits_from(config: BrokerConfig) -> ConnectionLimits:
    def per_listener(key: str) -> dict[str, int]:
        out = {}
        for lc in config.listeners:
            value = config.listener_setting(lc.name, key)
            if value is not None:
                out[lc.name] = int(value)
        return out

    return ConnectionLimits(
        max_connections=config["max.connections"],
        per_listener=per_listener("max.connections"),
        max_per_ip=config["max.connections.per.ip"],
        per_ip_overrides=config.max_connections_per_ip_overrides,
        max_creation_rate=config["max.connection.creation.rate"],
        per_listener_rate=per_listener("max.connection.creation.rate"),
    )
