"""Topic-level configuration, under Kafka's topic config names (LogConfig's).

Owns: the topic definition table (``TOPIC_CONFIG_DEF``) with, for each key, the broker key
it defaults from (``TOPIC_BROKER_KEYS``: ``retention.ms`` <- ``log.retention.ms``, ...;
the replication throttles' ``*.replication.throttled.replicas`` have none: empty lists);
``validate_topic_configs``, which CreateTopics and AlterConfigs use to check a topic's
overrides (its ``ConfigError`` message is what they send back with INVALID_CONFIG); and
``effective_topic_config``, which DescribeConfigs uses: every key's value with its source
(TOPIC_CONFIG, or the broker's DYNAMIC_BROKER_CONFIG / STATIC_BROKER_CONFIG /
DEFAULT_CONFIG) and flags; ``log_config_for``, the ``LogConfig`` a topic's logs run with.
Types and validators are those of the broker key, so a value valid for one is valid for
the other. Pure functions; no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ...log.config import LogConfig
from .broker_config import BROKER_CONFIG_DEF, BrokerConfig
from .configdef import (
    HIDDEN,
    Check,
    ConfigEntry,
    ConfigError,
    ConfigKey,
    ConfigSource,
    ConfigType,
    looks_sensitive,
)

__all__ = [
    "TOPIC_BROKER_KEYS",
    "TOPIC_CONFIG_DEF",
    "effective_topic_config",
    "validate_topic_configs",
]

_TOPIC_KEYS: tuple[tuple[str, str, str], ...] = (
    # (topic key, broker key it defaults from, doc)
    ("retention.ms", "log.retention.ms", "Age at which old segments are deleted; -1: never."),
    (
        "retention.bytes",
        "log.retention.bytes",
        "Partition size beyond which old segments are deleted; -1: no limit.",
    ),
    ("segment.bytes", "log.segment.bytes", "Segment size before a new one is rolled."),
    ("segment.ms", "log.roll.ms", "Segment age before a new one is rolled."),
    ("segment.index.bytes", "log.index.size.max.bytes", "Largest offset index file."),
    ("index.interval.bytes", "log.index.interval.bytes", "Bytes between offset index entries."),
    ("flush.messages", "log.flush.interval.messages", "Records appended before an fsync."),
    ("flush.ms", "log.flush.interval.ms", "Most time appended data waits for an fsync."),
    ("max.message.bytes", "message.max.bytes", "Largest record batch accepted."),
    (
        "message.timestamp.type",
        "log.message.timestamp.type",
        "Record timestamps: CreateTime (the producer's) or LogAppendTime (the broker's).",
    ),
    (
        "cleanup.policy",
        "log.cleanup.policy",
        "What happens to old segments: delete (retention), compact (the log cleaner keeps "
        "the latest record per key) or both.",
    ),
    (
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
        "Dirty share of the cleanable bytes that makes the log due for cleaning.",
    ),
    (
        "min.compaction.lag.ms",
        "log.cleaner.min.compaction.lag.ms",
        "Least age of a record before it may be compacted.",
    ),
    (
        "max.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "Most time a record stays uncompacted; an older dirty part is cleaned at once.",
    ),
    (
        "min.insync.replicas",
        "min.insync.replicas",
        "In-sync replicas an acks=all produce needs.",
    ),
    (
        "compression.type",
        "compression.type",
        "Codec of stored batches: producer (kept as sent), uncompressed, gzip, snappy, "
        "lz4 or zstd (other codecs are recompressed).",
    ),
    (
        "delete.retention.ms",
        "log.cleaner.delete.retention.ms",
        "How long tombstones stay in a compacted topic after the cleaner first keeps them.",
    ),
    (
        "message.format.version",
        "log.message.format.version",
        "Deprecated and ignored since Kafka 3.0, as there: every batch is v2.",
    ),
    ("compression.gzip.level", "compression.gzip.level", "gzip level when recompressing."),
    ("compression.lz4.level", "compression.lz4.level", "LZ4 level when recompressing."),
    ("compression.zstd.level", "compression.zstd.level", "zstd level when recompressing."),
    (
        "file.delete.delay.ms",
        "log.segment.delete.delay.ms",
        "Wait before deleting a file removed from the log.",
    ),
    (
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
        "Whether an out-of-sync replica may become leader.",
    ),
)


# The replication throttles' topic keys (KIP-73), one per side of replication.
LEADER, FOLLOWER = "leader", "follower"
THROTTLED_REPLICAS = {
    LEADER: "leader.replication.throttled.replicas",
    FOLLOWER: "follower.replication.throttled.replicas",
}
_ENTRY = re.compile(r"[0-9]+:[0-9]+")
_EXPECTED = (
    "must be the literal '*' or a list of replicas in the following format: "
    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
)


def throttled_replicas_problem(items: Sequence[str]) -> str | None:
    """Why a throttled-replicas list is refused (Kafka's words, its
    ThrottledReplicaListValidator: ``""``, ``"*"`` or ``partition:broker,...``), or None."""
    if "".join(items) == "*" or all(_ENTRY.fullmatch(item) for item in items):
        return None
    return _EXPECTED


def _topic_key(name: str, broker_key: str, doc: str) -> ConfigKey:
    broker = BROKER_CONFIG_DEF[broker_key]
    return ConfigKey(name, broker.type, None, doc, broker.validator, dynamic=True)


def _throttled_replicas(side: str) -> ConfigKey:
    doc = (
        f"Replicas throttled on the {side}'s side of replication while out of the ISR "
        f"(KIP-73, at {side}.replication.throttled.rate): '*' for all, or "
        "partition:broker,... (each broker takes the entries naming it); empty: none."
    )
    check = Check("'*' or a list of partition:broker", throttled_replicas_problem)
    return ConfigKey(THROTTLED_REPLICAS[side], ConfigType.LIST, None, doc, check, dynamic=True)


# Topic keys with no broker key: their default is their own (an empty list).
_TOPIC_ONLY_KEYS = tuple(_throttled_replicas(side) for side in (LEADER, FOLLOWER))

TOPIC_CONFIG_DEF: Mapping[str, ConfigKey] = MappingProxyType(
    {
        **{name: _topic_key(name, broker_key, doc) for name, broker_key, doc in _TOPIC_KEYS},
        **{key.name: key for key in _TOPIC_ONLY_KEYS},
    }
)
"""Every topic key, by name. Defaults are ``None``: a topic's default is a broker value,
or for a key no broker key backs (the throttled-replicas lists), the empty list."""

TOPIC_BROKER_KEYS: Mapping[str, str] = MappingProxyType(
    {name: broker_key for name, broker_key, _ in _TOPIC_KEYS}
)
"""For each topic key, the broker key that supplies its default."""

_TOPIC_KEY_OF_BROKER_KEY = {b: t for t, b in TOPIC_BROKER_KEYS.items() if b != t}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Check a topic's config overrides and return them typed.

    A ``None`` value (or an empty one) stays ``None``: no override, the broker default
    applies. Raises ``ConfigError`` naming the key and the value for an unknown key or a
    bad value.
    """
    result: dict[str, Any] = {}
    for name, raw in configs.items():
        key = TOPIC_CONFIG_DEF.get(name)
        if key is None:
            raise _unknown(name, raw)
        result[name] = None if raw is None else key.parse(raw)
    return result


