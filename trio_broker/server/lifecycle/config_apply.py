"""Putting a broker's run-time config in force.

Owns: ``stored_config`` (the dynamic changes an earlier run stored, over the static
config, at start-up) and ``apply_config`` (a validated new config made the running one:
pools resize, connection limits apply at once, topics take new log.* defaults). Only the
``Broker`` calls these; they are here to keep its module short.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

import trio

from ...network.socket_server import SocketServer
from ..common import HANDLERS_PER_IO_THREAD, IoPool
from ..config import BrokerConfig, ConfigError, DynamicConfigStore
from ..handlers import HandlerPool
from ..quotas import CONNECTION_KEYS, connection_limits_from
from ..replication import ReplicaManager
from ..topics import TopicCatalog


class Broker(Protocol):
    """The parts of ``server.lifecycle.broker.Broker`` a config change touches."""

    config: BrokerConfig
    dynamic_store: DynamicConfigStore
    replica_manager: ReplicaManager
    data_pool: HandlerPool
    io_pool: IoPool
    socket_server: SocketServer
    topics_catalog: TopicCatalog


log = logging.getLogger("trio_broker.server")


async def stored_config(broker: Broker) -> tuple[BrokerConfig, dict[str, str]] | None:
    """The running config with the dynamic changes an earlier run stored, and those
    changes; None when none were stored. A stored value this broker refuses is a
    start-up error naming the file."""
    store = broker.dynamic_store
    stored = await trio.to_thread.run_sync(store.load)
    if not any(stored):
        return None
    try:
        new = broker.config.with_dynamic(stored.broker, stored.cluster_default)
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.value, f"{exc.reason} (stored in {store.path})") from None
    log.info("dynamic config from %s: %r", store.path, new)
    return new, {**stored.cluster_default, **stored.broker}


def apply_config(broker: Broker, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
    """Make ``new`` (dynamic changes already validated) ``broker``'s running config."""
    broker.config = new
    broker.replica_manager.config = new
    if "log.cleaner.threads" in changed:
        broker.replica_manager.cleaner.resize(new["log.cleaner.threads"])
    if "num.io.threads" in changed:
        io = new["num.io.threads"]
        broker.data_pool.resize(HANDLERS_PER_IO_THREAD * io)
        broker.io_pool.resize(io)
    server = broker.socket_server
    for name, lr in server.listeners.items():
        own = f"listener.name.{name.lower()}.num.network.threads"
        if lr.plane != "data" or not ("num.network.threads" in changed or own in changed):
            continue
        size = new.listener_setting(name, "num.network.threads")
        server.resize(name, size or new["num.network.threads"])
    if any(k in CONNECTION_KEYS or k.startswith("listener.name.") for k in changed):
        server.update_limits(connection_limits_from(new))
    if any(k.startswith(("log.", "message.max.bytes", "compression.")) for k in changed):
        for topic in broker.topics_catalog.all():
            broker.replica_manager.reconfigure(topic)
