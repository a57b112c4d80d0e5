"""Client metrics subscriptions (KIP-714's ``CLIENT_METRICS``) in a ZooKeeper cluster: one
set for every broker.

Owns: ``ZkClientMetrics``. Kafka keeps these subscriptions in KRaft's metadata only (KIP-714
came after ZooKeeper mode), so the layout is this broker's, in the ZooKeeper-era style of
the other config entities: a subscription is the node ``/config/client-metrics/<name>``
(the name sanitized as Kafka's ``Sanitizer``), holding its configs under Kafka's names, and
a change is announced as ``client-metrics/<name>`` on ``/config/changes``.

A change (IncrementalAlterConfigs, AlterConfigs or the admin API, on any broker) is checked
there, written to its node (every key removed: the node deleted) and announced; every
broker, the writer too, follows the announcement and makes its own store
(``ClientTelemetry.keep``, the data dir's ``client_metrics.json``) match the node. At start
and after a new session every node is read again and the store made to match ZooKeeper;
a broker's subscriptions from before it joined a cluster that has none yet are written
there. A node this broker refuses is logged and left out.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping

from ..telemetry import ClientTelemetry, SubscriptionError, parse_subscription
from .config_changes import ZkConfigChanges
from .session import ZkSession
from .user_credentials import sanitize

log = logging.getLogger("trio_broker.server")

KIND = "client-metrics"
CONFIG_CLIENT_METRICS = f"/config/{KIND}"


class ZkClientMetrics:
    kind = KIND

    def __init__(
        self, session: ZkSession, changes: ZkConfigChanges, telemetry: ClientTelemetry
    ) -> None:
        self.session = session
        self.changes = changes
        self.telemetry = telemetry
        changes.follow(self)
        telemetry.store_change = self.store_change

    async def store_change(self, name: str, configs: Mapping[str, str]) -> None:
        """A checked change: written to ZooKeeper and announced, then kept here."""
        node = sanitize(name)
        if configs:
            await self.changes.publish(KIND, node, configs)
        else:
            await self.session.delete(f"{CONFIG_CLIENT_METRICS}/{node}")
            await self.changes.announce(KIND, node)
        await self.telemetry.keep(name, configs)
        log.info("client metrics subscription %r now %s (in ZooKeeper)", name, dict(configs))

    async def read_all(self) -> None:
        nodes = await self.session.children(CONFIG_CLIENT_METRICS)
        local = self.telemetry.subscriptions()
        if not nodes and local:  # subscriptions from before ZooKeeper had any: kept
            for sub in local:
                await self.changes.publish(KIND, sanitize(sub.name), dict(sub.configs))
            return
        names = {urllib.parse.unquote(n) for n in nodes}
        for name in names | {s.name for s in local}:
            await self.changed(sanitize(name))

    async def changed(self, name: str) -> None:
        """Make this broker's subscription ``name`` (as announced) what ZooKeeper has."""
        plain = urllib.parse.unquote(name)
        configs = await self.changes.read(KIND, name) or {}
        try:
            if configs:
                parse_subscription(plain, configs)
        except SubscriptionError as exc:
            log.error("%s/%s: not applied: %s", CONFIG_CLIENT_METRICS, name, exc.message)
            return
        have = self.telemetry.store.get(plain)
        if (dict(have.configs) if have is not None else {}) == configs:
            return
        await self.telemetry.keep(plain, configs)
        log.info("client metrics subscription %r from ZooKeeper: %s", plain, configs)
