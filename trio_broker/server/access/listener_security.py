"""What each listener's security protocol asks of its clients, from the broker's config.

Owns: ``security_by_listener``: per listener the network layer's ``ListenerSecurity``: the
TLS context (built once per distinct set of ``ssl.*`` settings, so listeners that share
them share it), the SASL mechanisms (``sasl.enabled.mechanisms``), the credential lookup,
``connection.failed.authentication.delay.ms`` and ``connections.max.reauth.ms``. Each
listener's ``ssl.*`` and ``sasl.enabled.mechanisms`` are its ``listener.name.<l>.``
overrides over the broker-wide keys (``BrokerConfig.listener_security_settings``).
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from ...network.authentication import ListenerSecurity
from ...security.sasl import SUPPORTED_MECHANISMS
from ...security.scram import Lookup
from ..config import SASL, TLS, BrokerConfig, ConfigError, ListenerSettings, SecurityProtocol
from .tls import server_ssl_context

log = logging.getLogger("trio_broker.security")


def security_by_listener(config: BrokerConfig, credentials: Lookup) -> dict[str, ListenerSecurity]:
    """Each listener's ``ListenerSecurity``, by (upper-case) listener name."""
    contexts: dict[tuple[Any, ...], ssl.SSLContext] = {}
    out: dict[str, ListenerSecurity] = {}
    for lis in config.listeners:
        settings = config.listener_security_settings(lis.name)
        context = None
        if lis.security_protocol in TLS:
            same = tuple(settings[k] for k in sorted(settings.values) if k.startswith("ssl."))
            if same not in contexts:
                contexts[same] = server_ssl_context(settings)
            context = contexts[same]
            if lis.security_protocol is SecurityProtocol.SASL_SSL:
                _note_ignored_client_auth(config["ssl.client.auth"], settings)
        mechanisms: tuple[str, ...] = ()
        if lis.security_protocol in SASL:
            mechanisms = _mechanisms(settings)
        out[lis.name] = ListenerSecurity(
            ssl_context=context,
            sasl_mechanisms=mechanisms,
            credentials=credentials if mechanisms else None,
            failed_authentication_delay_ms=config["connection.failed.authentication.delay.ms"],
            reauth_ms=config["connections.max.reauth.ms"],
        )
    return out


def _mechanisms(settings: ListenerSettings) -> tuple[str, ...]:
    mechanisms = tuple(settings["sasl.enabled.mechanisms"])
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ConfigError(
            settings.name("sasl.enabled.mechanisms"),
            ",".join(mechanisms),
            f"{', '.join(unsupported)} not supported; "
            f"choose among {', '.join(SUPPORTED_MECHANISMS)}",
        )
    return mechanisms


def _note_ignored_client_auth(broker_wide: str, settings: ListenerSettings) -> None:
    """Kafka ignores the broker-wide ``ssl.client.auth`` on SASL_SSL listeners: say so at
    start-up where it matters, so that nobody believes SASL_SSL clients need a certificate."""
    own = settings["ssl.client.auth"]
    if broker_wide != "none" and own != broker_wide:
        log.info(
            "ssl.client.auth=%s does not apply to SASL_SSL listener %s, as in Kafka: its "
            "clients are asked for a certificate only with %s (now %s)",
            broker_wide,
            settings.listener.name,
            settings.name("ssl.client.auth"),
            own,
        )
