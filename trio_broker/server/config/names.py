"""The names a configuration key may have, and what an unknown name gets told.

Owns: ``LISTENER_KEYS`` (what ``listener.name.<l>.<key>`` may set, Kafka's per-listener
overrides; ``LISTENER_SECURITY_KEYS``: the ``ssl.*`` keys and ``sasl.enabled.mechanisms``
among them; and ``JAAS_KEY``, ``listener.name.<l>.<mechanism>.sasl.jaas.config``),
``LISTENER_PREFIX``, ``listener_key`` and ``known_key``, which finds a name's
definition in the key table (``keys``) or raises a ``ConfigError`` saying why the
name is unknown (with the nearest known name).
"""

from __future__ import annotations

import difflib
import re

from .configdef import HIDDEN, ConfigError, ConfigKey, looks_sensitive
from .keys import BROKER_CONFIG_DEF

# Keys a listener may set for itself, as ``listener.name.<listener>.<key>`` (Kafka's
# per-listener overrides); the listener part is lower case, as Kafka writes it.
LISTENER_SECURITY_KEYS: tuple[str, ...] = (
    "sasl.enabled.mechanisms",
    *(k for k in BROKER_CONFIG_DEF if k.startswith("ssl.")),
)
"""The security keys a listener may override; ``BrokerConfig.listener_security_settings``
gives a listener's effective values (its ``listener.name.<l>.`` one, else the broker's)."""
LISTENER_KEYS = frozenset(
    {
        "max.connections",
        "max.connection.creation.rate",
        "num.network.threads",
        *LISTENER_SECURITY_KEYS,
    }
)
LISTENER_PREFIX = re.compile(r"listener\.name\.([A-Za-z0-9_-]+)\.(.+)")
# A listener's JAAS entry for one SASL mechanism (Kafka's form, mechanism in lower case):
# listener.name.<l>.<mechanism>.sasl.jaas.config.
JAAS_KEY = re.compile(r"(plain|scram-sha-256|scram-sha-512|gssapi|oauthbearer)\.sasl\.jaas\.config")


def listener_key(name: str) -> ConfigKey | None:
    """The definition of a well-formed ``listener.name.<l>.<key>`` name; None otherwise."""
    m = LISTENER_PREFIX.fullmatch(name)
    if m is None or m.group(1) != m.group(1).lower():
        return None
    if JAAS_KEY.fullmatch(m.group(2)):
        base = BROKER_CONFIG_DEF["sasl.jaas.config"]
    elif m.group(2) in LISTENER_KEYS:
        base = BROKER_CONFIG_DEF[m.group(2)]
    else:
        return None
    return ConfigKey(name, base.type, base.default, base.doc, base.validator, dynamic=base.dynamic)


def known_key(name: str, raw: str | None) -> ConfigKey:
    key = BROKER_CONFIG_DEF.get(name) or listener_key(name)
    if key is not None:
        return key
    shown = HIDDEN if raw is not None and looks_sensitive(name) else raw
    reason = "unknown configuration key"
    m = LISTENER_PREFIX.fullmatch(name)
    if m is not None and m.group(1) != m.group(1).lower():
        lower = f"listener.name.{m.group(1).lower()}.{m.group(2)}"
        raise ConfigError(name, shown, f"listener names are lower case here, as in Kafka ({lower})")
    if m is not None:
        close = difflib.get_close_matches(m.group(2), sorted(LISTENER_KEYS), n=1)
        reason = (
            f"unknown configuration key: {m.group(2)} cannot be set per listener "
            f"(listener.name.{m.group(1)}. takes {', '.join(sorted(LISTENER_KEYS))})"
        )
        if close:
            reason += f" (did you mean listener.name.{m.group(1)}.{close[0]}?)"
        raise ConfigError(name, shown, reason)
    close = difflib.get_close_matches(name, list(BROKER_CONFIG_DEF), n=1)
    if close:
        reason += f" (did you mean {close[0]}?)"
    raise ConfigError(name, shown, reason)
