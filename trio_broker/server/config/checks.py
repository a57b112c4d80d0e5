"""The checks that span several broker keys, and Kafka's precedence between synonyms.

Owns: ``resolve_synonyms`` (``log.retention.ms`` > ``.minutes`` > ``.hours``,
``log.roll.ms`` > ``.hours``, ``log.dirs`` > ``log.dir``, ``node.id`` = ``broker.id``) and
``cross_check`` (listeners against the security protocol map, the control-plane listener,
distinct names and ports, admin listeners, ``listener.name.<l>.<key>`` overrides, key
stores), which also builds the listener views a ``BrokerConfig`` offers, and
``ListenerSettings``: one listener's effective security settings, Kafka's rules applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .configdef import (
    ConfigError,
    render,
)
from .names import JAAS_KEY, LISTENER_PREFIX, LISTENER_SECURITY_KEYS
from .syntax import (
    MS_PER_HOUR,
    MS_PER_MINUTE,
    SASL,
    TLS,
    ListenerConfig,
    SecurityProtocol,
    parse_admin_listener,
    parse_listener,
    parse_protocol_entry,
)


def resolve_synonyms(values: dict[str, Any], explicit: Mapping[str, str]) -> None:
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
            ms = values["log.retention.minutes"] * MS_PER_MINUTE
        else:
            ms = values["log.retention.hours"] * MS_PER_HOUR
        values["log.retention.ms"] = -1 if ms < 0 else ms

    if values["log.roll.ms"] is None:
        values["log.roll.ms"] = values["log.roll.hours"] * MS_PER_HOUR

    if values["log.flush.interval.ms"] is None:
        values["log.flush.interval.ms"] = values["log.flush.scheduler.interval.ms"]


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    """The security settings (``LISTENER_SECURITY_KEYS``) one listener uses, as in Kafka:
    its ``listener.name.<l>.<key>`` if set, else the broker-wide ``<key>``; except that a
    SASL_SSL listener's ``ssl.client.auth`` is only ever its own (Kafka ignores the
    broker-wide one there, KIP-684): unset, SASL_SSL clients are not asked for a
    certificate. ``name(key)`` is the key that gave the value, for error messages."""

    listener: ListenerConfig
    values: Mapping[str, Any]
    names: Mapping[str, str]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def name(self, key: str) -> str:
        return self.names[key]


def listener_settings(values: Mapping[str, Any], listener: ListenerConfig) -> ListenerSettings:
    prefix = f"listener.name.{listener.name.lower()}."
    effective: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key in LISTENER_SECURITY_KEYS:
        own = values.get(prefix + key)
        sasl_ssl_auth = (
            key == "ssl.client.auth" and listener.security_protocol is SecurityProtocol.SASL_SSL
        )
        if own is not None or sasl_ssl_auth:
            effective[key] = "none" if own is None else own
            names[key] = prefix + key
        else:
            effective[key] = values[key]
            names[key] = key
    return ListenerSettings(listener, MappingProxyType(effective), MappingProxyType(names))


def cross_check(
    values: Mapping[str, Any],
) -> tuple[
    Mapping[str, SecurityProtocol],
    tuple[ListenerConfig, ...],
    tuple[ListenerConfig, ...],
    tuple[tuple[str, int], ...],
    Mapping[str, ListenerSettings],
]:
    """Check what single keys cannot, and build the listener views."""

    def fail(name: str, reason: str) -> ConfigError:
        return ConfigError(name, render(values[name]), reason)

    map_key = "listener.security.protocol.map"
    protocols: dict[str, SecurityProtocol] = {}
    for entry in values[map_key]:
        name, protocol = parse_protocol_entry(entry)
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

    admin = tuple(parse_admin_listener(text) for text in values["admin.listeners"])
    kafka_ports = {lis.port for lis in listeners if lis.port}
    admin_ports: set[int] = set()
    for _host, port in admin:
        if port and (port in kafka_ports or port in admin_ports):
            raise fail("admin.listeners", f"port {port} is already used by another listener")
        admin_ports.add(port)

    check_listener_keys(values, listeners)
    check_key_store(broker_wide(values))
    settings: dict[str, ListenerSettings] = {}
    for lis in listeners:
        own = settings[lis.name] = listener_settings(values, lis)
        if lis.security_protocol in TLS:
            check_key_store(own)
            if own["ssl.keystore.location"] is None and own["ssl.keystore.key"] is None:
                raise fail(
                    "listeners",
                    f"listener {lis.name} uses {lis.security_protocol}, which needs a key store "
                    "(ssl.keystore.location, or ssl.keystore.key and certificate.chain, "
                    f"broker-wide or as listener.name.{lis.name.lower()}.ssl.*)",
                )
        mechanisms = own.name("sasl.enabled.mechanisms")
        if lis.security_protocol in SASL and not own["sasl.enabled.mechanisms"]:
            raise ConfigError(
                mechanisms,
                render(own["sasl.enabled.mechanisms"]),
                f"listener {lis.name} uses {lis.security_protocol}, which needs a mechanism",
            )

    if values["group.min.session.timeout.ms"] > values["group.max.session.timeout.ms"]:
        raise fail(
            "group.min.session.timeout.ms",
            "must not exceed group.max.session.timeout.ms "
            f"({values['group.max.session.timeout.ms']})",
        )
    for what in ("heartbeat.interval", "session.timeout"):
        key = f"group.consumer.{what}.ms"
        lo, hi = f"group.consumer.min.{what}.ms", f"group.consumer.max.{what}.ms"
        if not values[lo] <= values[key] <= values[hi]:
            raise fail(key, f"expected between {lo} ({values[lo]}) and {hi} ({values[hi]})")
    if (
        values["group.consumer.heartbeat.interval.ms"]
        >= values["group.consumer.session.timeout.ms"]
    ):
        raise fail(
            "group.consumer.heartbeat.interval.ms",
            "must be less than group.consumer.session.timeout.ms",
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
    return MappingProxyType(protocols), listeners, advertised, admin, MappingProxyType(settings)


def check_listener_keys(values: Mapping[str, Any], listeners: tuple[ListenerConfig, ...]) -> None:
    """A ``listener.name.<l>.<key>`` must name a listener of ``listeners``, and a security
    key must be one that listener's protocol uses: none is silently ignored."""
    by_name = {lis.name: lis for lis in listeners}
    for name, value in values.items():
        m = LISTENER_PREFIX.fullmatch(name)
        if m is None:
            continue
        listener, key = m.group(1).upper(), m.group(2)
        lis = by_name.get(listener)
        if lis is None:
            raise ConfigError(
                name,
                render(value),
                f"no listener {listener} in listeners ({', '.join(by_name)})",
            )
        if key.startswith("ssl.") and lis.security_protocol not in TLS:
            raise ConfigError(
                name,
                render(value),
                f"listener {listener} uses {lis.security_protocol}, which has no TLS",
            )
        sasl_key = key == "sasl.enabled.mechanisms" or JAAS_KEY.fullmatch(key)
        if sasl_key and lis.security_protocol not in SASL:
            raise ConfigError(
                name,
                render(value),
                f"listener {listener} uses {lis.security_protocol}, which has no SASL",
            )


