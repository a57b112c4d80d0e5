"""The log cleaner's part of the broker's key table: Kafka's ``log.cleaner.*`` settings.

Owns: ``CLEANER_KEYS``, which ``keys`` splices into the table in documentation
order. Kept apart only so that each file of the key table stays readable.
"""

from __future__ import annotations

from .configdef import LONG_MAX, ConfigKey, Range, define
from .syntax import BOOL, DOUBLE, INT, LONG, NON_NEGATIVE, POOL_SIZE, POSITIVE, RATIO

CLEANER_KEYS: list[ConfigKey] = [
    define(
        "log.cleaner.delete.retention.ms",
        LONG,
        86400000,
        "How long tombstones stay in compacted topics after the cleaner first keeps them "
        "(topic: delete.retention.ms; KIP-534's delete horizon).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.cleaner.enable",
        BOOL,
        True,
        "Whether the log cleaner runs (compacted topics grow unbounded without it).",
    ),
    define(
        "log.cleaner.threads",
        INT,
        1,
        "Threads cleaning compacted logs, each on one partition at a time.",
        POOL_SIZE,
        dynamic=True,
    ),
    define(
        "log.cleaner.backoff.ms",
        LONG,
        15000,
        "How long the cleaner sleeps when no log needs cleaning.",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.cleaner.dedupe.buffer.size",
        LONG,
        134217728,
        "Memory for the cleaners' key-to-offset maps, shared by the threads (24 bytes a "
        "key, as Kafka counts); a pass stops mapping where its share is full.",
        Range(1024 * 1024),
        dynamic=True,
    ),
    define(
        "log.cleaner.min.cleanable.ratio",
        DOUBLE,
        0.5,
        "Dirty share of a log's cleanable bytes that makes it due for cleaning "
        "(topic: min.cleanable.dirty.ratio).",
        RATIO,
        dynamic=True,
    ),
    define(
        "log.cleaner.min.compaction.lag.ms",
        LONG,
        0,
        "Least age of a record before it may be compacted (topic: min.compaction.lag.ms).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.cleaner.max.compaction.lag.ms",
        LONG,
        LONG_MAX,
        "Most time a record stays uncompacted; a dirty part older than this is cleaned "
        "whatever the ratio (topic: max.compaction.lag.ms).",
        POSITIVE,
        dynamic=True,
    ),
]
