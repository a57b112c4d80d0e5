"""Client quotas: what is stored, checked and persisted (``QuotaManager`` enforces them).

Owns: ``QuotaEntity`` (Kafka's client quota entity: entity types ``user`` and
``client-id`` mapped to a name, ``None`` naming the default entity), the quota keys with
Kafka's rules (``QUOTA_KEYS``: ``producer_byte_rate`` and ``consumer_byte_rate`` are whole
bytes per second, ``request_percentage`` a percentage of one handler's time; all > 0),
``QuotaError``, and ``QuotaStore``, persisted as ``quotas.json`` in the first log dir
(written to a temporary file, fsynced and renamed, so a crash leaves the old or the new
file whole). Entities are client-id, user and user+client-id (``SUPPORTED_ENTITIES``).
Blocking file I/O: the broker calls ``load``, ``alter`` and ``delete`` from a worker
thread; readers get immutable copies and never wait.
Must not: enforce anything (``manager`` reads this store).
"""

from __future__ import annotations

import enum
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..datadir import JsonDocument

__all__ = [
    "QUOTA_KEYS",
    "SUPPORTED_ENTITIES",
    "EntityType",
    "QuotaEntity",
    "QuotaError",
    "QuotaKey",
    "QuotaStore",
]

_LONG_MAX = 2**63 - 1


class EntityType(enum.StrEnum):
    """Kafka's client quota entity types, in their canonical order."""

    USER = "user"
    CLIENT_ID = "client-id"


_ORDER = {EntityType.USER: 0, EntityType.CLIENT_ID: 1}


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """Whom a quota applies to: entity type -> name, ``None`` naming the default.

    ``QuotaEntity.client(None)`` is the default client-id quota (Kafka's
    ``client-id=<default>``); ``QuotaEntity.of({"user": "alice", "client-id": "app"})``
    a user+client-id one.
    """

    parts: tuple[tuple[EntityType, str | None], ...]

    @classmethod
    def of(cls, mapping: Mapping[str, str | None]) -> QuotaEntity:
        if not mapping:
            raise QuotaError(None, None, "a quota entity names at least one entity type")
        parts: list[tuple[EntityType, str | None]] = []
        for kind, name in mapping.items():
            try:
                entity_type = EntityType(kind)
            except ValueError:
                known = ", ".join(EntityType)
                raise QuotaError(None, None, f"unknown entity type {kind!r} ({known})") from None
            if name is not None and (not isinstance(name, str) or not name):
                raise QuotaError(None, None, f"{kind} must be a non-empty string or null")
            parts.append((entity_type, name))
        parts.sort(key=lambda p: _ORDER[p[0]])
        return cls(tuple(parts))

    @classmethod
    def client(cls, client_id: str | None) -> QuotaEntity:
        return cls.of({EntityType.CLIENT_ID: client_id})

    @property
    def types(self) -> tuple[EntityType, ...]:
        return tuple(kind for kind, _ in self.parts)

    def as_dict(self) -> dict[str, str | None]:
        return {str(kind): name for kind, name in self.parts}

    def __str__(self) -> str:
        return ",".join(f"{kind}={'<default>' if n is None else n}" for kind, n in self.parts)

    def sort_key(self) -> tuple[Any, ...]:
        return tuple((_ORDER[k], n is not None, n or "") for k, n in self.parts)


SUPPORTED_ENTITIES: frozenset[tuple[EntityType, ...]] = frozenset(
    {(EntityType.CLIENT_ID,), (EntityType.USER,), (EntityType.USER, EntityType.CLIENT_ID)}
)
"""The entity shapes Kafka's client quotas have: client-id, user, and user+client-id."""


@dataclass(frozen=True, slots=True)
class QuotaKey:
    name: str
    whole: bool  # Kafka types it LONG: a whole number
    doc: str


QUOTA_KEYS: Mapping[str, QuotaKey] = MappingProxyType(
    {
        k.name: k
        for k in (
            QuotaKey("producer_byte_rate", True, "Produce bytes per second."),
            QuotaKey("consumer_byte_rate", True, "Fetch bytes per second."),
            QuotaKey(
                "request_percentage",
                False,
                "Percentage of one request handler's time, per quota window.",
            ),
        )
    }
)


