"""Dynamic broker configs in a ZooKeeper cluster: the cluster default on every broker.

Owns: ``ZkBrokerConfigs``, what a ZooKeeper-era Kafka broker's ``AdminZkClient.
changeBrokerConfig`` and ``BrokerConfigHandler`` do for the two levels of dynamic broker
configs (``kafka-configs.sh --entity-type brokers``):

- ``--entity-default`` (broker resource ``""``) lives in ``/config/brokers/<default>`` and
  is in force on every broker; ``--entity-name <id>`` in ``/config/brokers/<id>``, in
  force on that broker (a broker asked to change its own level writes its own node);
- a change, whichever door it came in by (AlterConfigs, IncrementalAlterConfigs, the
  admin API's ``PUT /v1/config`` and pool resizes), is checked as on one broker, written
  to the level's node and announced as ``brokers/<entity>`` (``ZkConfigChanges``), then
  kept in this broker's data dir and put in force (``update_config``);
- every broker follows the announcements of ``<default>`` and of its own id: it reads the
  node again and, when it differs from what it runs, keeps and applies it as its own
  change would be (pools resize, limits and topic defaults apply at once);
- at start and after a new session it reads both nodes again. A level whose node does
  not exist yet is written there from the data dir, so changes made before the broker
  joined a cluster (or before these nodes existed) are kept, not dropped.

A node that holds a key this broker refuses (unknown, static, a bad value: written by
another tool or a newer broker) is not applied; the broker logs it, naming the node and
the key, and goes on with what it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

import trio

from ..config import BrokerConfig, ChangeRefused, plan_broker_change
from . import layout
from .config_changes import ZkConfigChanges
from .session import ZkSession

log = logging.getLogger("trio_broker.server")


class RunningBroker(Protocol):
    """The broker whose config this is (``Broker``)."""

    broker_id: int
    config: BrokerConfig

    async def keep_config(self, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
        """Store ``new`` in the data dir, then apply it."""


class ZkBrokerConfigs:
    kind = "brokers"

    def __init__(
        self,
        session: ZkSession,
        changes: ZkConfigChanges,
        broker: RunningBroker,
        lock: trio.Lock,
    ) -> None:
        self.session = session
        self.changes = changes
        self.broker = broker
        self.lock = lock  # the broker's one-change-at-a-time lock (``ConfigAdmin.lock``)
        self.broker_id = broker.broker_id
        changes.follow(self)

    def _levels(self) -> tuple[tuple[bool, str], ...]:
        """(cluster_default, entity) of the two levels this broker follows."""
        return (False, str(self.broker_id)), (True, layout.DEFAULT_BROKER)

    async def update_config(self, new: BrokerConfig, changed: Mapping[str, str | None]) -> None:
        """Make ``new`` (``with_updates`` of the running config) the cluster's: each level
        it changed is written to ZooKeeper and announced, then kept and applied here."""
        before = self.broker.config
        for level, entity in self._levels():
            settings = new.level_raw(cluster_default=level)
            if dict(settings) != dict(before.level_raw(cluster_default=level)):
                await self._publish(entity, settings)
        await self.broker.keep_config(new, changed)

    async def _publish(self, entity: str, settings: Mapping[str, str]) -> None:
        await self.changes.publish(self.kind, entity, settings)
        log.info("broker config %s now %s (in ZooKeeper)", entity, sorted(settings))

    async def _read(self, entity: str) -> dict[str, str] | None:
        return await self.changes.read(self.kind, entity)

    # ------------------------------------------------------------ following

    async def read_all(self) -> None:
        for level, entity in self._levels():
            stored = await self._read(entity)
            if stored is not None:
                await self._adopt(level, entity, stored)
                continue
            local = self.broker.config.level_raw(cluster_default=level)
            if local:  # changes from before ZooKeeper had them: the cluster keeps them
                await self._publish(entity, local)

    async def changed(self, name: str) -> None:
        for level, entity in self._levels():
            if name == entity:
                await self._adopt(level, entity, await self._read(entity) or {})

    async def _adopt(self, level: bool, entity: str, settings: Mapping[str, str]) -> None:
        """Put a level as ZooKeeper has it in force here, if it differs."""
        async with self.lock:  # planned on the config the change before it made
            await self._adopt_locked(level, entity, settings)

    async def _adopt_locked(self, level: bool, entity: str, settings: Mapping[str, str]) -> None:
        config = self.broker.config
        running = config.level_raw(cluster_default=level)
        keys = set(running) | set(settings)
        changed = {k: settings.get(k) for k in keys if running.get(k) != settings.get(k)}
        if not changed:
            return
        try:
            new = plan_broker_change(config, changed, cluster_default=level)
        except ChangeRefused as exc:
            path = layout.broker_config_path(entity)
            log.error("broker config %s in ZooKeeper not applied: %s", path, exc.message)
            return
        await self.broker.keep_config(new, changed)
        log.info("broker config %s from ZooKeeper: %s", entity, sorted(changed))