def broker_wide(values: Mapping[str, Any]) -> ListenerSettings:
    """The broker-wide security keys, shaped as a listener's settings (for the checks)."""
    keys = LISTENER_SECURITY_KEYS
    return ListenerSettings(
        ListenerConfig("", "", 0, SecurityProtocol.PLAINTEXT),
        MappingProxyType({k: values[k] for k in keys}),
        MappingProxyType({k: k for k in keys}),
    )


def check_key_store(settings: ListenerSettings) -> None:
    location = settings["ssl.keystore.location"]
    key, chain = settings["ssl.keystore.key"], settings["ssl.keystore.certificate.chain"]
    if location is not None and (key is not None or chain is not None):
        # name the listener's own key when it is one of the two (the other is broker-wide)
        given = [k for k in ("ssl.keystore.key", "ssl.keystore.certificate.chain") if settings[k]]
        named = [settings.name(k) for k in ("ssl.keystore.location", *given)]
        own = [n for n in named if n.startswith("listener.name.")]
        name = own[0] if own else named[0]
        raise ConfigError(
            name,
            location if name.endswith("ssl.keystore.location") else None,
            "set either ssl.keystore.location or ssl.keystore.key/certificate.chain, not both "
            f"(set: {', '.join(named)})",
        )
    if (key is None) != (chain is None):
        missing = "ssl.keystore.certificate.chain" if chain is None else "ssl.keystore.key"
        raise ConfigError(
            settings.name(missing), None, "ssl.keystore.key and its certificate chain go together"
        )
