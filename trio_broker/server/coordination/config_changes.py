"""Config change announcements in a ZooKeeper cluster: ``/config/changes``.

Owns: ``ZkConfigChanges``, what a ZooKeeper-era Kafka broker's ``ZkConfigManager`` does
for the config entities this broker follows (``EntityConfigs``: topics, brokers, users'
credentials and quotas, clients' quotas):

- whoever changes an entity's config node ``/config/<kind>/<name>`` writes it and announces
  it with a sequential ``/config/changes/config_change_`` node naming ``<kind>/<name>``
  (``publish``; ``read`` reads one back);
- every broker watches ``/config/changes``: for each announcement after the last it has
  seen, the entity kind's ``changed(name)`` reads that node again and puts it in force;
- at start and after a new ZooKeeper session (announcements may have come and gone
  meanwhile) every kind's ``read_all`` reads all its nodes again;
- announcements older than 15 minutes are deleted (Kafka's change expiration).

A ZooKeeper call that fails (the session suspended or lost) is tried again a second later,
everything read again then; following never ends the broker.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

import trio

from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.server")

CONFIG_CHANGES = "/config/changes"
CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"
EXPIRY_MS = 15 * 60 * 1000
RETRY_S = 1.0


class EntityConfigs(Protocol):
    """One kind of config entity a broker follows (``kind`` as in ``/config/<kind>``)."""

    kind: str

    async def read_all(self) -> None:
        """Read every node of the kind again and put it in force."""

    async def changed(self, name: str) -> None:
        """Read the node of ``name`` again (announced as changed) and put it in force."""


def _sequence(child: str) -> int:
    return int(child.rsplit("_", 1)[1])


class ZkConfigChanges:
    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self.kinds: dict[str, list[EntityConfigs]] = {}  # users: credentials and quotas
        self._last_seen = -1
        self._session_id: int | None = None

    def follow(self, entities: EntityConfigs) -> None:
        self.kinds.setdefault(entities.kind, []).append(entities)

    async def read(self, kind: str, name: str) -> dict[str, str] | None:
        """The settings of ``/config/<kind>/<name>`` (None: there is no such node)."""
        found = await self.session.get(f"/config/{kind}/{name}")
        return layout.config_of(found[0]) if found is not None else None

    async def publish(self, kind: str, name: str, configs: Mapping[str, str]) -> None:
        """Write ``/config/<kind>/<name>`` (the last writer wins, as Kafka's) and
        announce it."""
        path, data = f"/config/{kind}/{name}", layout.config_data(configs)
        if not await self.session.create(path, data, makepath=True):
            await self.session.set(path, data, -1)
        await self.announce(kind, name)

    async def announce(self, kind: str, name: str) -> None:
        """Tell every broker that the config node of ``kind/name`` changed."""
        change = json.dumps({"version": 2, "entity_path": f"{kind}/{name}"}).encode()
        await self.session.create_sequential(CHANGE_PREFIX, change)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Follow the announcements until cancelled."""
        task_status.started()
        while True:
            try:
                changed = await self._follow_changes()
            except Exception as exc:  # ZooKeeper unreachable, the session lost, a bad node
                log.warning("config changes not followed (retrying): %r", exc)
                self._session_id = None  # read everything again then
                await trio.sleep(RETRY_S)
                continue
            await changed()

    async def _follow_changes(self) -> Callable[[], Awaitable[None]]:
        """Take in the announcements not seen yet; a function that returns once more come
        (or the session's state changes)."""
        await self.session.ensure_path(CONFIG_CHANGES)
        kids, changed = await self.session.watch_children(CONFIG_CHANGES)
        changes = sorted((_sequence(k), k) for k in kids if k.startswith("config_change_"))
        if self.session.session_id != self._session_id:
            self._session_id = self.session.session_id
            for followers in self.kinds.values():
                for entities in followers:
                    await entities.read_all()
            self._last_seen = max((s for s, _ in changes), default=-1)
        else:
            for seq, child in changes:
                if seq > self._last_seen:
                    await self._follow(f"{CONFIG_CHANGES}/{child}")
                    self._last_seen = seq
        await self._expire(changes)
        return changed

    async def _follow(self, path: str) -> None:
        found = await self.session.get(path)
        if found is None:
            return  # expired meanwhile (the next session's full read covers it)
        entity = str(json.loads(found[0]).get("entity_path", ""))
        kind, _, name = entity.partition("/")
        for entities in self.kinds.get(kind, []) if name else []:
            await entities.changed(name)

    async def _expire(self, changes: list[tuple[int, str]]) -> None:
        now_ms = time.time() * 1000
        for _, child in changes[:-1]:  # the newest stays: it holds the sequence
            path = f"{CONFIG_CHANGES}/{child}"
            created = await self.session.created_ms(path)
            if created is not None and now_ms - created > EXPIRY_MS:
                await self.session.delete(path)