def effective_topic_config(
    broker_cfg: BrokerConfig, overrides: Mapping[str, str | None]
) -> dict[str, ConfigEntry]:
    """Every topic key's effective value, where it came from, and its flags.

    ``overrides`` are the topic's own settings (as text, as CreateTopics/AlterConfigs gave
    them); any other key takes the broker's value for its broker key, with the broker's
    source for it. Raises ``ConfigError`` if an override is invalid.
    """
    typed = validate_topic_configs(overrides)
    entries: dict[str, ConfigEntry] = {}
    for name, key in TOPIC_CONFIG_DEF.items():
        value = typed.get(name)
        if value is not None:
            source = ConfigSource.TOPIC_CONFIG
        elif name not in TOPIC_BROKER_KEYS:
            value, source = (), ConfigSource.DEFAULT_CONFIG
        else:
            broker_key = TOPIC_BROKER_KEYS[name]
            value = broker_cfg[broker_key]
            source = broker_cfg.source(broker_key)
        entries[name] = ConfigEntry(
            name=name,
            value=value,
            source=source,
            is_sensitive=key.sensitive,
            read_only=False,
        )
    return entries


def _unknown(name: str, raw: str | None) -> ConfigError:
    shown = HIDDEN if raw is not None and looks_sensitive(name) else raw
    reason = "unknown topic configuration key"
    if name in _TOPIC_KEY_OF_BROKER_KEY:
        reason += f" (the topic-level name of {name} is {_TOPIC_KEY_OF_BROKER_KEY[name]})"
    elif close := difflib.get_close_matches(name, list(TOPIC_CONFIG_DEF), n=1):
        reason += f" (did you mean {close[0]}?)"
    return ConfigError(name, shown, reason)


def config_type_name(name: str, resource_type: int) -> str:
    """A config key's type as DescribeConfigs names it (topic keys for resource type 2,
    broker keys otherwise); "" for a key this broker does not know."""
    key = (TOPIC_CONFIG_DEF if resource_type == 2 else BROKER_CONFIG_DEF).get(name)
    return key.type.value if key is not None else ""


def config_doc(name: str, resource_type: int) -> str | None:
    """A config key's documentation for DescribeConfigs, or None for an unknown key."""
    key = (TOPIC_CONFIG_DEF if resource_type == 2 else BROKER_CONFIG_DEF).get(name)
    return key.doc if key is not None else None


NO_FLUSH_MS = 2**63 - 1  # flush.ms at Long.MAX: never flush by time


def log_config_for(config: BrokerConfig, overrides: Mapping[str, str | None]) -> LogConfig:
    """A topic's LogConfig: its own overrides over the broker's log.* defaults."""
    e = {k: v.value for k, v in effective_topic_config(config, overrides).items()}
    flush_ms = e["flush.ms"]
    return LogConfig(
        segment_bytes=e["segment.bytes"],
        segment_ms=e["segment.ms"],
        retention_bytes=e["retention.bytes"],
        retention_ms=e["retention.ms"],
        index_interval_bytes=e["index.interval.bytes"],
        segment_index_bytes=e["segment.index.bytes"],
        flush_interval_messages=e["flush.messages"],
        flush_interval_ms=None if flush_ms >= NO_FLUSH_MS else flush_ms,
        max_message_bytes=e["max.message.bytes"],
        message_timestamp_type=e["message.timestamp.type"],
        compression_type=e["compression.type"],
        compression_level=_level(e),
        cleanup_policy=tuple(e["cleanup.policy"]),
        min_cleanable_dirty_ratio=float(e["min.cleanable.dirty.ratio"]),
        min_compaction_lag_ms=e["min.compaction.lag.ms"],
        max_compaction_lag_ms=e["max.compaction.lag.ms"],
        delete_retention_ms=e["delete.retention.ms"],
    )


def _level(e: Mapping[str, Any]) -> int | None:
    """The compression level for the topic's codec (KIP-390), None for the default."""
    codec = e["compression.type"]
    level = e.get(f"compression.{codec}.level")
    return None if level is None or level == -1 else int(level)
