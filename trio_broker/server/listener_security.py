"""What each listener's security protocol asks of its clients, from the broker's config.

Owns: ``listener_security``: per security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT,
SASL_SSL) the network layer's ``ListenerSecurity``: the TLS context (built once, shared by
the TLS listeners), the SASL mechanisms (``sasl.enabled.mechanisms``), the credential
lookup, ``connection.failed.authentication.delay.ms`` and ``connections.max.reauth.ms``.
"""

from __future__ import annotations

from ..network.authentication import ListenerSecurity
from ..security.sasl import SUPPORTED_MECHANISMS
from ..security.scram import Lookup
from .config import BrokerConfig
from .configdef import ConfigError
from .tls import server_ssl_context

_TLS = ("SSL", "SASL_SSL")
_SASL = ("SASL_PLAINTEXT", "SASL_SSL")


def listener_security(config: BrokerConfig, credentials: Lookup) -> dict[str, ListenerSecurity]:
    protocols = {lc.security_protocol for lc in config.listeners}
    context = server_ssl_context(config) if protocols & set(_TLS) else None
    mechanisms = tuple(config["sasl.enabled.mechanisms"])
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if protocols & set(_SASL) and unsupported:
        raise ConfigError(
            "sasl.enabled.mechanisms",
            ",".join(mechanisms),
            f"{', '.join(unsupported)} not supported; "
            f"choose among {', '.join(SUPPORTED_MECHANISMS)}",
        )
    out: dict[str, ListenerSecurity] = {}
    for protocol in ("PLAINTEXT", *_TLS, "SASL_PLAINTEXT"):
        out[protocol] = ListenerSecurity(
            ssl_context=context if protocol in _TLS else None,
            sasl_mechanisms=mechanisms if protocol in _SASL else (),
            credentials=credentials if protocol in _SASL else None,
            failed_authentication_delay_ms=config["connection.failed.authentication.delay.ms"],
            reauth_ms=config["connections.max.reauth.ms"],
        )
    return out
