"""AlterConfigs and IncrementalAlterConfigs, on the broker's side: one resource at a time.

Owns: ``ConfigAdmin``, which turns a resource's requested changes into the one change path
(``server.config.changes``): a broker resource becomes ``Broker.update_config`` (stored in
the data dir, in force at once, as ``PUT /v1/config``; in a ZooKeeper cluster written to
ZooKeeper first, ``ZkBrokerConfigs``) at one of Kafka's two levels: this
broker's id names its own settings (DYNAMIC_BROKER_CONFIG), ``""`` the cluster-wide
default's (DYNAMIC_DEFAULT_BROKER_CONFIG, below this broker's own); any other name is
INVALID_REQUEST, as Kafka answers for a broker that is not the one asked. A topic becomes
``TopicAdmin.set_configs`` (stored in ``topics.json``, its logs reconfigured at once) or,
in a ZooKeeper cluster, ``ZkTopicConfigs.set_configs`` (every broker's).
AlterConfigs replaces the resource's whole set of run-time settings (for a broker: that
level's only), as Kafka's does; IncrementalAlterConfigs changes only the keys it names.
Refusals are ``ConfigChangeError`` with Kafka's error code. Also ``synonyms``, for
DescribeConfigs: every setting that could give a key its value, the one in force first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from ...apis.services import ConfigChangeError, broker_name_problem
from ...protocol.errors import ErrorCode
from .broker_config import BrokerConfig
from .changes import ChangeRefused, Refusal, incremental, plan_broker_change
from .configdef import ConfigSource, render
from .keys import BROKER_CONFIG_DEF, BROKER_SYNONYMS
from .names import listener_key
from .topic_config import TOPIC_BROKER_KEYS, TOPIC_CONFIG_DEF, effective_topic_config

TOPIC, BROKER = 2, 4

Operation = tuple[str, int, str | None]  # (key, IncrementalAlterConfigs operation, value)
# Makes a new config (``with_updates`` of the running one) the broker's; the keys changed.
UpdateConfig = Callable[[BrokerConfig, Mapping[str, str | None]], Awaitable[None]]


class TopicConfigs(Protocol):
    """Where topic configs live: ``TopicAdmin`` (one broker) or ``ZkTopicConfigs``."""

    def overrides(self, name: str) -> Mapping[str, str] | None: ...

    async def current_overrides(self, name: str) -> Mapping[str, str]: ...

    async def set_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool
    ) -> None: ...


def _error(exc: ChangeRefused) -> ConfigChangeError:
    code = ErrorCode.INVALID_REQUEST if exc.kind is Refusal.REQUEST else ErrorCode.INVALID_CONFIG
    return ConfigChangeError(code, exc.message)


class ConfigAdmin:
    def __init__(
        self,
        broker_id: int,
        config: Callable[[], BrokerConfig],
        update_config: UpdateConfig,
        topics: TopicConfigs,
        lock: AbstractAsyncContextManager[object],
    ) -> None:
        """``lock``: an event loop's lock (the broker's ``trio.Lock``; configuration
        itself imports no event loop)."""
        self.broker_id = broker_id
        self.config = config
        self.update_config = update_config
        self.topics = topics
        # Broker config changes run one at a time, each planned on the config the one
        # before it made: two at once (the advisor resizing a pool while an operator sets
        # a limit, or a change from ZooKeeper) would each start from the same config, the
        # second undo the first, and both write the stored file at once. Every door takes
        # it: these APIs, the admin API, and ``ZkBrokerConfigs`` following ZooKeeper.
        self.lock = lock

    def _broker_level(self, name: str) -> bool:
        """Whether broker resource ``name`` is the cluster-wide default (else: this broker)."""
        problem = broker_name_problem(name, self.broker_id, describe=False)
        if problem is not None:
            raise ConfigChangeError(ErrorCode.INVALID_REQUEST, problem)
        return name == ""

    async def _broker(
        self, settings: Mapping[str, str | None], validate_only: bool, cluster_default: bool
    ) -> None:
        try:
            new = plan_broker_change(self.config(), settings, cluster_default=cluster_default)
        except ChangeRefused as exc:
            raise _error(exc) from None
        if not validate_only:
            await self.update_config(new, settings)

    async def _topic(self, name: str, overrides: Mapping[str, str], validate_only: bool) -> None:
        try:
            await self.topics.set_configs(name, overrides, validate_only=validate_only)
        except ChangeRefused as exc:
            raise _error(exc) from None

    async def replace_configs(
        self,
        resource_type: int,
        name: str,
        configs: Mapping[str, str | None],
        *,
        validate_only: bool,
    ) -> None:
        """AlterConfigs: ``configs`` become the resource's whole set of settings."""
        if resource_type == BROKER:
            level = self._broker_level(name)
            async with self.lock:
                current = self.config().level_raw(cluster_default=level)
                dropped = {k: None for k in current if k not in configs}
                await self._broker({**dropped, **configs}, validate_only, level)
        elif resource_type == TOPIC:
            await self.topics.current_overrides(name)  # the topic exists
            clean = {k: v for k, v in configs.items() if v is not None}
            await self._topic(name, clean, validate_only)
        else:
            raise ConfigChangeError(
                ErrorCode.INVALID_REQUEST, f"resource type {resource_type} cannot be altered"
            )

    async def alter_configs_incrementally(
        self, resource_type: int, name: str, operations: Sequence[Operation], *, validate_only: bool
    ) -> None:
        """IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on the named keys."""
        try:
            if resource_type == BROKER:
                level = self._broker_level(name)
                async with self.lock:
                    config = self.config()
                    # APPEND and SUBTRACT start from the value below this level
                    below = config.with_dynamic({}, config.default_raw) if level else config
                    effective = {n: e.text for n, e in below.describe().items()}
                    changes = incremental(
                        config.level_raw(cluster_default=level),
                        list(operations),
                        topic=False,
                        effective=effective,
                    )
                    await self._broker(changes, validate_only, level)
            elif resource_type == TOPIC:
                current = await self.topics.current_overrides(name)
                effective = {
                    n: e.text for n, e in effective_topic_config(self.config(), current).items()
                }
                changes = incremental(current, list(operations), topic=True, effective=effective)
                merged = {**current, **changes}
                await self._topic(
                    name, {k: v for k, v in merged.items() if v is not None}, validate_only
                )
            else:
                raise ConfigChangeError(
                    ErrorCode.INVALID_REQUEST, f"resource type {resource_type} cannot be altered"
                )
        except ChangeRefused as exc:
            raise _error(exc) from None

    def synonyms(
        self, name: str, resource_type: int, resource_name: str
    ) -> list[tuple[str, str | None, int]]:
        """(name, value, source) of each setting behind ``name``, in Kafka's precedence: the
        topic's own, then this broker's run-time change, the cluster-wide default's, the
        static setting (each with the broker key's own synonyms, e.g.
        ``log.retention.hours``), the default. The cluster-wide default's resource (``""``)
        leaves out this broker's own changes, as Kafka's does."""
        out: list[tuple[str, str | None, int]] = []
        if resource_type == TOPIC:
            overrides = self.topics.overrides(resource_name) or {}
            topic_key = TOPIC_CONFIG_DEF.get(name)
            if name in overrides:
                hidden = topic_key is not None and topic_key.sensitive
                value = None if hidden else overrides[name]
                out.append((name, value, int(ConfigSource.TOPIC_CONFIG)))
            broker_name = TOPIC_BROKER_KEYS.get(name)
            if broker_name is None:
                return out
            name = broker_name
        key = BROKER_CONFIG_DEF.get(name) or listener_key(name)
        if key is None:
            return out
        config = self.config()
        names = BROKER_SYNONYMS.get(name, (name,))
        layers = [
            (config.dynamic_raw, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (config.default_raw, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (config.originals, ConfigSource.STATIC_BROKER_CONFIG),
        ]
        if resource_type == BROKER and resource_name == "":
            del layers[0]
        for settings, source in layers:
            for n in names:
                if n in settings:
                    out.append((n, None if key.sensitive else settings[n], int(source)))
        default = None if key.sensitive else render(key.default)
        out.append((name, default, int(ConfigSource.DEFAULT_CONFIG)))
        return out
