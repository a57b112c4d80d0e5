"""The transaction coordinator's part of the broker's key table: Kafka's
``transaction.*`` and ``transactional.id.*`` settings, and ``request.timeout.ms``
(what its WriteTxnMarkers requests to the partition leaders wait).

Owns: ``TRANSACTION_KEYS``, which ``keys`` splices into the table in documentation
order. Kept apart only so that each file of the key table stays readable.
"""

from __future__ import annotations

from .configdef import ConfigKey, define
from .syntax import INT, LONG, POSITIVE

TRANSACTION_KEYS: list[ConfigKey] = [
    define(
        "transactional.id.expiration.ms",
        INT,
        604800000,
        "Idle time after which a transactional id is forgotten: a transaction coordinator "
        "removes an id whose last transaction ended longer ago than this.",
        POSITIVE,
    ),
    define(
        "transaction.max.timeout.ms",
        INT,
        900000,
        "Largest transaction.timeout.ms a producer may ask for; a larger one is refused "
        "with INVALID_TRANSACTION_TIMEOUT.",
        POSITIVE,
    ),
    define(
        "transaction.state.log.num.partitions",
        INT,
        1,
        "Partitions of __transaction_state, fixed when it is created (on the first "
        "transactional producer's FindCoordinator). Kafka: 50; as offsets.topic.num."
        "partitions here, 1: more partitions spread coordinators over a cluster's brokers, "
        "on one broker they only mean more files to open at start.",
        POSITIVE,
    ),
    define(
        "transaction.state.log.replication.factor",
        INT,
        3,
        "Replicas of each __transaction_state partition in a ZooKeeper cluster; until that "
        "many brokers are live, FindCoordinator answers COORDINATOR_NOT_AVAILABLE (a broker "
        "on its own holds the one replica).",
        POSITIVE,
    ),
    define(
        "transaction.state.log.min.isr",
        INT,
        2,
        "min.insync.replicas of __transaction_state (in a ZooKeeper cluster).",
        POSITIVE,
    ),
    define(
        "transaction.state.log.segment.bytes",
        INT,
        104857600,
        "segment.bytes of __transaction_state.",
        POSITIVE,
    ),
    define(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        10000,
        "How often the coordinator looks for transactions past their timeout (and aborts "
        "them, fencing their producer's epoch).",
        POSITIVE,
    ),
    define(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        LONG,
        3600000,
        "How often the coordinator looks for transactional ids past "
        "transactional.id.expiration.ms.",
        POSITIVE,
    ),
    define(
        "request.timeout.ms",
        INT,
        30000,
        "How long the transaction coordinator waits for a partition leader's answer to "
        "WriteTxnMarkers (Kafka's broker key, which its TransactionMarkerChannelManager "
        "uses); past it, or once the controller has moved that partition's leadership, "
        "the markers are sent again to the partition's current leader.",
        POSITIVE,
    ),
]
