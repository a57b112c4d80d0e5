"""How this broker connects to other brokers: the ``PeerListener`` for each listener it
reaches them on, built from its own config, as Kafka's inter-broker client side.

Owns: ``peer_listeners``: the inter-broker listener's (followers fetch on it;
``config.inter_broker`` says which) and the controller's (the control plane's when
``control.plane.listener.name`` is set, else the inter-broker one: LeaderAndIsr,
UpdateMetadata, StopReplica and ControlledShutdown go there). On SSL and SASL_SSL the
TLS client context comes from that listener's ``ssl.*`` settings (``tls.client_ssl_context``:
its trust store verifies the peer, its key store answers a peer that asks for a
certificate); on SASL_PLAINTEXT and SASL_SSL the login is ``BrokerConfig.peer_login``'s.
Without ``zookeeper.connect`` a broker reaches no other: it loads nothing for them.
Each side of a cluster is configured alike, so this broker's settings for a listener are
what the other brokers' same listener expects. Blocking file I/O (key and trust stores):
called once, at start-up; a store that cannot be loaded is a ``ConfigError``.
"""

from __future__ import annotations

from ...network.peer_client import PeerListener
from ..config import TLS, BrokerConfig
from .tls import client_ssl_context


def peer_listeners(config: BrokerConfig) -> tuple[PeerListener, PeerListener]:
    """(the inter-broker listener, the listener the controller's requests go to)."""
    inter = peer_listener(config, config.inter_broker_listener_name)
    control = config.control_plane_listener_name
    return inter, (peer_listener(config, control) if control else inter)


def peer_listener(config: BrokerConfig, name: str) -> PeerListener:
    settings = config.listener_security_settings(name)
    context = None
    if settings.listener.security_protocol in TLS and config["zookeeper.connect"]:
        context = client_ssl_context(settings)
    return PeerListener(name, context, config.peer_login(name))
