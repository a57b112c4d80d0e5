"""The broker's configuration, under Kafka's own property names.

Owns: the broker definition table (``BROKER_CONFIG_DEF``: one ``ConfigKey`` per key with
type, default, validator, dynamic flag and doc), loading (``load_config``: a
``server.properties`` file plus ``--override key=value`` entries, which win), Kafka's
precedence rules between synonyms (``log.retention.ms`` > ``.minutes`` > ``.hours``,
``log.roll.ms`` > ``.hours``, ``log.dirs`` > ``log.dir``, ``node.id`` = ``broker.id``),
the checks that span several keys (listeners against the security protocol map, the
control-plane listener, distinct names and ports, ...), and ``BrokerConfig``: the
validated, immutable result, with typed access (``cfg["num.io.threads"]``), convenience
views (``listeners``, ``log_dirs``, ``admin_endpoint``, ...), masked display and
``with_updates`` for the admin API's run-time changes of dynamic keys.

Relative paths (``log.dirs``, ``dashboard.data.dir``) are kept as written: they are
relative to the broker's working directory. No Trio, no sockets; the only I/O is reading
the properties file in ``load_config``.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .configdef import (
    HIDDEN,
    INT_MAX,
    LONG_MAX,
    Check,
    ConfigEntry,
    ConfigError,
    ConfigKey,
    ConfigSource,
    ConfigType,
    ListOf,
    OneOf,
    Password,
    Range,
    looks_sensitive,
    render,
)
from .properties import parse_properties

__all__ = [
    "BROKER_CONFIG_DEF",
    "BROKER_SYNONYMS",
    "DYNAMIC_KEYS",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ListenerConfig",
    "Password",
    "SecurityProtocol",
    "load_config",
    "parse_listener",
]


class SecurityProtocol(enum.StrEnum):
    """The security protocol a listener speaks."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One listener: its (upper-case) name, where it binds or is reached, its protocol.

    ``host`` is empty for "all interfaces" and has no brackets for IPv6 (``::1``).
    ``port`` 0 asks the OS for a free port.
    """

    name: str
    host: str
    port: int
    security_protocol: SecurityProtocol

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


# --------------------------------------------------------------------------- value syntax

_LISTENER = re.compile(
    r"(?P<name>[A-Za-z0-9_-]+)://"
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)\]|(?P<host>[A-Za-z0-9_.-]*))"
    r":(?P<port>[0-9]+)"
)
_ADMIN_LISTENER = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)\]|(?P<host>[A-Za-z0-9_.-]*))"
    r":(?P<port>[0-9]+)/?"
)
_LISTENER_NAME = re.compile(r"[A-Za-z0-9_-]+")
_CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]+")
_LISTENER_SYNTAX = "NAME://host:port (e.g. PLAINTEXT://127.0.0.1:9092, [::1] for IPv6)"


def parse_listener(text: str) -> tuple[str, str, int]:
    """Split ``NAME://host:port`` into (upper-case name, host, port); ValueError if bad."""
    match = _LISTENER.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not {_LISTENER_SYNTAX}")
    port = _port(match["port"], text)
    host = match["ipv6"] if match["ipv6"] is not None else match["host"]
    return match["name"].upper(), host, port


def _parse_admin_listener(text: str) -> tuple[str, int]:
    match = _ADMIN_LISTENER.fullmatch(text.strip())
    if match is None or match["scheme"].lower() != "http":
        raise ValueError(f"{text!r} is not http://host:port (e.g. http://127.0.0.1:9644)")
    host = match["ipv6"] if match["ipv6"] is not None else match["host"]
    return host, _port(match["port"], text)


def _port(digits: str, text: str) -> int:
    port = int(digits)
    if port > 65535:
        raise ValueError(f"{text!r}: port {port} is not between 0 and 65535")
    return port


