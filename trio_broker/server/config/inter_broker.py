"""Which listener brokers reach each other on, and how they log in there: Kafka's
inter-broker listener.

Owns: ``inter_broker_listener`` and ``peer_login``, applied to checked key values (as
``checks`` does). The inter-broker listener, the one followers fetch from, is
``inter.broker.listener.name``, or the listener named as ``security.inter.broker.protocol``
(Kafka's default there, PLAINTEXT); setting both is an error, as in Kafka. With neither
set it is the PLAINTEXT listener if there is one, else the first listener that is not
the control plane's (what the broker did before these keys). The control plane's
listener cannot be it (Kafka's rule too). ``peer_login`` is the SASL login on a SASL
listener (the inter-broker one, or the control plane's, where the controller's requests
go; ``BrokerConfig`` asks only with ``zookeeper.connect`` set, when there are brokers to
log in to): ``sasl.mechanism.inter.broker.protocol``, which the listener must enable, and the
``username`` and ``password`` options of the JAAS entry
``listener.name.<l>.<mechanism>.sasl.jaas.config`` (else ``sasl.jaas.config``). Every
problem is a ``ConfigError`` naming the key to fix. No I/O, no Trio.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ...security.jaas import JaasError, parse_jaas_config
from ...security.sasl import SUPPORTED_MECHANISMS
from ...security.sasl_client import SaslLogin
from .checks import ListenerSettings
from .configdef import HIDDEN, ConfigError, Password, render
from .syntax import SASL, ListenerConfig

LISTENER_KEY = "inter.broker.listener.name"
PROTOCOL_KEY = "security.inter.broker.protocol"
MECHANISM_KEY = "sasl.mechanism.inter.broker.protocol"


def inter_broker_listener(
    values: Mapping[str, Any],
    explicit: Collection[str],
    listeners: tuple[ListenerConfig, ...],
    control: str | None,
) -> str:
    """The inter-broker listener's name (upper case, as listener names are)."""
    names = [lis.name for lis in listeners]
    if LISTENER_KEY in explicit and PROTOCOL_KEY in explicit:
        raise ConfigError(
            LISTENER_KEY,
            render(values[LISTENER_KEY]),
            f"set only one of {LISTENER_KEY} and {PROTOCOL_KEY}, as in Kafka",
        )
    if LISTENER_KEY in explicit and values[LISTENER_KEY] is not None:
        key, name = LISTENER_KEY, str(values[LISTENER_KEY]).upper()
    elif PROTOCOL_KEY in explicit:
        key, name = PROTOCOL_KEY, str(values[PROTOCOL_KEY]).upper()
    else:
        data = [n for n in names if n != control] or names
        return "PLAINTEXT" if "PLAINTEXT" in data else data[0]
    if name not in names:
        what = "a listener name" if key == LISTENER_KEY else "the name of a listener"
        raise ConfigError(
            key, render(values[key]), f"expected {what} in listeners ({', '.join(names)})"
        )
    if name == control:
        raise ConfigError(
            key,
            render(values[key]),
            f"the control plane's listener (control.plane.listener.name) cannot be {key}'s",
        )
    return name


def peer_login(
    values: Mapping[str, Any], listener: ListenerConfig, settings: ListenerSettings
) -> SaslLogin | None:
    """The SASL login this broker uses on ``listener`` of other brokers (None: the
    listener does not use SASL)."""
    if listener.security_protocol not in SASL:
        return None
    mechanism = values[MECHANISM_KEY]
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError(
            MECHANISM_KEY,
            mechanism,
            f"brokers log in to each other with {', '.join(SUPPORTED_MECHANISMS)} here "
            f"(listener {listener.name} uses {listener.security_protocol})",
        )
    enabled = settings["sasl.enabled.mechanisms"]
    if mechanism not in enabled:
        raise ConfigError(
            MECHANISM_KEY,
            mechanism,
            f"listener {listener.name} does not enable it "
            f"({settings.name('sasl.enabled.mechanisms')}={','.join(enabled)})",
        )
    own = f"listener.name.{listener.name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    key = own if values.get(own) is not None else "sasl.jaas.config"
    secret = values.get(key)
    if secret is None:
        raise ConfigError(
            own,
            None,
            f"listener {listener.name} uses {listener.security_protocol}: brokers need the "
            f"username and password they log in with there ({own}, or sasl.jaas.config)",
        )
    text = secret.value if isinstance(secret, Password) else str(secret)
    try:
        entry = parse_jaas_config(text)
    except JaasError as exc:
        raise ConfigError(key, HIDDEN, f"not a JAAS login module entry: {exc}") from None
    missing = [o for o in ("username", "password") if not entry.options.get(o)]
    if missing:
        raise ConfigError(
            key,
            HIDDEN,
            f"the login module entry needs {' and '.join(missing)} (the broker's own "
            f"credentials on listener {listener.name})",
        )
    return SaslLogin(mechanism, entry.options["username"], entry.options["password"])