class QuotaError(ValueError):
    """A quota entity, key or value that cannot be accepted (``key``/``value`` name it)."""

    def __init__(self, key: str | None, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        super().__init__(reason if key is None else f"{key}={value}: {reason}")


def check_value(key: str, value: object) -> float | int:
    """``value`` as stored for ``key`` (an int for whole keys); ``QuotaError`` if refused."""
    spec = QUOTA_KEYS.get(key)
    if spec is None:
        known = ", ".join(QUOTA_KEYS)
        raise QuotaError(key, value, f"unknown quota key (expected one of {known})")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuotaError(key, value, "expected a positive number")
    if not math.isfinite(value) or value <= 0:
        raise QuotaError(key, value, "expected a positive number")
    if spec.whole:
        if isinstance(value, float) and not value.is_integer():
            raise QuotaError(key, value, "expected a whole number of bytes per second")
        if value > _LONG_MAX:
            raise QuotaError(key, value, f"expected at most {_LONG_MAX}")
        return int(value)
    return float(value)


Values = Mapping[str, float | int]


class QuotaStore:
    """The stored quotas, by entity; mutations persist before they become visible."""

    FILE = "quotas.json"

    def __init__(self, directory: Path) -> None:
        self.document = JsonDocument(directory / self.FILE, what="quota")
        self._quotas: Mapping[QuotaEntity, Values] = MappingProxyType({})
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ reading

    def get(self, entity: QuotaEntity) -> Values | None:
        return self._quotas.get(entity)

    @property
    def snapshot(self) -> Mapping[QuotaEntity, Values]:
        """Every stored quota as one immutable mapping; a change replaces it with a new
        one, so ``is`` tells a reader (the quota manager's lookup cache) that it changed."""
        return self._quotas

    def entries(self) -> list[tuple[QuotaEntity, Values]]:
        """Every entity with its values, default entities first, then by name."""
        return sorted(self._quotas.items(), key=lambda item: item[0].sort_key())

    # ----------------------------------------------------------------- changing

    def check_entity(self, entity: QuotaEntity) -> None:
        if entity.types not in SUPPORTED_ENTITIES:
            raise QuotaError(None, None, f"quotas for {'+'.join(entity.types)} are not supported")

    def validate(self, entity: QuotaEntity, changes: Mapping[str, object]) -> dict[str, Any]:
        """The changes as they would be stored (``None`` = remove); ``QuotaError`` if not."""
        self.check_entity(entity)
        return {k: None if v is None else check_value(k, v) for k, v in changes.items()}

    def alter(self, entity: QuotaEntity, changes: Mapping[str, object]) -> Values:
        """Set (a number) or remove (``None``) values of ``entity``; return its values.

        An entity left with no values is removed. Blocking: call from a worker thread.
        """
        clean = self.validate(entity, changes)
        with self._lock:
            values = dict(self._quotas.get(entity, {}))
            for key, value in clean.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            quotas = dict(self._quotas)
            if values:
                quotas[entity] = MappingProxyType(values)
            else:
                quotas.pop(entity, None)
            self._save(quotas)
            self._quotas = MappingProxyType(quotas)
            return quotas.get(entity, MappingProxyType({}))

    def delete(self, entity: QuotaEntity) -> Values | None:
        """Remove every value of ``entity``; what it had, or ``None`` if nothing."""
        with self._lock:
            if entity not in self._quotas:
                return None
            quotas = dict(self._quotas)
            removed = quotas.pop(entity)
            self._save(quotas)
            self._quotas = MappingProxyType(quotas)
            return removed

    # -------------------------------------------------------------- persistence

    def load(self) -> None:
        """Read ``quotas.json`` if there is one; a malformed file is a start-up error."""
        data = self.document.read()
        if data is None:
            return
        quotas: dict[QuotaEntity, Values] = {}
        with self.document.parsing():
            try:
                for item in data["quotas"]:
                    entity = QuotaEntity.of(item["entity"])
                    values = {k: check_value(k, v) for k, v in item["values"].items()}
                    if values:
                        quotas[entity] = MappingProxyType(values)
            except QuotaError as exc:
                raise ValueError(str(exc)) from exc
        with self._lock:
            self._quotas = MappingProxyType(quotas)

    def _save(self, quotas: Mapping[QuotaEntity, Values]) -> None:
        data = {
            "quotas": [
                {"entity": entity.as_dict(), "values": dict(sorted(values.items()))}
                for entity, values in sorted(quotas.items(), key=lambda i: i[0].sort_key())
            ],
        }
        self.document.write(data)
