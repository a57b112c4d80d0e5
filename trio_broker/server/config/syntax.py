"""The syntax of broker config values: listeners, protocol maps, per-IP limits, super
users, and the validators the key table uses.

Owns: ``SecurityProtocol``, ``ListenerConfig``, ``parse_listener`` and the other value
parsers, and the shared validators (``POSITIVE``, ``LISTENERS``, ``COMPRESSION``, ...).
Pure functions and constants: no I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .configdef import Check, ConfigType, ListOf, OneOf, Range


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

LISTENER = re.compile(
    r"(?P<name>[A-Za-z0-9_-]+)://"
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)\]|(?P<host>[A-Za-z0-9_.-]*))"
    r":(?P<port>[0-9]+)"
)
ADMIN_LISTENER = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?:\[(?P<ipv6>[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?)\]|(?P<host>[A-Za-z0-9_.-]*))"
    r":(?P<port>[0-9]+)/?"
)
LISTENER_NAME = re.compile(r"[A-Za-z0-9_-]+")
CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]+")
LISTENER_SYNTAX = "NAME://host:port (e.g. PLAINTEXT://127.0.0.1:9092, [::1] for IPv6)"


def parse_listener(text: str) -> tuple[str, str, int]:
    """Split ``NAME://host:port`` into (upper-case name, host, port); ValueError if bad."""
    match = LISTENER.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not {LISTENER_SYNTAX}")
    port = parse_port(match["port"], text)
    host = match["ipv6"] if match["ipv6"] is not None else match["host"]
    return match["name"].upper(), host, port


def parse_admin_listener(text: str) -> tuple[str, int]:
    match = ADMIN_LISTENER.fullmatch(text.strip())
    if match is None or match["scheme"].lower() != "http":
        raise ValueError(f"{text!r} is not http://host:port (e.g. http://127.0.0.1:9644)")
    host = match["ipv6"] if match["ipv6"] is not None else match["host"]
    return host, parse_port(match["port"], text)


def parse_port(digits: str, text: str) -> int:
    port = int(digits)
    if port > 65535:
        raise ValueError(f"{text!r}: port {port} is not between 0 and 65535")
    return port


def parse_protocol_entry(text: str) -> tuple[str, SecurityProtocol]:
    name, sep, protocol = text.partition(":")
    name, protocol = name.strip(), protocol.strip()
    if not sep or not LISTENER_NAME.fullmatch(name):
        raise ValueError(f"{text!r} is not LISTENER_NAME:SECURITY_PROTOCOL")
    try:
        return name.upper(), SecurityProtocol(protocol.upper())
    except ValueError:
        known = ", ".join(SecurityProtocol)
        raise ValueError(f"{text!r}: unknown security protocol (expected {known})") from None


def parse_ip_overrides(text: str) -> dict[str, int]:
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


def parse_zookeeper_connect(text: str) -> tuple[list[tuple[str, int]], str]:
    """``host:port[,host:port...][/chroot]``: the servers and the chroot ("" for none)."""
    servers, slash, chroot = text.strip().partition("/")
    chroot = slash + chroot if slash else ""
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise ValueError(f"{chroot!r} is not a ZooKeeper path (e.g. /kafka)")
    hosts: list[tuple[str, int]] = []
    for item in (i.strip() for i in servers.split(",")):
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{item!r} is not host:port")
        hosts.append((host, int(port)))
    return hosts, chroot


def parse_super_users(text: str) -> tuple[str, ...]:
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


def authorizer_name(value: Any) -> str | None:
    if not value or value.strip() in AUTHORIZER_NAMES:
        return None
    return f"{value!r} is not an authorizer this broker has ({', '.join(AUTHORIZER_NAMES)})"


def each(parse: Callable[[str], object]) -> Callable[[Any], str | None]:
    """A check that ``parse`` accepts every item of a list, reporting the first refusal."""

    def test(items: Any) -> str | None:
        for item in items:
            try:
                parse(item)
            except ValueError as exc:
                return str(exc)
        return None

    return test


def whole(parse: Callable[[str], object]) -> Callable[[Any], str | None]:
    def test(value: Any) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return test


def non_empty_distinct(what: str) -> Callable[[Any], str | None]:
    def test(items: Any) -> str | None:
        if not items:
            return f"at least one {what} is required"
        duplicates = sorted({i for i in items if list(items).count(i) > 1})
        if duplicates:
            return f"{what} listed more than once: {', '.join(duplicates)}"
        return None

    return test


def cluster_id(value: Any) -> str | None:
    if CLUSTER_ID.fullmatch(value):
        return None
    return "expected letters, digits, '-' and '_' only (e.g. a base64url Kafka cluster id)"


# --------------------------------------------------------------------------- the table

INT, LONG, BOOL = ConfigType.INT, ConfigType.LONG, ConfigType.BOOLEAN
DOUBLE = ConfigType.DOUBLE
STR, LIST, PASSWORD = ConfigType.STRING, ConfigType.LIST, ConfigType.PASSWORD

POSITIVE = Range(1)
# A pool's size: the admin API's, the advisor's and AlterConfigs' bound alike.
POOL_SIZE = Range(1, 256)
NON_NEGATIVE = Range(0)
UNLIMITED_OR_POSITIVE = Range(1, allow=(-1,))
OS_DEFAULT_OR_POSITIVE = Range(1, allow=(-1,))

LISTENERS = Check(f"a comma-separated list of {LISTENER_SYNTAX}", each(parse_listener))
TIMESTAMP_TYPES = OneOf(("CreateTime", "LogAppendTime"))
CLEANUP_POLICIES = ListOf(("delete", "compact"), non_empty=True)
RATIO = Range(0, 1)
COMPRESSION = OneOf(("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"))
# KIP-390's levels, in each codec's own range; -1 for gzip is zlib's default (6).
GZIP_LEVEL = Range(1, 9, allow=(-1,))
LZ4_LEVEL = Range(1, 17)
ZSTD_LEVEL = Range(-131072, 22)
STORE_TYPES = OneOf(
    ("PEM",),
    unsupported=tuple(
        (kind, f"{kind} stores are not supported; convert them to PEM")
        for kind in ("JKS", "PKCS12")
    ),
)
SASL_MECHANISMS = ListOf(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"))


TLS = (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)
SASL = (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000
