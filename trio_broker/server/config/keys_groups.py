"""The consumer group protocol's part of the broker's key table (KIP-848): Kafka's
``group.coordinator.rebalance.protocols`` and ``group.consumer.*`` settings.

Owns: ``CONSUMER_GROUP_KEYS`` (spliced into the table by ``keys``) and ``ASSIGNOR_NAMES``,
Kafka's assignor class names by the short names the group coordinator uses. Kept apart
only so that each file of the key table stays readable; no checks across keys here
(``checks`` has them).
"""

from __future__ import annotations

from .configdef import ConfigKey, ListOf, OneOf, define
from .syntax import INT, LIST, POSITIVE, STR

# Kafka 4's server-side assignors: group.consumer.assignors lists them by class name (its
# default) or by the short name a client asks for in group.remote.assignor.
ASSIGNOR_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
    "uniform": "uniform",
    "range": "range",
}

CONSUMER_GROUP_KEYS: list[ConfigKey] = [
    define(
        "group.coordinator.rebalance.protocols",
        LIST,
        ("classic", "consumer"),
        "The group protocols served: classic (JoinGroup/SyncGroup) and consumer (KIP-848's "
        "ConsumerGroupHeartbeat). Without consumer, a ConsumerGroupHeartbeat is answered "
        "UNSUPPORTED_VERSION, as Kafka does.",
        ListOf(("classic", "consumer"), non_empty=True),
    ),
    define(
        "group.consumer.heartbeat.interval.ms",
        INT,
        5000,
        "The heartbeat interval given to consumer-protocol members.",
        POSITIVE,
    ),
    define(
        "group.consumer.min.heartbeat.interval.ms",
        INT,
        5000,
        "Smallest group.consumer.heartbeat.interval.ms allowed.",
        POSITIVE,
    ),
    define(
        "group.consumer.max.heartbeat.interval.ms",
        INT,
        15000,
        "Largest group.consumer.heartbeat.interval.ms allowed.",
        POSITIVE,
    ),
    define(
        "group.consumer.session.timeout.ms",
        INT,
        45000,
        "A consumer-protocol member that sends no heartbeat for this long is removed from "
        "its group (its partitions go to the others).",
        POSITIVE,
    ),
    define(
        "group.consumer.min.session.timeout.ms",
        INT,
        45000,
        "Smallest group.consumer.session.timeout.ms allowed.",
        POSITIVE,
    ),
    define(
        "group.consumer.max.session.timeout.ms",
        INT,
        60000,
        "Largest group.consumer.session.timeout.ms allowed.",
        POSITIVE,
    ),
    define(
        "group.consumer.assignors",
        LIST,
        (
            "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        ),
        "The server-side assignors, by Kafka's class name or short name (uniform, range); "
        "the first is used when a member names none. No other assignor can be plugged in.",
        ListOf(tuple(ASSIGNOR_NAMES), non_empty=True),
    ),
    define(
        "group.consumer.max.size",
        INT,
        2147483647,
        "Most members in one consumer-protocol group (GROUP_MAX_SIZE_REACHED beyond).",
        POSITIVE,
    ),
    define(
        "group.consumer.migration.policy",
        STR,
        "bidirectional",
        "Whether a classic group with members (protocol type consumer) becomes a consumer "
        "group when its first consumer-protocol member joins (upgrade), and a consumer group "
        "whose last consumer-protocol member leaves becomes a classic group again while "
        "classic members remain (downgrade): bidirectional (both), upgrade, downgrade or "
        "disabled (neither). Empty groups are converted whatever the policy, as in Kafka.",
        OneOf(("bidirectional", "upgrade", "downgrade", "disabled"), case_sensitive=False),
    ),
]
