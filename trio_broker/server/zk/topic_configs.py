"""Topic configs in a ZooKeeper cluster: one set per topic, in force on every broker.

Owns: ``ZkTopicConfigs``, which stands in for ``TopicAdmin`` in AlterConfigs and
IncrementalAlterConfigs when ``zookeeper.connect`` is set, as a ZooKeeper-era Kafka
broker's ``AdminZkClient.changeTopicConfig`` and ``ZkConfigManager`` do:

- a change (on whichever broker a client asks) is checked as on one broker, written to
  ``/config/topics/<t>`` (Kafka's ``{"version": 1, "config": {...}}``), and announced
  with a sequential ``/config/changes/config_change_`` node naming ``topics/<t>``;
- every broker watches ``/config/changes``: for each announcement after the last it has
  seen, it reads that topic's config again, keeps it (``configs``: what DescribeConfigs
  answers for a topic this broker holds no partition of) and, for a topic it holds,
  puts it in force in its logs at once (``TopicAdmin.set_configs``);
- at start and after a new ZooKeeper session (announcements may have come and gone
  meanwhile) it reads every topic's config again;
- announcements older than 15 minutes are deleted (Kafka's change expiration).

Topic creation and deletion announce too, so that every broker's view of the configs
follows (a Kafka broker reads them when it needs them).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

import trio

from ...apis.services import TopicError
from ...protocol.errors import ErrorCode
from ..config_changes import plan_topic_change
from ..topic_admin import TopicAdmin
from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.server")

CONFIG_CHANGES = "/config/changes"
CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"
EXPIRY_MS = 15 * 60 * 1000
RETRY_S = 1.0


def _sequence(child: str) -> int:
    return int(child.rsplit("_", 1)[1])


class ZkTopicConfigs:
    def __init__(self, session: ZkSession, local: TopicAdmin) -> None:
        self.session = session
        self.local = local
        self.configs: dict[str, dict[str, str]] = {}  # every topic's, as last read
        local.remote_topic_configs = self.configs
        self._last_seen = -1
        self._session_id: int | None = None

    # ------------------------------------------------------------- changes

    async def current_overrides(self, name: str) -> Mapping[str, str]:
        """The topic's config overrides as ZooKeeper has them (UNKNOWN_TOPIC_OR_PARTITION
        if there is no such topic)."""
        if await self.session.get(layout.topic_path(name)) is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        found = await self.session.get(layout.topic_config_path(name))
        return layout.topic_config_of(found[0]) if found is not None else {}

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
        path = layout.topic_config_path(name)
        data = layout.topic_config_data(clean)
        if not await self.session.create(path, data, makepath=True):
            await self.session.set(path, data, -1)  # the last writer wins, as Kafka's
        await self.announce(name)
        await self._apply(name, clean)
        log.info("topic %s configs now %s (in ZooKeeper)", name, clean)

    async def announce(self, name: str) -> None:
        """Tell every broker that the topic's config node changed."""
        change = json.dumps({"version": 2, "entity_path": f"topics/{name}"}).encode()
        await self.session.create_sequential(CHANGE_PREFIX, change)

    async def _apply(self, name: str, configs: dict[str, str] | None) -> None:
        if configs is None:
            self.configs.pop(name, None)
            return
        self.configs[name] = configs
        info = self.local.catalog.get(name)
        if info is not None and dict(info.configs) != configs:
            await self.local.set_configs(name, configs, validate_only=False)

    async def _read(self, name: str) -> dict[str, str] | None:
        found = await self.session.get(layout.topic_config_path(name))
        return layout.topic_config_of(found[0]) if found is not None else None

    # ------------------------------------------------------------ watching

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the announcements until cancelled. A ZooKeeper call that fails (the
        session suspended or lost) is tried again a second later, everything read again
        then; it never ends the broker."""
        task_status.started()
        while True:
            try:
                changed = await self._follow_changes()
            except Exception as exc:  # ZooKeeper unreachable, the session lost, a bad node
                log.warning("topic config changes not followed (retrying): %r", exc)
                self._session_id = None  # read everything again then
                await trio.sleep(RETRY_S)
                continue
            await changed()

    async def _follow_changes(self) -> Callable[[], Awaitable[None]]:
        """Take in the announcements not seen yet; a function that returns once more come
        (or the session's state changes)."""
        await self.session.ensure_path(CONFIG_CHANGES)
        await self.session.ensure_path(layout.CONFIG_TOPICS)
        kids, changed = await self.session.watch_children(CONFIG_CHANGES)
        changes = sorted((_sequence(k), k) for k in kids if k.startswith("config_change_"))
        if self.session.session_id != self._session_id:
            self._session_id = self.session.session_id
            await self._read_all()
            self._last_seen = max((s for s, _ in changes), default=-1)
        else:
            for seq, child in changes:
                if seq > self._last_seen:
                    await self._follow(f"{CONFIG_CHANGES}/{child}")
                    self._last_seen = seq
        await self._expire(changes)
        return changed

    async def _read_all(self) -> None:
        names = await self.session.children(layout.CONFIG_TOPICS)
        for name in [n for n in self.configs if n not in names]:
            del self.configs[name]
        for name in names:
            await self._apply(name, await self._read(name))

    async def _follow(self, path: str) -> None:
        found = await self.session.get(path)
        if found is None:
            return  # expired meanwhile (the next session's full read covers it)
        entity = str(json.loads(found[0]).get("entity_path", ""))
        kind, _, name = entity.partition("/")
        if kind == "topics" and name:
            await self._apply(name, await self._read(name))

    async def _expire(self, changes: list[tuple[int, str]]) -> None:
        now_ms = time.time() * 1000
        for _, child in changes[:-1]:  # the newest stays: it holds the sequence
            path = f"{CONFIG_CHANGES}/{child}"
            created = await self.session.created_ms(path)
            if created is not None and now_ms - created > EXPIRY_MS:
                await self.session.delete(path)
