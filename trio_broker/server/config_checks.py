"""The checks that span several broker keys, and Kafka's precedence between synonyms.

Owns: ``resolve_synonyms`` (``log.retention.ms`` > ``.minutes`` > ``.hours``,
``log.roll.ms`` > ``.hours``, ``log.dirs`` > ``log.dir``, ``node.id`` = ``broker.id``) and
``cross_check`` (listeners against the security protocol map, the control-plane listener,
distinct names and ports, admin listeners, key stores), which also builds the listener
views a ``BrokerConfig`` offers.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .config_syntax import (
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
from .configdef import (
    ConfigError,
    render,
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


def cross_check(
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

    check_key_store(values)
    has_key_store = values["ssl.keystore.location"] is not None or values["ssl.keystore.key"]
    for lis in listeners:
        if lis.security_protocol in TLS and not has_key_store:
            raise fail(
                "listeners",
                f"listener {lis.name} uses {lis.security_protocol}, which needs a key store "
                "(ssl.keystore.location, or ssl.keystore.key and certificate.chain)",
            )
        if lis.security_protocol in SASL and not values["sasl.enabled.mechanisms"]:
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


def check_key_store(values: Mapping[str, Any]) -> None:
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
