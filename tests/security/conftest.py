"""Fixtures of the security tests: a certificate authority made at test time (trustme),
the broker's and a client's certificates as PEM files, and a broker with every kind of
listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) and two SCRAM users."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme

from trio_broker.security.scram import new_credential

from ..support.brokers import BrokerThread

PASSWORD = "alice-secret"
FAIL_DELAY_MS = 300


@dataclass(frozen=True)
class Pki:
    ca: Path  # the CA certificate (PEM): the broker's trust store, the clients' CA
    server: Path  # the broker's key and certificate chain in one PEM file
    client_key: Path
    client_cert: Path
    client_subject: str  # RFC 2253 form, as the broker makes the principal
    other_key: Path  # a client certificate from a CA the broker does not trust
    other_cert: Path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    server = ca.issue_cert("127.0.0.1", "localhost")
    server.private_key_and_cert_chain_pem.write_to_path(str(d / "server.pem"))
    client = ca.issue_cert(
        common_name="alice", organization_name="test", organization_unit_name="dev"
    )
    client.private_key_pem.write_to_path(str(d / "client.key"))
    client.cert_chain_pems[0].write_to_path(str(d / "client.pem"))
    stranger = trustme.CA().issue_cert(common_name="mallory")
    stranger.private_key_pem.write_to_path(str(d / "other.key"))
    stranger.cert_chain_pems[0].write_to_path(str(d / "other.pem"))
    return Pki(
        ca=d / "ca.pem",
        server=d / "server.pem",
        client_key=d / "client.key",
        client_cert=d / "client.pem",
        client_subject="CN=alice,OU=dev,O=test",
        other_key=d / "other.key",
        other_cert=d / "other.pem",
    )


def secure_settings(pki: Pki, **extra: Any) -> dict[str, Any]:
    return {
        "listeners": (
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
            "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
        ),
        "ssl.keystore.location": str(pki.server),
        "ssl.truststore.location": str(pki.ca),
        "ssl.client.auth": "requested",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "connection.failed.authentication.delay.ms": str(FAIL_DELAY_MS),
        **extra,
    }


def add_user(broker: BrokerThread, user: str, password: str) -> None:
    assert broker.broker is not None
    broker.broker.scram.apply(
        [(user, new_credential(m, password)) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    )


@pytest.fixture(scope="module")
def secure_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """One broker for a module's tests, with user ``alice`` (password ``PASSWORD``)."""
    b = BrokerThread(tmp_path_factory.mktemp("data"), secure_settings(pki)).start()
    add_user(b, "alice", PASSWORD)
    yield b
    b.stop()


def client_config(
    broker: BrokerThread,
    pki: Pki,
    protocol: str,
    *,
    mechanism: str | None = None,
    user: str = "alice",
    password: str = PASSWORD,
    client_cert: bool = False,
) -> dict[str, Any]:
    """librdkafka's (confluent-kafka's, kcat's) settings for one listener."""
    conf: dict[str, Any] = {
        "bootstrap.servers": broker.address(protocol),
        "security.protocol": protocol,
    }
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(pki.ca)
        if client_cert:
            conf["ssl.certificate.location"] = str(pki.client_cert)
            conf["ssl.key.location"] = str(pki.client_key)
    if "SASL" in protocol:
        conf["sasl.mechanisms"] = mechanism
        conf["sasl.username"] = user
        conf["sasl.password"] = password
    return conf
