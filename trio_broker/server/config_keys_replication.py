"""Replication's part of the broker's key table: Kafka's ``replica.*`` settings and
``broker.rack``.

Owns: ``REPLICATION_KEYS``, which ``config_keys`` splices into the table. Kept apart only so
that each file of the key table stays readable. They matter in a ZooKeeper cluster
(``zookeeper.connect``), where partitions have followers; a broker on its own ignores them.
"""

from __future__ import annotations

from .config_syntax import INT, LONG, NON_NEGATIVE, POSITIVE, STR
from .configdef import ConfigKey, define

REPLICATION_KEYS: list[ConfigKey] = [
    define(
        "broker.rack",
        STR,
        None,
        "The rack (or availability zone) of this broker, in its ZooKeeper registration. "
        "When every live broker has one, new topics' and partitions' replicas are spread "
        "over as many racks as they can (Kafka's rack-aware placement); when only some "
        "have one, placement is refused.",
    ),
    define(
        "replica.lag.time.max.ms",
        LONG,
        30000,
        "A follower that has not caught up with the leader's log end for this long leaves "
        "the ISR (and comes back once it has caught up).",
        POSITIVE,
    ),
    define(
        "replica.fetch.wait.max.ms",
        INT,
        500,
        "How long a follower's fetch waits at the leader for new data.",
        NON_NEGATIVE,
    ),
    define(
        "replica.fetch.min.bytes",
        INT,
        1,
        "Bytes a follower's fetch waits for at the leader (up to replica.fetch.wait.max.ms).",
        POSITIVE,
    ),
    define(
        "replica.fetch.max.bytes",
        INT,
        1048576,
        "Bytes a follower fetches per partition (the first batch comes whole even if larger).",
        POSITIVE,
    ),
    define(
        "replica.fetch.response.max.bytes",
        INT,
        10485760,
        "Bytes a follower fetches in one response across partitions.",
        POSITIVE,
    ),
    define(
        "replica.fetch.backoff.ms",
        INT,
        1000,
        "Wait of a follower after a fetch failed (leader unreachable, an error answered).",
        NON_NEGATIVE,
    ),
    define(
        "replica.socket.timeout.ms",
        INT,
        30000,
        "How long a follower waits for a fetch's answer before it reconnects.",
        POSITIVE,
    ),
    define(
        "replica.high.watermark.checkpoint.interval.ms",
        LONG,
        5000,
        "How often the high watermarks of replicated partitions are written to disk.",
        POSITIVE,
    ),
]
