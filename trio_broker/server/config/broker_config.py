"""The broker's configuration, under Kafka's own property names.

Owns: loading (``load_config``: a ``server.properties`` file, then ``TRIO_BROKER_*``
environment variables, then ``--override key=value`` entries; a later layer wins) and
``BrokerConfig``: the validated, immutable result, with typed access
(``cfg["num.io.threads"]``), convenience views (``listeners``, ``log_dirs``,
``admin_endpoint``, ...), provenance (which layer set each key: ``origin``), masked display
and ``with_updates`` for run-time changes of dynamic keys, at two levels as Kafka's:
this broker's own (``dynamic``) over the cluster-wide default's (``dynamic-default``,
Kafka's broker resource ``""``), both over the static settings.

Relative paths (``log.dirs``, ``dashboard.data.dir``) are kept as written: they are
relative to the broker's working directory. No Trio, no sockets; the only I/O is reading
the properties file in ``load_config``.

(The key table is in ``keys``, value syntax in ``syntax``, the checks that
span keys in ``checks``.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ...security.sasl_client import SaslLogin
from .checks import ListenerSettings, cross_check, resolve_synonyms
from .configdef import HIDDEN, ConfigEntry, ConfigError, ConfigKey, ConfigSource, Password, render
from .env import overrides_from_env
from .inter_broker import inter_broker_listener, peer_login
from .keys import BROKER_CONFIG_DEF, BROKER_SYNONYMS, DYNAMIC_KEYS
from .names import LISTENER_KEYS, known_key, listener_key
from .properties import parse_properties
from .syntax import (
    ListenerConfig,
    SecurityProtocol,
    parse_ip_overrides,
    parse_listener,
    parse_super_users,
)

__all__ = [
    "BROKER_CONFIG_DEF",
    "BROKER_SYNONYMS",
    "DYNAMIC_KEYS",
    "LISTENER_KEYS",
    "ORIGINS",
    "BrokerConfig",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ListenerConfig",
    "ListenerSettings",
    "Password",
    "SecurityProtocol",
    "load_config",
    "parse_listener",
]


# --------------------------------------------------------------------------- BrokerConfig

# Where a key's value came from, lowest precedence first (``dynamic-default``: a run-time
# change of the cluster-wide default, ``dynamic``: a run-time change of this broker).
ORIGINS = ("default", "file", "env", "override", "dynamic-default", "dynamic")


class BrokerConfig(Mapping[str, Any]):
    """A validated, immutable broker configuration.

    ``BrokerConfig(settings)`` takes the explicit settings as text (as from a properties
    file) and raises ``ConfigError`` for an unknown key, a bad value or keys that do not
    agree. ``cfg[key]`` is the typed value (int, float, bool, str, tuple of str for lists,
    ``Password``, or ``None`` when unset), with synonyms already resolved: e.g.
    ``cfg["log.retention.ms"]`` is the retention in ms whichever key set it.
    ``dynamic_settings`` are run-time changes (dynamic keys only) that sit on top of the
    static settings; use ``with_updates`` to make them. ``default_settings`` are run-time
    changes of the cluster-wide default (Kafka's broker resource ``""``): they sit between
    the static settings and this broker's own changes. ``origins`` says, per explicit
    setting, which layer gave it (``file``, ``env`` or ``override``; ``file`` if not said).
    """

    __slots__ = (
        "_admin",
        "_advertised",
        "_defaults",
        "_dynamic",
        "_inter_broker",
        "_listeners",
        "_logins",
        "_originals",
        "_origins",
        "_protocols",
        "_security",
        "_values",
    )

    def __init__(
        self,
        settings: Mapping[str, str] | None = None,
        dynamic_settings: Mapping[str, str] | None = None,
        origins: Mapping[str, str] | None = None,
        default_settings: Mapping[str, str] | None = None,
    ) -> None:
        originals = dict(settings or {})
        given = dict(origins or {})
        for name, origin in given.items():
            if origin not in ORIGINS[1:4]:
                raise ValueError(f"{name}: unknown origin {origin!r}")
        dynamic = dict(dynamic_settings or {})
        defaults = dict(default_settings or {})
        for name, raw in [*defaults.items(), *dynamic.items()]:
            key = known_key(name, raw)
            if not key.dynamic:
                raise not_dynamic(key, raw)
        merged = {**originals, **defaults, **dynamic}
        values: dict[str, Any] = {}
        for name, key in BROKER_CONFIG_DEF.items():
            values[name] = key.default
        for name, raw in merged.items():
            values[name] = known_key(name, raw).parse(raw)
        resolve_synonyms(values, merged)
        self._originals = MappingProxyType(originals)
        self._origins = MappingProxyType({name: given.get(name, "file") for name in originals})
        self._dynamic = MappingProxyType(dynamic)
        self._defaults = MappingProxyType(defaults)
        self._values = MappingProxyType(values)
        checked = cross_check(values)
        self._protocols, self._listeners, self._advertised, self._admin, self._security = checked
        control = self.control_plane_listener_name
        self._inter_broker = inter_broker_listener(values, merged, self._listeners, control)
        # Brokers log in to each other only in a cluster (a broker alone reaches none).
        peers = (self._inter_broker, control) if values["zookeeper.connect"] else ()
        self._logins = MappingProxyType(
            {
                lis.name: peer_login(values, lis, self._security[lis.name])
                for lis in self._listeners
                if lis.name in peers
            }
        )

    # ---- Mapping: typed values by key
    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return (
            f"BrokerConfig({dict(self.originals)!r}, dynamic={dict(self.dynamic_settings)!r}, "
            f"defaults={dict(self.default_settings)!r})"
        )

    # ---- provenance and display
    @property
    def originals(self) -> Mapping[str, str]:
        """The static settings given explicitly (file and overrides), passwords masked."""
        return masked(self._originals)

    @property
    def dynamic_settings(self) -> Mapping[str, str]:
        """Run-time changes made with ``with_updates``, passwords masked."""
        return masked(self._dynamic)

    @property
    def dynamic_raw(self) -> Mapping[str, str]:
        """Run-time changes as given, passwords included: for the dynamic config store."""
        return self._dynamic

    @property
    def default_settings(self) -> Mapping[str, str]:
        """Run-time changes of the cluster-wide default, passwords masked."""
        return masked(self._defaults)

    @property
    def default_raw(self) -> Mapping[str, str]:
        """The cluster-wide default's run-time changes as given, passwords included."""
        return self._defaults

    def level_raw(self, *, cluster_default: bool) -> Mapping[str, str]:
        """One level's run-time changes as given: the cluster default's or this broker's."""
        return self._defaults if cluster_default else self._dynamic

    @property
    def dynamic_keys(self) -> frozenset[str]:
        return DYNAMIC_KEYS

    def effective(self) -> dict[str, str | None]:
        """Every key's effective value as text (``None``: unset), passwords ``[hidden]``;
        after the broker-wide keys, the ``listener.name.<l>.<key>`` settings given."""
        return {name: render(self._values[name]) for name in self._names()}

    def _names(self) -> list[str]:
        listener_keys = sorted(n for n in self._values if n not in BROKER_CONFIG_DEF)
        return [*BROKER_CONFIG_DEF, *listener_keys]

    def source(self, name: str) -> ConfigSource:
        """Where ``name``'s value came from (a synonym setting it counts)."""
        if name not in self._values:
            raise KeyError(name)
        synonyms = BROKER_SYNONYMS.get(name, (name,))
        if any(s in self._dynamic for s in synonyms):
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if any(s in self._defaults for s in synonyms):
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if any(s in self._originals for s in synonyms):
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def origin(self, name: str) -> str:
        """Which layer set ``name`` (a synonym setting it counts): ``default``, ``file``,
        ``env`` (a ``TRIO_BROKER_*`` variable), ``override`` or ``dynamic``."""
        if name not in self._values:
            raise KeyError(name)
        synonyms = BROKER_SYNONYMS.get(name, (name,))
        if any(s in self._dynamic for s in synonyms):
            return "dynamic"
        if any(s in self._defaults for s in synonyms):
            return "dynamic-default"
        for s in synonyms:
            if s in self._origins:
                return self._origins[s]
        return "default"

    def origins(self) -> dict[str, str]:
        """``origin`` of every key (and of each ``listener.name.<l>.<key>`` given)."""
        return {name: self.origin(name) for name in self._names()}

    def describe(self, *, cluster_default: bool = False) -> dict[str, ConfigEntry]:
        """Every key as DescribeConfigs reports it for this broker's resource; with
        ``cluster_default``, only the keys the cluster-wide default sets (Kafka's resource
        ``""``), with the values set there."""
        if cluster_default:
            return {
                name: ConfigEntry(
                    name=name,
                    value=(key := known_key(name, raw)).parse(raw),
                    source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                    is_sensitive=key.sensitive,
                    read_only=not key.dynamic,
                )
                for name, raw in sorted(self._defaults.items())
            }
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

    def with_updates(
        self, settings: Mapping[str, str | None], *, cluster_default: bool = False
    ) -> BrokerConfig:
        """A new config with run-time changes of dynamic keys (``None`` removes a change):
        this broker's own, or with ``cluster_default`` the cluster-wide default's.

        Raises ``ConfigError`` naming the key for an unknown key, a key that is not
        dynamic, a bad value, or a result whose keys do not agree.
        """
        changes = dict(self.level_raw(cluster_default=cluster_default))
        for name, raw in settings.items():
            key = known_key(name, raw)
            if not key.dynamic:
                raise not_dynamic(key, raw)
            if raw is None:
                changes.pop(name, None)
            else:
                key.parse(raw)
                changes[name] = raw
        if cluster_default:
            return BrokerConfig(self._originals, self._dynamic, self._origins, changes)
        return BrokerConfig(self._originals, changes, self._origins, self._defaults)

    def with_dynamic(
        self, settings: Mapping[str, str], cluster_default: Mapping[str, str]
    ) -> BrokerConfig:
        """This config's static settings with both levels of run-time changes replaced
        (as read from the dynamic config store); ``ConfigError`` as ``with_updates``."""
        return BrokerConfig(self._originals, settings, self._origins, cluster_default)

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
    def inter_broker_listener_name(self) -> str:
        """The listener followers fetch from other brokers on (``inter_broker``)."""
        return self._inter_broker

    def peer_login(self, listener: str) -> SaslLogin | None:
        """The SASL login on ``listener`` of other brokers (the inter-broker listener or
        the control plane's, in a ZooKeeper cluster; None: no SASL there)."""
        return self._logins.get(listener.upper())

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

    def listener_security_settings(self, listener: str) -> ListenerSettings:
        """The ``ssl.*`` and ``sasl.enabled.mechanisms`` values listener ``listener`` uses:
        its ``listener.name.<l>.`` overrides over the broker-wide keys, as in Kafka
        (``ssl.client.auth`` on SASL_SSL only with the prefix). KeyError if no such listener."""
        return self._security[listener.upper()]

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        return parse_ip_overrides(self._values["max.connections.per.ip.overrides"])

    @property
    def authorization_enabled(self) -> bool:
        """Whether ``authorizer.class.name`` names the ACL authorizer (else: no checks)."""
        return bool((self._values["authorizer.class.name"] or "").strip())

    @property
    def super_users(self) -> tuple[str, ...]:
        users = self._values["super.users"]
        return () if users is None else parse_super_users(users)


def load_config(
    path: Path | str | None,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> BrokerConfig:
    """Read a ``server.properties`` file (or none), then apply the ``TRIO_BROKER_*``
    variables of ``environ`` (see ``env``; none if ``environ`` is None), then the
    ``key=value`` overrides.

    Precedence: file < environment < overrides (as ``kafka-server-start.sh --override``
    wins over the file). Each key remembers its layer (``BrokerConfig.origin``). Raises
    ``ConfigError`` for an unreadable file, a malformed override, an unknown key, a bad
    value, or keys that do not agree.
    """
    settings: dict[str, str] = {}
    origins: dict[str, str] = {}
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(None, None, f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(None, None, f"{path}: not UTF-8 text ({exc.reason})") from None
        settings.update(parse_properties(text, str(path)))
        origins.update(dict.fromkeys(settings, "file"))
    env = overrides_from_env(environ) if environ is not None else []
    for origin, items in (("env", env), ("override", overrides)):
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise ConfigError(None, None, f"override {item!r}: expected key=value")
            settings[name.strip()] = value
            origins[name.strip()] = origin
    return BrokerConfig(settings, origins=origins)


def not_dynamic(key: ConfigKey, raw: str | None) -> ConfigError:
    reason = "cannot be changed at run time; set it in server.properties and restart"
    return key.error(raw, reason)


def masked(settings: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(
        {
            name: HIDDEN
            if (k := BROKER_CONFIG_DEF.get(name) or listener_key(name)) is not None and k.sensitive
            else v
            for name, v in settings.items()
        }
    )