def _parse_protocol_entry(text: str) -> tuple[str, SecurityProtocol]:
    name, sep, protocol = text.partition(":")
    name, protocol = name.strip(), protocol.strip()
    if not sep or not _LISTENER_NAME.fullmatch(name):
        raise ValueError(f"{text!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
    try:
        return name.upper(), SecurityProtocol(protocol.upper())
    except ValueError:
        known = ", ".join(SecurityProtocol)
        raise ValueError(f"{text!r}: unknown security protocol (expected {known})") from None


def _parse_ip_overrides(text: str) -> dict[str, int]:
    result: dict[str, int] = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        host, count = host.strip(), count.strip()
        if not sep or not host or not count.isdigit():
            raise ValueError(f"{item!r} is not host:count")
        result[host] = int(count)
    return result


def _parse_super_users(text: str) -> tuple[str, ...]:
    users = tuple(u.strip() for u in text.split(";") if u.strip())
    for user in users:
        kind, sep, name = user.partition(":")
        if not sep or not kind.strip() or not name.strip():
            raise ValueError(f"{user!r} is not Type:name (e.g. User:alice)")
    return users


AUTHORIZER_NAMES = (
    "acl",
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
)
"""Values of ``authorizer.class.name`` that turn ACL checks on (Kafka's two ACL
authorizers and a short name; they all mean this broker's one ACL authorizer)."""


def _authorizer_name(value: Any) -> str | None:
    if not value or value.strip() in AUTHORIZER_NAMES:
        return None
    return f"{value!r} is not an authorizer this broker has ({', '.join(AUTHORIZER_NAMES)})"


def _each(parse: Callable[[str], object]) -> Callable[[Any], str | None]:
    """A check that ``parse`` accepts every item of a list, reporting the first refusal."""

    def test(items: Any) -> str | None:
        for item in items:
            try:
                parse(item)
            except ValueError as exc:
                return str(exc)
        return None

    return test


def _whole(parse: Callable[[str], object]) -> Callable[[Any], str | None]:
    def test(value: Any) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return test


def _non_empty_distinct(what: str) -> Callable[[Any], str | None]:
    def test(items: Any) -> str | None:
        if not items:
            return f"at least one {what} is required"
        duplicates = sorted({i for i in items if list(items).count(i) > 1})
        if duplicates:
            return f"{what} listed more than once: {', '.join(duplicates)}"
        return None

    return test


def _cluster_id(value: Any) -> str | None:
    if _CLUSTER_ID.fullmatch(value):
        return None
    return "expected letters, digits, '-' and '_' only (e.g. a base64url Kafka cluster id)"


# --------------------------------------------------------------------------- the table

_INT, _LONG, _BOOL = ConfigType.INT, ConfigType.LONG, ConfigType.BOOLEAN
_STR, _LIST, _PASSWORD = ConfigType.STRING, ConfigType.LIST, ConfigType.PASSWORD

_POSITIVE = Range(1)
_NON_NEGATIVE = Range(0)
_UNLIMITED_OR_POSITIVE = Range(1, allow=(-1,))
_OS_DEFAULT_OR_POSITIVE = Range(1, allow=(-1,))

_LISTENERS = Check(f"a comma-separated list of {_LISTENER_SYNTAX}", _each(parse_listener))
_TIMESTAMP_TYPES = OneOf(("CreateTime", "LogAppendTime"))
_CLEANUP_POLICIES = ListOf(
    ("delete",),
    unsupported=(("compact", "compact is not supported (log compaction is not implemented)"),),
    non_empty=True,
)
_COMPRESSION = OneOf(
    ("producer",),
    unsupported=tuple(
        (codec, f"{codec} is not supported: the broker keeps the producer's compression")
        for codec in ("uncompressed", "gzip", "snappy", "lz4", "zstd")
    ),
)
_STORE_TYPES = OneOf(
    ("PEM",),
    unsupported=tuple(
        (kind, f"{kind} stores are not supported; convert them to PEM")
        for kind in ("JKS", "PKCS12")
    ),
)
_SASL_MECHANISMS = ListOf(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"))


def _k(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Any = None,
    *,
    dynamic: bool = False,
) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, dynamic)


_KEYS = [
    # ---- identity
    _k("broker.id", _INT, 0, "This broker's id, the node id clients see.", _NON_NEGATIVE),
    _k(
        "node.id",
        _INT,
        None,
        "KRaft's name for broker.id; when both are set they must be equal.",
        _NON_NEGATIVE,
    ),
    _k(
        "cluster.id",
        _STR,
        None,
        "The cluster id clients see; unset: generated on first start and persisted.",
        Check("letters, digits, '-' and '_'", _cluster_id),
    ),
    # ---- listeners and sockets
    _k(
        "listeners",
        _LIST,
        ("PLAINTEXT://127.0.0.1:9092",),
        "Where to listen, NAME://host:port; empty host: all interfaces; port 0: any.",
        _LISTENERS,
    ),
    _k(
        "advertised.listeners",
        _LIST,
        None,
        "Addresses given to clients, by listener name; unset: those of listeners.",
        _LISTENERS,
    ),
    _k(
        "listener.security.protocol.map",
        _LIST,
        (
            "PLAINTEXT:PLAINTEXT",
            "SSL:SSL",
            "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "SASL_SSL:SASL_SSL",
            "CONTROLLER:PLAINTEXT",
        ),
        "Listener name to security protocol, NAME:PROTOCOL pairs.",
        Check("a comma-separated list of NAME:PROTOCOL", _each(_parse_protocol_entry)),
    ),
    _k(
        "control.plane.listener.name",
        _STR,
        None,
        "The listener kept for controller traffic (not advertised to clients).",
    ),
    _k(
        "num.network.threads",
        _INT,
        3,
        "Tasks receiving requests and sending responses.",
        _POSITIVE,
        dynamic=True,
    ),
    _k("num.io.threads", _INT, 8, "Tasks handling requests.", _POSITIVE, dynamic=True),
    _k(
        "queued.max.requests",
        _INT,
        500,
        "Requests queued before reading from the network pauses.",
        _POSITIVE,
    ),
    _k(
        "queued.max.request.bytes",
        _LONG,
        -1,
        "Bytes of queued requests before reading pauses; <= 0: no limit.",
    ),
    _k(
        "socket.request.max.bytes",
        _INT,
        104857600,
        "Largest request accepted, in bytes.",
        _POSITIVE,
    ),
    _k(
        "socket.send.buffer.bytes",
        _INT,
        102400,
        "SO_SNDBUF of client sockets; -1: the OS default.",
        _OS_DEFAULT_OR_POSITIVE,
    ),
    _k(
        "socket.receive.buffer.bytes",
        _INT,
        102400,
        "SO_RCVBUF of client sockets; -1: the OS default.",
        _OS_DEFAULT_OR_POSITIVE,
    ),
    _k(
        "connections.max.idle.ms",
        _LONG,
        600000,
        "Close connections idle for longer than this.",
        _POSITIVE,
    ),
    _k(
        "request.read.timeout.ms",
        _LONG,
        30000,
        "trio-broker extension (Kafka has no such key): once a request's first byte has "
        "come, the whole request must arrive within this time or the connection is closed "
        "(a client trickling bytes never idles); 0: no bound.",
        _NON_NEGATIVE,
    ),
    _k(
        "max.connections",
        _INT,
        INT_MAX,
        "Most client connections at once, all listeners together.",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "max.connections.per.ip",
        _INT,
        INT_MAX,
        "Most connections at once from one IP address.",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "max.connections.per.ip.overrides",
        _STR,
        "",
        "Per-address exceptions to max.connections.per.ip, host:count pairs.",
        Check("a comma-separated list of host:count", _whole(_parse_ip_overrides)),
        dynamic=True,
    ),
    _k(
        "max.connection.creation.rate",
        _INT,
        INT_MAX,
        "Most new connections per second.",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "connection.failed.authentication.delay.ms",
        _INT,
        100,
        "Delay before closing a connection whose authentication failed.",
        _NON_NEGATIVE,
    ),
    _k(
        "connections.max.reauth.ms",
        _LONG,
        0,
        "Most a SASL session lives before re-authentication; 0: forever.",
        _NON_NEGATIVE,
    ),
    _k(
        "shutdown.timeout.ms",
        _LONG,
        10000,
        "How long a graceful shutdown may take before connections are cut.",
        _NON_NEGATIVE,
    ),
    # ---- log storage
    _k(
        "log.dirs",
        _LIST,
        ("data/kafka-logs",),
        "Directories holding partition data; relative to the working directory.",
        Check("a comma-separated list of directories", _non_empty_distinct("log directory")),
    ),
    _k("log.dir", _STR, None, "The log directory, used when log.dirs is not set."),
    _k(
        "auto.create.topics.enable",
        _BOOL,
        True,
        "Create a topic on first Metadata/produce for it.",
    ),
    _k("delete.topic.enable", _BOOL, True, "Whether DeleteTopics deletes."),
    _k("num.partitions", _INT, 1, "Partitions of an auto-created topic.", _POSITIVE),
    _k(
        "default.replication.factor",
        _INT,
        1,
        "Replication factor of an auto-created topic.",
        Range(1, 32767),
    ),
    _k(
        "message.max.bytes",
        _INT,
        1048588,
        "Largest record batch accepted (topic: max.message.bytes).",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "log.segment.bytes",
        _INT,
        1073741824,
        "Segment size before rolling a new one (topic: segment.bytes).",
        Range(14),
        dynamic=True,
    ),
    _k(
        "log.roll.ms",
        _LONG,
        None,
        "Segment age before rolling (topic: segment.ms); unset: log.roll.hours.",
        _POSITIVE,
        dynamic=True,
    ),
    _k("log.roll.hours", _INT, 168, "Segment age before rolling, in hours.", _POSITIVE),
    _k(
        "log.retention.bytes",
        _LONG,
        -1,
        "Partition size beyond which old segments go (topic: retention.bytes); -1: none.",
        Range(-1),
        dynamic=True,
    ),
    _k(
        "log.retention.ms",
        _LONG,
        None,
        "Age at which segments go (topic: retention.ms); -1: forever. Beats minutes/hours.",
        _UNLIMITED_OR_POSITIVE,
        dynamic=True,
    ),
    _k(
        "log.retention.minutes",
        _INT,
        None,
        "Retention in minutes, used when log.retention.ms is not set.",
        _UNLIMITED_OR_POSITIVE,
    ),
    _k(
        "log.retention.hours",
        _INT,
        168,
        "Retention in hours, used when neither ms nor minutes is set.",
        _UNLIMITED_OR_POSITIVE,
    ),
    _k(
        "log.retention.check.interval.ms",
        _LONG,
        300000,
        "How often retention is enforced.",
        _POSITIVE,
    ),
    _k(
        "log.index.interval.bytes",
        _INT,
        4096,
        "Bytes between offset index entries (topic: index.interval.bytes).",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "log.index.size.max.bytes",
        _INT,
        10485760,
        "Largest offset index file (topic: segment.index.bytes).",
        Range(4),
        dynamic=True,
    ),
    _k(
        "log.flush.interval.messages",
        _LONG,
        LONG_MAX,
        "Records appended before an fsync (topic: flush.messages).",
        _POSITIVE,
        dynamic=True,
    ),
    _k(
        "log.flush.interval.ms",
        _LONG,
        None,
        "Most time data waits for fsync (topic: flush.ms); unset: the scheduler interval.",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "log.flush.scheduler.interval.ms",
        _LONG,
        LONG_MAX,
        "How often the flusher checks whether a log needs an fsync.",
        _NON_NEGATIVE,
    ),
    _k(
        "log.message.timestamp.type",
        _STR,
        "CreateTime",
        "Record timestamps: the producer's (CreateTime) or the broker's (LogAppendTime).",
        _TIMESTAMP_TYPES,
        dynamic=True,
    ),
    _k(
        "log.cleanup.policy",
        _LIST,
        ("delete",),
        "What happens to old segments (topic: cleanup.policy); only delete.",
        _CLEANUP_POLICIES,
        dynamic=True,
    ),
    _k(
        "log.segment.delete.delay.ms",
        _LONG,
        60000,
        "Wait before deleting a file removed from the log (topic: file.delete.delay.ms).",
        _NON_NEGATIVE,
        dynamic=True,
    ),
    _k(
        "min.insync.replicas",
        _INT,
        1,
        "In-sync replicas an acks=all produce needs (topic: min.insync.replicas).",
        _POSITIVE,
        dynamic=True,
    ),
    _k(
        "compression.type",
        _STR,
        "producer",
        "Compression of stored batches; only producer (kept as sent) is supported.",
        _COMPRESSION,
        dynamic=True,
    ),
    _k(
        "unclean.leader.election.enable",
        _BOOL,
        False,
        "Whether an out-of-sync replica may become leader.",
        dynamic=True,
    ),
    # ---- groups, offsets, transactions
    _k(
        "offsets.retention.minutes",
        _INT,
        10080,
        "How long committed offsets of an empty group are kept.",
        _POSITIVE,
    ),
    _k(
        "offsets.retention.check.interval.ms",
        _LONG,
        600000,
        "How often expired committed offsets are looked for.",
        _POSITIVE,
    ),
    _k(
        "offsets.topic.num.partitions",
        _INT,
        1,
        "Partitions of __consumer_offsets, fixed when it is created (Kafka: 50; on one "
        "broker more partitions only mean more files).",
        _POSITIVE,
    ),
    _k(
        "offset.metadata.max.bytes",
        _INT,
        4096,
        "Longest metadata string kept with a committed offset.",
        _POSITIVE,
    ),
    _k(
        "group.initial.rebalance.delay.ms",
        _INT,
        3000,
        "Wait for more members before a new group's first rebalance.",
        _NON_NEGATIVE,
    ),
    _k(
        "group.min.session.timeout.ms",
        _INT,
        6000,
        "Smallest session timeout a member may ask for.",
        _POSITIVE,
    ),
    _k(
        "group.max.session.timeout.ms",
        _INT,
        1800000,
        "Largest session timeout a member may ask for.",
        _POSITIVE,
    ),
    _k("group.max.size", _INT, INT_MAX, "Most members in one group.", _POSITIVE),
    _k(
        "transactional.id.expiration.ms",
        _INT,
        604800000,
        "Idle time after which a transactional id is forgotten.",
        _POSITIVE,
    ),
    _k(
        "producer.id.expiration.ms",
        _INT,
        86400000,
        "Idle time after which a producer id's state is forgotten.",
        _POSITIVE,
    ),
    # ---- quotas
    _k("quota.window.num", _INT, 11, "Samples kept for quota rates.", _POSITIVE),
    _k("quota.window.size.seconds", _INT, 1, "Length of one quota sample.", _POSITIVE),
    # ---- security
    _k(
        "sasl.enabled.mechanisms",
        _LIST,
        ("PLAIN",),
        "SASL mechanisms offered on SASL listeners.",
        _SASL_MECHANISMS,
    ),
    _k("ssl.keystore.type", _STR, "PEM", "Format of the key store (PEM only).", _STORE_TYPES),
    _k("ssl.keystore.location", _STR, None, "PEM file with the private key and certificates."),
    _k(
        "ssl.keystore.certificate.chain",
        _PASSWORD,
        None,
        "PEM certificate chain given inline instead of ssl.keystore.location.",
    ),
    _k(
        "ssl.keystore.key",
        _PASSWORD,
        None,
        "PEM private key given inline instead of ssl.keystore.location.",
    ),
    _k("ssl.key.password", _PASSWORD, None, "Password of an encrypted private key."),
    _k("ssl.truststore.type", _STR, "PEM", "Format of the trust store (PEM only).", _STORE_TYPES),
    _k("ssl.truststore.location", _STR, None, "PEM file of CA certificates to trust."),
    _k(
        "ssl.client.auth",
        _STR,
        "none",
        "Whether SSL clients must present a certificate.",
        OneOf(("required", "requested", "none")),
    ),
    _k(
        "authorizer.class.name",
        _STR,
        "",
        "The authorizer; empty: none (no request is checked). ACLs are enforced with acl, "
        "kafka.security.authorizer.AclAuthorizer or "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer (all the same one here).",
        Check(
            "empty, acl, kafka.security.authorizer.AclAuthorizer or "
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            _authorizer_name,
        ),
    ),
    _k(
        "super.users",
        _STR,
        None,
        "Principals allowed everything, ';'-separated (User:alice;User:bob).",
        Check("a ';'-separated list of Type:name", _whole(_parse_super_users)),
    ),
    _k(
        "allow.everyone.if.no.acl.found",
        _BOOL,
        False,
        "Allow access to a resource that has no ACL.",
    ),
    # ---- admin API, dashboard, metrics
    _k(
        "admin.listeners",
        _LIST,
        ("http://127.0.0.1:9644",),
        "Where the HTTP admin API listens, http://host:port; empty: no admin API.",
        Check("a comma-separated list of http://host:port", _each(_parse_admin_listener)),
    ),
    _k("admin.token", _PASSWORD, None, "Bearer token the admin API requires; unset: none."),
    _k(
        "dashboard.data.dir",
        _STR,
        "data/dashboard",
        "Directory of the dashboard's data; relative to the working directory.",
        Check("a directory", lambda v: None if v else "expected a directory"),
    ),
    _k("metrics.enabled", _BOOL, True, "Whether metrics are collected."),
    _k(
        "metrics.window.seconds",
        _INT,
        60,
        "Window over which metric rates are computed.",
        _POSITIVE,
    ),
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

_TLS = (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)
_SASL = (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
_MS_PER_MINUTE = 60_000
_MS_PER_HOUR = 3_600_000


# --------------------------------------------------------------------------- BrokerConfig


class BrokerConfig(Mapping[str, Any]):
    """A validated, immutable broker configuration.

    ``BrokerConfig(settings)`` takes the explicit settings as text (as from a properties
    file) and raises ``ConfigError`` for an unknown key, a bad value or keys that do not
    agree. ``cfg[key]`` is the typed value (int, float, bool, str, tuple of str for lists,
    ``Password``, or ``None`` when unset), with synonyms already resolved: e.g.
    ``cfg["log.retention.ms"]`` is the retention in ms whichever key set it.
    ``dynamic_settings`` are run-time changes (dynamic keys only) that sit on top of the
    static settings; use ``with_updates`` to make them.
    """

    __slots__ = (
        "_admin",
        "_advertised",
        "_dynamic",
        "_listeners",
        "_originals",
        "_protocols",
        "_values",
    )

    def __init__(
        self,
        settings: Mapping[str, str] | None = None,
        dynamic_settings: Mapping[str, str] | None = None,
    ) -> None:
        originals = dict(settings or {})
        dynamic = dict(dynamic_settings or {})
        for name, raw in dynamic.items():
            key = _known_key(name, raw)
            if not key.dynamic:
                raise _not_dynamic(key, raw)
        merged = {**originals, **dynamic}
        values: dict[str, Any] = {}
        for name, key in BROKER_CONFIG_DEF.items():
            values[name] = key.default
        for name, raw in merged.items():
            values[name] = _known_key(name, raw).parse(raw)
        _resolve_synonyms(values, merged)
        self._originals = MappingProxyType(originals)
        self._dynamic = MappingProxyType(dynamic)
        self._values = MappingProxyType(values)
        self._protocols, self._listeners, self._advertised, self._admin = _cross_check(values)

    # ---- Mapping: typed values by key
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"BrokerConfig({dict(self.originals)!r}, dynamic={dict(self.dynamic_settings)!r})"

    # ---- provenance and display
    @property
    def originals(self) -> Mapping[str, str]:
        """The static settings given explicitly (file and overrides), passwords masked."""
        return _masked(self._originals)

    @property
    def dynamic_settings(self) -> Mapping[str, str]:
        """Run-time changes made with ``with_updates``, passwords masked."""
        return _masked(self._dynamic)

    @property
    def dynamic_keys(self) -> frozenset[str]:
        return DYNAMIC_KEYS

    def effective(self) -> dict[str, str | None]:
        """Every key's effective value as text (``None``: unset), passwords ``[hidden]``."""
        return {name: render(self._values[name]) for name in BROKER_CONFIG_DEF}

    def source(self, name: str) -> ConfigSource:
        """Where ``name``'s value came from (a synonym setting it counts)."""
        if name not in BROKER_CONFIG_DEF:
            raise KeyError(name)
        synonyms = BROKER_SYNONYMS.get(name, (name,))
        if any(s in self._dynamic for s in synonyms):
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if any(s in self._originals for s in synonyms):
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def describe(self) -> dict[str, ConfigEntry]:
        """Every key as DescribeConfigs reports it for the broker resource."""
        return {
            name: ConfigEntry(
                name=name,
                value=self._values[name],
                source=self.source(name),
                is_sensitive=key.sensitive,
                read_only=not key.dynamic,
            )
            for name, key in BROKER_CONFIG_DEF.items()
        }

    def with_updates(self, settings: Mapping[str, str | None]) -> BrokerConfig:
        """A new config with run-time changes of dynamic keys (``None`` removes a change).

        Raises ``ConfigError`` naming the key for an unknown key, a key that is not
        dynamic, a bad value, or a result whose keys do not agree.
        """
        dynamic = dict(self._dynamic)
        for name, raw in settings.items():
            key = _known_key(name, raw)
            if not key.dynamic:
                raise _not_dynamic(key, raw)
            if raw is None:
                dynamic.pop(name, None)
            else:
                key.parse(raw)
                dynamic[name] = raw
        return BrokerConfig(self._originals, dynamic)

    # ---- convenience views
    @property
    def broker_id(self) -> int:
        return int(self._values["broker.id"])

    @property
    def cluster_id(self) -> str | None:
        return self._values["cluster.id"]

    @property
    def security_protocol_map(self) -> Mapping[str, SecurityProtocol]:
        return self._protocols

    @property
    def listeners(self) -> tuple[ListenerConfig, ...]:
        """The listeners to bind, in the order given."""
        return self._listeners

    @property
    def advertised_listeners(self) -> tuple[ListenerConfig, ...]:
        """What to tell clients: ``advertised.listeners`` if set, else ``listeners``.

        The control-plane listener is never among them (as Kafka leaves controller
        listeners out of what brokers advertise).
        """
        return self._advertised

    def advertised_listener(self, name: str) -> ListenerConfig | None:
        """The advertised address for listener ``name`` (Metadata answers per listener)."""
        name = name.upper()
        return next((lis for lis in self._advertised if lis.name == name), None)

    @property
    def control_plane_listener_name(self) -> str | None:
        name = self._values["control.plane.listener.name"]
        return None if name is None else name.upper()

    @property
    def control_plane_listener(self) -> ListenerConfig | None:
        name = self.control_plane_listener_name
        return next((lis for lis in self._listeners if lis.name == name), None)

    @property
    def log_dirs(self) -> list[Path]:
        """The log directories (relative ones are relative to the working directory)."""
        return [Path(d) for d in self._values["log.dirs"]]

    @property
    def dashboard_data_dir(self) -> Path:
        return Path(self._values["dashboard.data.dir"])

    @property
    def admin_endpoints(self) -> tuple[tuple[str, int], ...]:
        return self._admin

    @property
    def admin_endpoint(self) -> tuple[str, int] | None:
        """(host, port) of the first admin listener; ``None`` if admin.listeners is empty."""
        return self._admin[0] if self._admin else None

    def listener_setting(self, listener: str, key: str) -> Any:
        """``listener.name.<listener>.<key>`` if set, else None (see ``LISTENER_KEYS``)."""
        return self._values.get(f"listener.name.{listener.lower()}.{key}")

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return _parse_ip_overrides(self._values["max.connections.per.ip.overrides"])

    @property
    def authorization_enabled(self) -> bool:
        """Whether ``authorizer.class.name`` names the ACL authorizer (else: no checks)."""
        return bool((self._values["authorizer.class.name"] or "").strip())

    @property
    def super_users(self) -> tuple[str, ...]:
        users = self._values["super.users"]
        return () if users is None else _parse_super_users(users)


def load_config(path: Path | str | None, overrides: Sequence[str] = ()) -> BrokerConfig:
    """Read a ``server.properties`` file (or none) and apply ``key=value`` overrides.

    Overrides win over the file, as ``kafka-server-start.sh --override`` does. Raises
    ``ConfigError`` for an unreadable file, a malformed override, an unknown key, a bad
    value, or keys that do not agree.
    """
    settings: dict[str, str] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(None, None, f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(None, None, f"{path}: not UTF-8 text ({exc.reason})") from None
        settings.update(parse_properties(text, str(path)))
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(None, None, f"override {item!r}: expected key=value")
        settings[name.strip()] = value
    return BrokerConfig(settings)


# --------------------------------------------------------------------------- internals


# Keys a listener may set for itself, as ``listener.name.<listener>.<key>`` (Kafka's
# per-listener overrides); the listener part is lower case, as Kafka writes it.
LISTENER_KEYS = frozenset({"max.connections", "max.connection.creation.rate"})
_LISTENER_PREFIX = re.compile(r"listener\.name\.([a-z0-9_]+)\.(.+)")


def _known_key(name: str, raw: str | None) -> ConfigKey:
    key = BROKER_CONFIG_DEF.get(name)
    if key is None and (m := _LISTENER_PREFIX.fullmatch(name)) and m.group(2) in LISTENER_KEYS:
        base = BROKER_CONFIG_DEF[m.group(2)]
        return ConfigKey(name, base.type, None, base.doc, base.validator, dynamic=base.dynamic)
    if key is None:
        shown = HIDDEN if raw is not None and looks_sensitive(name) else raw
        reason = "unknown configuration key"
        close = difflib.get_close_matches(name, list(BROKER_CONFIG_DEF), n=1)
        if close:
            reason += f" (did you mean {close[0]}?)"
        raise ConfigError(name, shown, reason)
    return key


def _not_dynamic(key: ConfigKey, raw: str | None) -> ConfigError:
    reason = "cannot be changed at run time; set it in server.properties and restart"
    return key.error(raw, reason)


def _masked(settings: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(
        {
            name: HIDDEN if (k := BROKER_CONFIG_DEF.get(name)) is not None and k.sensitive else v
            for name, v in settings.items()
        }
    )


def _resolve_synonyms(values: dict[str, Any], explicit: Mapping[str, str]) -> None:
    """Apply Kafka's precedence between keys that set the same thing (in place)."""
    node_id, broker_id = values["node.id"], values["broker.id"]
    if node_id is not None:
        if "broker.id" in explicit and broker_id != node_id:
            raise ConfigError("node.id", str(node_id), f"must equal broker.id ({broker_id})")
        values["broker.id"] = node_id
    values["node.id"] = values["broker.id"]

    if "log.dirs" not in explicit and values["log.dir"] is not None:
        values["log.dirs"] = (values["log.dir"],)

    if values["log.retention.ms"] is None:
        if values["log.retention.minutes"] is not None:
            ms = values["log.retention.minutes"] * _MS_PER_MINUTE
        else:
            ms = values["log.retention.hours"] * _MS_PER_HOUR
        values["log.retention.ms"] = -1 if ms < 0 else ms

    if values["log.roll.ms"] is None:
        values["log.roll.ms"] = values["log.roll.hours"] * _MS_PER_HOUR

    if values["log.flush.interval.ms"] is None:
        values["log.flush.interval.ms"] = values["log.flush.scheduler.interval.ms"]


def _cross_check(
    values: Mapping[str, Any],
) -> tuple[
    Mapping[str, SecurityProtocol],
    tuple[ListenerConfig, ...],
    tuple[ListenerConfig, ...],
    tuple[tuple[str, int], ...],
]:
    """Check what single keys cannot, and build the listener views."""

    def fail(name: str, reason: str) -> ConfigError:
        return ConfigError(name, render(values[name]), reason)

    map_key = "listener.security.protocol.map"
    protocols: dict[str, SecurityProtocol] = {}
    for entry in values[map_key]:
        name, protocol = _parse_protocol_entry(entry)
        if name in protocols:
            raise fail(map_key, f"listener name {name} is mapped more than once")
        protocols[name] = protocol

    def endpoints(key: str, distinct_ports: bool) -> tuple[ListenerConfig, ...]:
        result: list[ListenerConfig] = []
        for text in values[key]:
            name, host, port = parse_listener(text)
            if name not in protocols:
                raise fail(
                    key,
                    f"listener name {name} has no security protocol in {map_key} "
                    f"(known: {', '.join(protocols) or 'none'})",
                )
            if any(lis.name == name for lis in result):
                raise fail(key, f"listener name {name} is used more than once")
            if distinct_ports and port and any(lis.port == port for lis in result):
                raise fail(key, f"port {port} is used by more than one listener")
            result.append(ListenerConfig(name, host, port, protocols[name]))
        return tuple(result)

    listeners = endpoints("listeners", distinct_ports=True)
    if not listeners:
        raise fail("listeners", "at least one listener is required")
    names = [lis.name for lis in listeners]

    advertised = listeners
    if values["advertised.listeners"] is not None:
        advertised = endpoints("advertised.listeners", distinct_ports=False)
        for lis in advertised:
            if lis.name not in names:
                raise fail(
                    "advertised.listeners",
                    f"listener name {lis.name} is not in listeners ({', '.join(names)})",
                )
            if lis.host in ("0.0.0.0", "::"):
                raise fail(
                    "advertised.listeners",
                    f"{lis.url}: cannot advertise the non-routable address {lis.host}",
                )

    control = values["control.plane.listener.name"]
    if control is not None:
        control = control.upper()
        if control not in names:
            raise fail(
                "control.plane.listener.name",
                f"expected one of the listener names in listeners ({', '.join(names)})",
            )
        if names == [control]:
            raise fail("listeners", f"no listener for clients besides {control}")
        advertised = tuple(lis for lis in advertised if lis.name != control)
        if not advertised:
            raise fail("advertised.listeners", f"no listener for clients besides {control}")

    admin = tuple(_parse_admin_listener(text) for text in values["admin.listeners"])
    kafka_ports = {lis.port for lis in listeners if lis.port}
    admin_ports: set[int] = set()
    for _host, port in admin:
        if port and (port in kafka_ports or port in admin_ports):
            raise fail("admin.listeners", f"port {port} is already used by another listener")
        admin_ports.add(port)

    _check_key_store(values)
    has_key_store = values["ssl.keystore.location"] is not None or values["ssl.keystore.key"]
    for lis in listeners:
        if lis.security_protocol in _TLS and not has_key_store:
            raise fail(
                "listeners",
                f"listener {lis.name} uses {lis.security_protocol}, which needs a key store "
                "(ssl.keystore.location, or ssl.keystore.key and certificate.chain)",
            )
        if lis.security_protocol in _SASL and not values["sasl.enabled.mechanisms"]:
            raise fail(
                "sasl.enabled.mechanisms",
                f"listener {lis.name} uses {lis.security_protocol}, which needs a mechanism",
            )

    if values["group.min.session.timeout.ms"] > values["group.max.session.timeout.ms"]:
        raise fail(
            "group.min.session.timeout.ms",
            "must not exceed group.max.session.timeout.ms "
            f"({values['group.max.session.timeout.ms']})",
        )
    queued = values["queued.max.request.bytes"]
    if 0 < queued < values["socket.request.max.bytes"]:
        raise fail(
            "queued.max.request.bytes",
            "expected <= 0 (no limit) or at least socket.request.max.bytes "
            f"({values['socket.request.max.bytes']})",
        )
    if values["connection.failed.authentication.delay.ms"] >= values["connections.max.idle.ms"]:
        raise fail(
            "connection.failed.authentication.delay.ms",
            f"must be less than connections.max.idle.ms ({values['connections.max.idle.ms']})",
        )
    if values["max.connections.per.ip"] == 0 and not values["max.connections.per.ip.overrides"]:
        raise fail(
            "max.connections.per.ip",
            "0 refuses every address unless max.connections.per.ip.overrides is set",
        )
    return MappingProxyType(protocols), listeners, advertised, admin


def _check_key_store(values: Mapping[str, Any]) -> None:
    location = values["ssl.keystore.location"]
    key, chain = values["ssl.keystore.key"], values["ssl.keystore.certificate.chain"]
    if location is not None and (key is not None or chain is not None):
        raise ConfigError(
            "ssl.keystore.location",
            location,
            "set either ssl.keystore.location or ssl.keystore.key/certificate.chain, not both",
        )
    if (key is None) != (chain is None):
        missing = "ssl.keystore.certificate.chain" if chain is None else "ssl.keystore.key"
        raise ConfigError(missing, None, "ssl.keystore.key and its certificate chain go together")
