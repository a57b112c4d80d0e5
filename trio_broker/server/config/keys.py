"""The broker's configuration keys: one ``ConfigKey`` per key, under Kafka's names.

Owns: the key table (``BROKER_CONFIG_DEF``: type, default, validator, dynamic flag and doc
of every key, in documentation order), ``DYNAMIC_KEYS``, ``BROKER_SYNONYMS`` (keys whose
value may come from others). Which names a key may have (per-listener keys, the error
for an unknown name) is ``names``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .configdef import (
    INT_MAX,
    LONG_MAX,
    Check,
    ConfigKey,
    Range,
    define,
)
from .keys_cleaner import CLEANER_KEYS
from .keys_groups import CONSUMER_GROUP_KEYS
from .keys_replication import REPLICATION_KEYS
from .keys_security import SECURITY_KEYS
from .keys_storage import STORAGE_KEYS
from .keys_telemetry import TELEMETRY_KEYS
from .keys_transactions import TRANSACTION_KEYS
from .syntax import (
    BOOL,
    CLEANUP_POLICIES,
    COMPRESSION,
    GZIP_LEVEL,
    INT,
    LIST,
    LISTENERS,
    LONG,
    LZ4_LEVEL,
    NON_NEGATIVE,
    OS_DEFAULT_OR_POSITIVE,
    PASSWORD,
    POOL_SIZE,
    POSITIVE,
    STR,
    TIMESTAMP_TYPES,
    UNLIMITED_OR_POSITIVE,
    ZSTD_LEVEL,
    cluster_id,
    each,
    non_empty_distinct,
    parse_admin_listener,
    parse_ip_overrides,
    parse_protocol_entry,
    parse_zookeeper_connect,
    whole,
)

_KEYS = [
    # ---- identity
    define("broker.id", INT, 0, "This broker's id, the node id clients see.", NON_NEGATIVE),
    define(
        "node.id",
        INT,
        None,
        "KRaft's name for broker.id; when both are set they must be equal.",
        NON_NEGATIVE,
    ),
    define(
        "cluster.id",
        STR,
        None,
        "The cluster id clients see; unset: generated on first start and persisted.",
        Check("letters, digits, '-' and '_'", cluster_id),
    ),
    # ---- ZooKeeper (a replicated cluster; unset: one broker on its own)
    define(
        "zookeeper.connect",
        STR,
        None,
        "The ZooKeeper servers of the cluster, host:port[,host:port...][/chroot]; unset: "
        "this broker is a cluster of its own and needs no ZooKeeper.",
        Check("host:port[,host:port...][/chroot]", whole(parse_zookeeper_connect)),
    ),
    define(
        "zookeeper.session.timeout.ms",
        INT,
        18000,
        "How long ZooKeeper keeps the broker's session (and its registration) without "
        "hearing from it; past it the broker is fenced and registers again.",
        POSITIVE,
    ),
    define(
        "zookeeper.connection.timeout.ms",
        INT,
        None,
        "How long start-up waits for a ZooKeeper session (unset: the session timeout).",
        POSITIVE,
    ),
    # ---- listeners and sockets
    define(
        "listeners",
        LIST,
        ("PLAINTEXT://127.0.0.1:9092",),
        "Where to listen, NAME://host:port; empty host: all interfaces; port 0: any.",
        LISTENERS,
    ),
    define(
        "advertised.listeners",
        LIST,
        None,
        "Addresses given to clients, by listener name; unset: those of listeners.",
        LISTENERS,
    ),
    define(
        "listener.security.protocol.map",
        LIST,
        (
            "PLAINTEXT:PLAINTEXT",
            "SSL:SSL",
            "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "SASL_SSL:SASL_SSL",
            "CONTROLLER:PLAINTEXT",
        ),
        "Listener name to security protocol, NAME:PROTOCOL pairs.",
        Check("a comma-separated list of NAME:PROTOCOL", each(parse_protocol_entry)),
    ),
    define(
        "control.plane.listener.name",
        STR,
        None,
        "The listener kept for controller traffic (not advertised to clients).",
    ),
    define(
        "num.network.threads",
        INT,
        3,
        "Processors per listener, each owning its connections' network work (framing, "
        "parsing, response writes); tasks of the one event loop: concurrency, not CPU.",
        POOL_SIZE,
        dynamic=True,
    ),
    define(
        "background.threads",
        INT,
        10,
        "Worker threads the scheduled log jobs (time-based flush, retention and producer-id "
        "expiry) may use at once; there are two such jobs, so more than 2 changes nothing.",
        POOL_SIZE,
        dynamic=True,
    ),
    define(
        "num.io.threads",
        INT,
        8,
        "Worker threads running storage work (appends, fsyncs, reads, index lookups); "
        "the request handler tasks are twice as many.",
        POOL_SIZE,
        dynamic=True,
    ),
    define(
        "num.recovery.threads.per.data.dir",
        INT,
        1,
        "Threads per log dir that load its partitions at start-up and close them at shutdown.",
        POOL_SIZE,
    ),
    *STORAGE_KEYS,
    define(
        "queued.max.requests",
        INT,
        500,
        "Requests queued before reading from the network pauses.",
        POSITIVE,
    ),
    define(
        "queued.max.request.bytes",
        LONG,
        -1,
        "Bytes of queued requests before reading pauses; <= 0: no limit.",
    ),
    define(
        "socket.request.max.bytes",
        INT,
        104857600,
        "Largest request accepted, in bytes.",
        POSITIVE,
    ),
    define(
        "socket.send.buffer.bytes",
        INT,
        # Not Kafka's 102400, as socket.receive.buffer.bytes: until it was applied every
        # broker ran with the OS's autotuned buffer, and a fixed one is not measured.
        -1,
        "SO_SNDBUF of accepted client sockets (set on the listening sockets, which they "
        "inherit; Linux doubles it and caps it at net.core.wmem_max); -1: the OS default "
        "(autotuned).",
        OS_DEFAULT_OR_POSITIVE,
    ),
    define(
        "socket.receive.buffer.bytes",
        INT,
        # Not Kafka's 102400: a fixed 100 KiB buffer cost 11% of produce throughput and
        # 23% more broker CPU per MB than the OS's autotuning (one connection, ~1 MB
        # Produce requests, 8 alternating rounds); 4 MiB (with net.core.rmem_max at
        # least that) gave +3-12% and -6-12% CPU per MB; 208 KiB, stock Linux's
        # rmem_max cap, -4% and +14%.
        -1,
        "SO_RCVBUF of accepted client sockets (set on the listening sockets, which "
        "they inherit; Linux doubles it and caps it at net.core.rmem_max); "
        "-1: the OS default (autotuned).",
        OS_DEFAULT_OR_POSITIVE,
    ),
    define(
        "connections.max.idle.ms",
        LONG,
        600000,
        "Close connections idle for longer than this.",
        POSITIVE,
    ),
    define(
        "request.read.timeout.ms",
        LONG,
        30000,
        "trio-broker extension (Kafka has no such key): once a request's first byte has "
        "come, the whole request must arrive within this time or the connection is closed "
        "(a client trickling bytes never idles); 0: no bound.",
        NON_NEGATIVE,
    ),
    define(
        "max.connections",
        INT,
        INT_MAX,
        "Most client connections at once, all listeners together.",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "max.connections.per.ip",
        INT,
        INT_MAX,
        "Most connections at once from one IP address.",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "max.connections.per.ip.overrides",
        STR,
        "",
        "Per-address exceptions to max.connections.per.ip, host:count pairs.",
        Check("a comma-separated list of host:count", whole(parse_ip_overrides)),
        dynamic=True,
    ),
    define(
        "max.connection.creation.rate",
        INT,
        INT_MAX,
        "Most new connections per second.",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "connection.failed.authentication.delay.ms",
        INT,
        100,
        "Delay before closing a connection whose authentication failed.",
        NON_NEGATIVE,
    ),
    define(
        "connections.max.reauth.ms",
        LONG,
        0,
        "Most a SASL session lives before re-authentication; 0: forever.",
        NON_NEGATIVE,
    ),
    define(
        "shutdown.timeout.ms",
        LONG,
        10000,
        "How long a graceful shutdown may take before connections are cut.",
        NON_NEGATIVE,
    ),
    # ---- log storage
    define(
        "log.dirs",
        LIST,
        ("data/kafka-logs",),
        "Directories holding partition data; relative to the working directory.",
        Check("a comma-separated list of directories", non_empty_distinct("log directory")),
    ),
    define("log.dir", STR, None, "The log directory, used when log.dirs is not set."),
    define(
        "auto.create.topics.enable",
        BOOL,
        True,
        "Create a topic on first Metadata/produce for it.",
    ),
    define("delete.topic.enable", BOOL, True, "Whether DeleteTopics deletes."),
    define("num.partitions", INT, 1, "Partitions of an auto-created topic.", POSITIVE),
    define(
        "default.replication.factor",
        INT,
        1,
        "Replication factor of an auto-created topic.",
        Range(1, 32767),
    ),
    define(
        "message.max.bytes",
        INT,
        1048588,
        "Largest record batch accepted (topic: max.message.bytes).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.segment.bytes",
        INT,
        1073741824,
        "Segment size before rolling a new one (topic: segment.bytes).",
        Range(14),
        dynamic=True,
    ),
    define(
        "log.roll.ms",
        LONG,
        None,
        "Segment age before rolling (topic: segment.ms); unset: log.roll.hours.",
        POSITIVE,
        dynamic=True,
    ),
    define("log.roll.hours", INT, 168, "Segment age before rolling, in hours.", POSITIVE),
    define(
        "log.retention.bytes",
        LONG,
        -1,
        "Partition size beyond which old segments go (topic: retention.bytes); -1: none.",
        Range(-1),
        dynamic=True,
    ),
    define(
        "log.retention.ms",
        LONG,
        None,
        "Age at which segments go (topic: retention.ms); -1: forever. Beats minutes/hours.",
        UNLIMITED_OR_POSITIVE,
        dynamic=True,
    ),
    define(
        "log.retention.minutes",
        INT,
        None,
        "Retention in minutes, used when log.retention.ms is not set.",
        UNLIMITED_OR_POSITIVE,
    ),
    define(
        "log.retention.hours",
        INT,
        168,
        "Retention in hours, used when neither ms nor minutes is set.",
        UNLIMITED_OR_POSITIVE,
    ),
    define(
        "log.retention.check.interval.ms",
        LONG,
        300000,
        "How often retention is enforced.",
        POSITIVE,
    ),
    define(
        "log.index.interval.bytes",
        INT,
        4096,
        "Bytes between offset index entries (topic: index.interval.bytes).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.index.size.max.bytes",
        INT,
        10485760,
        "Largest offset index file (topic: segment.index.bytes).",
        Range(4),
        dynamic=True,
    ),
    define(
        "log.flush.interval.messages",
        LONG,
        LONG_MAX,
        "Records appended before an fsync (topic: flush.messages).",
        POSITIVE,
        dynamic=True,
    ),
    define(
        "log.flush.interval.ms",
        LONG,
        None,
        "Most time data waits for fsync (topic: flush.ms); unset: the scheduler interval.",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "log.flush.scheduler.interval.ms",
        LONG,
        LONG_MAX,
        "How often the flusher checks whether a log needs an fsync.",
        NON_NEGATIVE,
    ),
    define(
        "log.message.timestamp.type",
        STR,
        "CreateTime",
        "Record timestamps: the producer's (CreateTime) or the broker's (LogAppendTime).",
        TIMESTAMP_TYPES,
        dynamic=True,
    ),
    define(
        "log.cleanup.policy",
        LIST,
        ("delete",),
        "What happens to old segments (topic: cleanup.policy): delete (retention), compact "
        "(the log cleaner keeps the latest record per key) or both.",
        CLEANUP_POLICIES,
        dynamic=True,
    ),
    define(
        "log.segment.delete.delay.ms",
        LONG,
        60000,
        "Wait before deleting a file removed from the log (topic: file.delete.delay.ms).",
        NON_NEGATIVE,
        dynamic=True,
    ),
    define(
        "min.insync.replicas",
        INT,
        1,
        "In-sync replicas an acks=all produce needs (topic: min.insync.replicas).",
        POSITIVE,
        dynamic=True,
    ),
    *CLEANER_KEYS,
    *REPLICATION_KEYS,
    define(
        "log.message.format.version",
        STR,
        "3.0-IV1",
        "Deprecated and ignored since Kafka 3.0, as there: every batch is v2.",
        dynamic=True,
    ),
    define(
        "max.incremental.fetch.session.cache.slots",
        INT,
        1000,
        "Fetch sessions (KIP-227) kept at once; 0: every fetch is a full one.",
        NON_NEGATIVE,
    ),
    define(
        "max.request.partition.size.limit",
        INT,
        2000,
        "The maximum number of partitions can be served in one request (DescribeTopicPartitions).",
        POSITIVE,
    ),
    define(
        "compression.type",
        STR,
        "producer",
        "Codec of stored batches: producer (kept as sent), uncompressed, gzip, snappy, lz4 "
        "or zstd; a batch sent with another codec is recompressed on an io thread.",
        COMPRESSION,
        dynamic=True,
    ),
    *(
        define(f"compression.{codec}.level", INT, default, doc, validator, dynamic=True)
        for codec, default, validator, doc in (
            ("gzip", -1, GZIP_LEVEL, "gzip level of recompressed batches (-1: zlib's 6)."),
            ("lz4", 9, LZ4_LEVEL, "LZ4 level of recompressed batches (1-17)."),
            ("zstd", 3, ZSTD_LEVEL, "zstd level of recompressed batches (negative: faster)."),
        )
    ),
    define(
        "unclean.leader.election.enable",
        BOOL,
        False,
        "Whether an out-of-sync replica may become leader.",
        dynamic=True,
    ),
    # ---- groups, offsets, transactions
    define(
        "offsets.retention.minutes",
        INT,
        10080,
        "How long committed offsets of an empty group are kept.",
        POSITIVE,
    ),
    define(
        "offsets.retention.check.interval.ms",
        LONG,
        600000,
        "How often expired committed offsets are looked for.",
        POSITIVE,
    ),
    define(
        "offsets.topic.num.partitions",
        INT,
        1,
        "Partitions of __consumer_offsets, fixed when it is created (Kafka: 50; on one "
        "broker more partitions only mean more files).",
        POSITIVE,
    ),
    define(
        "offset.metadata.max.bytes",
        INT,
        4096,
        "Longest metadata string kept with a committed offset.",
        POSITIVE,
    ),
    define(
        "group.initial.rebalance.delay.ms",
        INT,
        3000,
        "Wait for more members before a new group's first rebalance.",
        NON_NEGATIVE,
    ),
    define(
        "group.min.session.timeout.ms",
        INT,
        6000,
        "Smallest session timeout a member may ask for.",
        POSITIVE,
    ),
    define(
        "group.max.session.timeout.ms",
        INT,
        1800000,
        "Largest session timeout a member may ask for.",
        POSITIVE,
    ),
    define("group.max.size", INT, INT_MAX, "Most members in one group.", POSITIVE),
    *CONSUMER_GROUP_KEYS,
    *TRANSACTION_KEYS,
    define(
        "producer.id.expiration.ms",
        INT,
        86400000,
        "Idle time after which a producer id's state is forgotten.",
        POSITIVE,
    ),
    # ---- quotas
    define("quota.window.num", INT, 11, "Samples kept for quota rates.", POSITIVE),
    define("quota.window.size.seconds", INT, 1, "Length of one quota sample.", POSITIVE),
    *SECURITY_KEYS,
    *TELEMETRY_KEYS,
    # ---- admin API, dashboard, metrics
    define(
        "admin.listeners",
        LIST,
        ("http://127.0.0.1:9644",),
        "Where the HTTP admin API listens, http://host:port; empty: no admin API.",
        Check("a comma-separated list of http://host:port", each(parse_admin_listener)),
    ),
    define("admin.token", PASSWORD, None, "Bearer token the admin API requires; unset: none."),
    define(
        "dashboard.data.dir",
        STR,
        "data/dashboard",
        "Directory of the dashboard's data; relative to the working directory.",
        Check("a directory", lambda v: None if v else "expected a directory"),
    ),
    define("metrics.enabled", BOOL, True, "Whether metrics are collected."),
    define("metrics.window.seconds", INT, 60, "Window of the metric rates.", POSITIVE),
    define(
        "metrics.partition.prometheus.enable",
        BOOL,
        True,
        "Whether /metrics has the per-partition series (labels topic, partition).",
        dynamic=True,
    ),
    # ---- testing
    # Fault injection for test suites (/v1/faults, trio_broker.testing); off: the request
    # path has no fault hook at all and /v1/faults answers 403.
    define("testing.faults.enable", BOOL, False, "Fault injection (/v1/faults) for tests."),
]

BROKER_CONFIG_DEF: Mapping[str, ConfigKey] = MappingProxyType({k.name: k for k in _KEYS})
"""Every broker key, by name, in documentation order."""

DYNAMIC_KEYS: frozenset[str] = frozenset(k.name for k in _KEYS if k.dynamic)
"""The keys ``BrokerConfig.with_updates`` may change at run time."""

BROKER_SYNONYMS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "broker.id": ("broker.id", "node.id"),
        "node.id": ("node.id", "broker.id"),
        "log.dirs": ("log.dirs", "log.dir"),
        "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
        "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    }
)
"""For a key whose value may come from others, all the keys it is resolved from."""
