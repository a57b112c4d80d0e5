"""Run-time configuration changes: the one path every caller takes.

Owns: ``plan_broker_change`` (which dynamic broker keys may change, and the new config they
make), ``plan_topic_change`` (a topic's new overrides, checked), ``incremental`` (Kafka's
SET, DELETE, APPEND and SUBTRACT applied to current values) and ``ChangeRefused``, which
names the key, the value and the kind of refusal. A broker change is made at one of Kafka's
two levels: this broker's own, or the cluster-wide default's. The admin API (``PUT /v1/config``,
the pool resizes), AlterConfigs and IncrementalAlterConfigs all call these,
then ``Broker.update_config`` or ``TopicAdmin.set_configs``, so that a change means the
same whichever door it came in by, and is stored in the data dir the same way. Pure
functions; no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from .broker_config import BrokerConfig
from .configdef import ConfigError, ConfigType
from .keys import BROKER_CONFIG_DEF
from .names import known_key, listener_key
from .topic_config import TOPIC_CONFIG_DEF, validate_topic_configs


class Refusal(enum.Enum):
    UNKNOWN = "unknown-config"  # no such key
    STATIC = "static-config"  # a key that needs a restart
    INVALID = "invalid-config"  # a bad value, or an operation the key does not take
    REQUEST = "invalid-request"  # a malformed change (a key twice)


class ChangeRefused(ValueError):
    """A change refused as a whole; nothing was changed."""

    def __init__(
        self, kind: Refusal, message: str, *, key: str | None = None, value: str | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.key = key
        self.value = value


def plan_broker_change(
    current: BrokerConfig, settings: Mapping[str, str | None], *, cluster_default: bool = False
) -> BrokerConfig:
    """The config ``settings`` make of ``current`` at one level: this broker's own run-time
    changes, or with ``cluster_default`` the cluster-wide default's (Kafka's broker
    resource ``""``). A ``None`` value removes the level's change, so the level below
    counts again. Only dynamic keys may change."""
    for key, value in settings.items():
        try:
            definition = known_key(key, value)
        except ConfigError:
            raise ChangeRefused(
                Refusal.UNKNOWN, f"{key}: no such configuration key", key=key
            ) from None
        if not definition.dynamic:
            raise ChangeRefused(
                Refusal.STATIC,
                f"{key} cannot be changed at run time; set it in server.properties and restart",
                key=key,
            )
    try:
        return current.with_updates(settings, cluster_default=cluster_default)
    except ConfigError as exc:
        raise ChangeRefused(Refusal.INVALID, str(exc), key=exc.key, value=exc.value) from None


def plan_topic_change(overrides: Mapping[str, str]) -> dict[str, str]:
    """A topic's complete new overrides, checked (an empty value removes the override)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        validate_topic_configs(clean)
    except ConfigError as exc:
        raise ChangeRefused(Refusal.INVALID, str(exc), key=exc.key, value=exc.value) from None
    return clean


# IncrementalAlterConfigsRequest.config_operation
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _is_list(name: str, *, topic: bool) -> bool:
    key = TOPIC_CONFIG_DEF.get(name) if topic else BROKER_CONFIG_DEF.get(name) or listener_key(name)
    return key is not None and key.type is ConfigType.LIST


def incremental(
    current: Mapping[str, str],
    operations: list[tuple[str, int, str | None]],
    *,
    topic: bool,
    effective: Mapping[str, str | None],
) -> dict[str, str | None]:
    """The settings that (name, operation, value) triples make: ``current`` are the
    resource's own settings, ``effective`` its values wherever they come from (APPEND
    and SUBTRACT start from them, as Kafka's do). ``None`` removes a setting."""
    seen: set[str] = set()
    out: dict[str, str | None] = {}
    for name, op, value in operations:
        if name in seen:
            raise ChangeRefused(
                Refusal.REQUEST, f"{name}: given more than once in one resource", key=name
            )
        seen.add(name)
        if op == SET:
            out[name] = value
        elif op == DELETE:
            out[name] = None
        elif op in (APPEND, SUBTRACT):
            if not _is_list(name, topic=topic):
                verb = "append" if op == APPEND else "subtract"
                raise ChangeRefused(
                    Refusal.INVALID,
                    f"{name}: a value {verb} is allowed only for list-valued keys",
                    key=name,
                )
            base = current.get(name, effective.get(name)) or ""
            items = [x.strip() for x in base.split(",") if x.strip()]
            given = [x.strip() for x in (value or "").split(",") if x.strip()]
            if op == APPEND:
                items += [x for x in given if x not in items]
            else:
                items = [x for x in items if x not in given]
            out[name] = ",".join(items)
        else:
            raise ChangeRefused(Refusal.REQUEST, f"{name}: unknown config operation {op}", key=name)
    return out
