"""Client quotas in a ZooKeeper cluster: one set of quotas for every broker.

Owns: ``ZkClientQuotas``, what a ZooKeeper-era Kafka broker does with AlterClientQuotas
(``AdminZkClient.changeConfigs``) and its ``UserConfigHandler`` / ``ClientIdConfigHandler``:
each entity's quotas are keys of its config node, where ``kafka-configs.sh`` puts them:

- ``user``: ``/config/users/<user>`` (beside its SCRAM credentials: ``ZkScramCredentials``);
- ``client-id``: ``/config/clients/<client-id>``;
- ``user`` + ``client-id``: ``/config/users/<user>/clients/<client-id>``;
- the default entity of a type is named ``<default>``; other names are sanitized as
  Kafka's ``Sanitizer`` (URL-encoded).

A change is checked as on one broker, written to its node (other keys kept) and announced
(``users/<user>``, ``clients/<client-id>``, ``users/<user>/clients/<client-id>``), then
stored here; every broker follows the announcements and makes its store (``QuotaStore``,
what ``QuotaManager`` enforces) match the node. At start and after a new session every
node is read again and the store made to match ZooKeeper; a broker's quotas from before it
joined a cluster that has none yet are written there. A key this broker does not enforce
(SCRAM credentials; Kafka's ``controller_mutation_rate``) is left alone; a value it
refuses is logged with its node and left out.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Mapping
from typing import Protocol

import trio

from ...protocol.errors import ErrorCode
from ..quotas import QUOTA_KEYS, EntityType, QuotaEntity, QuotaError, QuotaStore, check_value
from .config_changes import ZkConfigChanges
from .session import ZkSession
from .user_credentials import CONFIG_USERS, sanitize

log = logging.getLogger("trio_broker.server")

CONFIG_CLIENTS = "/config/clients"
DEFAULT = "<default>"


class QuotaBroker(Protocol):
    quotas: QuotaStore


def _name(name: str | None) -> str:
    return DEFAULT if name is None else sanitize(name)


def _unname(node: str) -> str | None:
    return None if node == DEFAULT else urllib.parse.unquote(node)


def entity_path(entity: QuotaEntity) -> tuple[str, str]:
    """(kind, name) of the entity's announcement; its node is ``/config/<kind>/<name>``."""
    names = dict(entity.parts)
    if EntityType.USER not in names:
        return "clients", _name(names[EntityType.CLIENT_ID])
    user = _name(names[EntityType.USER])
    if EntityType.CLIENT_ID not in names:
        return "users", user
    return "users", f"{user}/clients/{_name(names[EntityType.CLIENT_ID])}"


def entity_of(kind: str, name: str) -> QuotaEntity:
    """The inverse of ``entity_path``."""
    first, _, client = name.partition("/clients/")
    if kind == "clients":
        return QuotaEntity.of({EntityType.CLIENT_ID: _unname(first)})
    if client:
        return QuotaEntity.of(
            {EntityType.USER: _unname(first), EntityType.CLIENT_ID: _unname(client)}
        )
    return QuotaEntity.of({EntityType.USER: _unname(first)})


def _number(text: str) -> float | int:
    number = float(text)
    return int(number) if number.is_integer() else number


class _Kind:
    """The follower of one kind of announcement (``users`` or ``clients``)."""

    def __init__(self, owner: ZkClientQuotas, kind: str) -> None:
        self.owner, self.kind = owner, kind

    async def read_all(self) -> None:
        if self.kind == "users":  # one full read for both kinds
            await self.owner.read_all()

    async def changed(self, name: str) -> None:
        await self.owner.adopt(entity_of(self.kind, name))


class ZkClientQuotas:
    def __init__(self, session: ZkSession, changes: ZkConfigChanges, broker: QuotaBroker) -> None:
        self.session = session
        self.changes = changes
        self.store = broker.quotas
        changes.follow(_Kind(self, "users"))
        changes.follow(_Kind(self, "clients"))

    async def alter(
        self,
        entity: dict[str, str | None],
        changes: dict[str, float | None],
        *,
        validate_only: bool,
    ) -> tuple[int, str | None]:
        """AlterClientQuotas for the cluster: checked here, written to the entity's node
        and announced, then stored here."""
        try:
            quota_entity = QuotaEntity.of(entity)
            clean = self.store.validate(quota_entity, changes)
        except QuotaError as exc:
            return ErrorCode.INVALID_REQUEST, str(exc)
        if validate_only:
            return ErrorCode.NONE, None
        configs = await self._read(quota_entity) or {}
        for key, value in clean.items():
            if value is None:
                configs.pop(key, None)
            else:
                configs[key] = str(value)
        await self._write(quota_entity, configs)
        await trio.to_thread.run_sync(self.store.alter, quota_entity, clean)
        log.info("quotas of %s now %s (in ZooKeeper)", quota_entity, self._quotas_in(configs))
        return ErrorCode.NONE, None

    def _path(self, entity: QuotaEntity) -> str:
        kind, name = entity_path(entity)
        return f"/config/{kind}/{name}"

    async def _read(self, entity: QuotaEntity) -> dict[str, str] | None:
        return await self.changes.read(*entity_path(entity))

    async def _write(self, entity: QuotaEntity, configs: Mapping[str, str]) -> None:
        await self.changes.publish(*entity_path(entity), configs)

    def _quotas_in(self, configs: Mapping[str, str]) -> dict[str, float | int]:
        return {k: _number(v) for k, v in configs.items() if k in QUOTA_KEYS}

    # ------------------------------------------------------------ following

    async def _entities(self) -> list[QuotaEntity]:
        """Every entity with a node in ZooKeeper."""
        found: list[QuotaEntity] = []
        for user in await self.session.children(CONFIG_USERS):
            found.append(entity_of("users", user))
            for client in await self.session.children(f"{CONFIG_USERS}/{user}/clients"):
                found.append(entity_of("users", f"{user}/clients/{client}"))
        for client in await self.session.children(CONFIG_CLIENTS):
            found.append(entity_of("clients", client))
        return found

    async def read_all(self) -> None:
        in_zk = await self._entities()
        local = self.store.entries()
        has_quotas = False
        for entity in in_zk:
            configs = await self._read(entity) or {}
            has_quotas |= any(k in QUOTA_KEYS for k in configs)
        if not has_quotas and local:  # quotas from before ZooKeeper had any: kept
            for entity, values in local:
                configs = await self._read(entity) or {}
                configs.update({k: str(v) for k, v in values.items()})
                await self._write(entity, configs)
            return
        for entity in set(in_zk) | {e for e, _ in local}:
            await self.adopt(entity)

    async def adopt(self, entity: QuotaEntity) -> None:
        """Make this broker's quotas of ``entity`` what ZooKeeper has."""
        configs = await self._read(entity) or {}
        wanted: dict[str, float | int] = {}
        for key, text in configs.items():
            if key not in QUOTA_KEYS:
                continue  # SCRAM credentials, or a quota key this broker does not know
            try:
                wanted[key] = check_value(key, _number(text))
            except (QuotaError, ValueError) as exc:
                log.error("%s: quota %s=%r not applied: %s", self._path(entity), key, text, exc)
        have = dict(self.store.get(entity) or {})
        if wanted == have:
            return
        changes: dict[str, object] = {k: wanted.get(k) for k in set(have) | set(wanted)}
        await trio.to_thread.run_sync(self.store.alter, entity, changes)
        log.info("quotas of %s from ZooKeeper: %s", entity, wanted)
