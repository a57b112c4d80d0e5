"""Replication's part of the broker's key table: Kafka's ``replica.*`` settings,
``broker.rack``, the replication throttles (KIP-73: ``*.replication.throttled.rate``,
``replication.quota.window.*``), controlled shutdown (``controlled.shutdown.*``) and
leader balancing (``auto.leader.rebalance.enable``, ``leader.imbalance.*``).

Owns: ``REPLICATION_KEYS``, which ``keys`` splices into the table. Kept apart only so
that each file of the key table stays readable. They matter in a ZooKeeper cluster
(``zookeeper.connect``), where partitions have followers; a broker on its own ignores them.
"""

from __future__ import annotations

from .configdef import LONG_MAX, ConfigKey, Range, define
from .syntax import BOOL, INT, LONG, NON_NEGATIVE, POSITIVE, STR

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
    define(
        "leader.replication.throttled.rate",
        LONG,
        LONG_MAX,
        "Bytes per second this broker sends, as leader, for the partitions its topics' "
        "leader.replication.throttled.replicas name, to followers out of the ISR (KIP-73; "
        "the default: no throttle).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "follower.replication.throttled.rate",
        LONG,
        LONG_MAX,
        "Bytes per second this broker fetches, as a follower out of the ISR, for the "
        "partitions its topics' follower.replication.throttled.replicas name (KIP-73; the "
        "default: no throttle).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "replication.quota.window.num",
        INT,
        11,
        "Samples the replication throttles' byte rates are measured over.",
        POSITIVE,
    ),
    define(
        "replication.quota.window.size.seconds",
        INT,
        1,
        "Length of one sample of the replication throttles' byte rates.",
        POSITIVE,
    ),
    define(
        "offsets.topic.replication.factor",
        INT,
        3,
        "Replicas of each __consumer_offsets partition in a ZooKeeper cluster; until that "
        "many brokers are live, FindCoordinator answers COORDINATOR_NOT_AVAILABLE (a "
        "broker on its own holds the one replica).",
        POSITIVE,
    ),
    define(
        "offsets.commit.timeout.ms",
        INT,
        5000,
        "How long an offset commit waits for the ISR of its __consumer_offsets partition "
        "(in a ZooKeeper cluster) before it fails with COORDINATOR_NOT_AVAILABLE.",
        POSITIVE,
    ),
    define(
        "controlled.shutdown.enable",
        BOOL,
        True,
        "Whether a stopping broker first asks the controller to move its leaderships to "
        "other in-sync replicas (ControlledShutdown).",
    ),
    define(
        "controlled.shutdown.max.retries",
        INT,
        3,
        "Attempts of a controlled shutdown (the controller unreachable, or partitions left "
        "that it could not move) before the broker stops anyway.",
        NON_NEGATIVE,
    ),
    define(
        "controlled.shutdown.retry.backoff.ms",
        LONG,
        5000,
        "Wait between two attempts of a controlled shutdown.",
        NON_NEGATIVE,
    ),
    define(
        "auto.leader.rebalance.enable",
        BOOL,
        True,
        "Whether the controller gives leaderships back to the preferred replicas (the first "
        "of each assignment) of a broker whose imbalance is above "
        "leader.imbalance.per.broker.percentage.",
    ),
    define(
        "leader.imbalance.check.interval.seconds",
        LONG,
        300,
        "How often the controller checks the leader imbalance.",
        POSITIVE,
    ),
    define(
        "leader.imbalance.per.broker.percentage",
        INT,
        10,
        "Share of a broker's preferred partitions led by another broker above which the "
        "controller runs preferred elections for them.",
        Range(0, 100),
    ),
]
