"""Topic configs in a ZooKeeper cluster: one set per topic, in force on every broker.

Owns: ``ZkTopicConfigs``, which stands in for ``TopicAdmin`` in AlterConfigs and
IncrementalAlterConfigs when ``zookeeper.connect`` is set, as a ZooKeeper-era Kafka
broker's ``AdminZkClient.changeTopicConfig`` and ``ZkConfigManager`` do:

- a change (on whichever broker a client asks) is checked as on one broker, written to
  ``/config/topics/<t>`` (Kafka's ``{"version": 1, "config": {...}}``), and announced
  as ``topics/<t>`` (``ZkConfigChanges``);
- every broker follows the announcements: it reads that topic's config again, keeps it
  (``configs``: what DescribeConfigs answers for a topic this broker holds no partition
  of) and, for a topic it holds, puts it in force in its logs at once
  (``TopicAdmin.set_configs``); at start and after a new session it reads them all.

Topic creation and deletion announce too, so that every broker's view of the configs
follows (a Kafka broker reads them when it needs them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ...apis.services import TopicError
from ...protocol.errors import ErrorCode
from ..config import plan_topic_change
from ..topics import TopicAdmin
from . import layout
from .config_changes import ZkConfigChanges
from .session import ZkSession

log = logging.getLogger("trio_broker.server")


class ZkTopicConfigs:
    kind = "topics"

    def __init__(self, session: ZkSession, local: TopicAdmin, changes: ZkConfigChanges) -> None:
        self.session = session
        self.local = local
        self.changes = changes
        self.configs: dict[str, dict[str, str]] = {}  # every topic's, as last read
        local.remote_topic_configs = self.configs
        changes.follow(self)

    # ------------------------------------------------------------- changes

    async def current_overrides(self, name: str) -> Mapping[str, str]:
        """The topic's config overrides as ZooKeeper has them (UNKNOWN_TOPIC_OR_PARTITION
        if there is no such topic)."""
        if await self.session.get(layout.topic_path(name)) is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        return await self.changes.read(self.kind, name) or {}

    def overrides(self, name: str) -> Mapping[str, str] | None:
        """What this broker knows of the topic's overrides (for DescribeConfigs)."""
        info = self.local.catalog.get(name)
        if info is not None:
            return info.configs
        return self.configs.get(name)

    async def set_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool
    ) -> None:
        """Replace a topic's config overrides in the whole cluster (``ChangeRefused``
        when a key or value is refused)."""
        clean = plan_topic_change(overrides)
        await self.current_overrides(name)  # the topic exists
        if validate_only:
            return
        await self.changes.publish(self.kind, name, clean)
        await self._apply(name, clean)
        log.info("topic %s configs now %s (in ZooKeeper)", name, clean)

    async def announce(self, name: str) -> None:
        """Tell every broker that the topic's config node changed."""
        await self.changes.announce(self.kind, name)

    async def _apply(self, name: str, configs: dict[str, str] | None) -> None:
        if configs is None:
            self.configs.pop(name, None)
            return
        self.configs[name] = configs
        info = self.local.catalog.get(name)
        if info is not None and dict(info.configs) != configs:
            await self.local.set_configs(name, configs, validate_only=False)

    async def _read(self, name: str) -> dict[str, str] | None:
        return await self.changes.read(self.kind, name)

    # ------------------------------------------------------------ following

    async def read_all(self) -> None:
        await self.session.ensure_path(layout.CONFIG_TOPICS)
        names = await self.session.children(layout.CONFIG_TOPICS)
        for name in [n for n in self.configs if n not in names]:
            del self.configs[name]
        for name in names:
            await self._apply(name, await self._read(name))

    async def changed(self, name: str) -> None:
        await self._apply(name, await self._read(name))
