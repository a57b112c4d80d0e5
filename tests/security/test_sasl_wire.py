"""SASL at the wire, where real clients hide it: only ApiVersions and SASL requests before
authentication, the failed-authentication delay, SaslHandshake v0 with raw tokens, the
session lifetime (KIP-368) and re-authentication on the same connection."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
import scramp

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from ..support.brokers import BrokerThread
from ..support.wire import WireClient
from .clients import wait_for
from .conftest import FAIL_DELAY_MS, PASSWORD, Pki, add_user, secure_settings

REAUTH_MS = 600


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    b = BrokerThread(
        tmp_path_factory.mktemp("wire"),
        secure_settings(pki, **{"connections.max.reauth.ms": str(REAUTH_MS)}),
    ).start()
    add_user(b, "alice", PASSWORD)
    add_user(b, "bob", "bob-secret")
    yield b
    b.stop()


def _metadata() -> MetadataRequest:
    return MetadataRequest(topics=[], allow_auto_topic_creation=False)


def _plain(client: WireClient, user: str, password: str, version: int = 2) -> Any:
    handshake = client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert handshake.error_code == ErrorCode.NONE
    token = f"\0{user}\0{password}".encode()
    return client.request(SaslAuthenticateRequest(auth_bytes=token), version)


def _counters(broker: BrokerThread) -> Any:
    assert broker.broker is not None
    return broker.broker.socket_server


def test_api_versions_before_authentication_lists_the_sasl_apis(broker: BrokerThread) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        versions = client.request(ApiVersionsRequest(), 3)
        keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert keys[17] == (0, 1) and keys[36] == (0, 2)
        assert keys[50] == (0, 0) and keys[51] == (0, 0)
        assert _plain(client, "alice", PASSWORD).error_code == ErrorCode.NONE
        assert client.request(_metadata(), 9).brokers


def test_request_before_authentication_closes_the_connection_logged_once(
    broker: BrokerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_broker.network")
    server = _counters(broker)
    before = server.counters.bad_requests.get("UnauthenticatedRequest", 0)
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        host, port = client.sock.getsockname()[:2]
        peer = f"{host}:{port}"
        client.send(_metadata(), 9)
        assert client.closed_by_peer()
    wait_for(lambda: server.counters.bad_requests.get("UnauthenticatedRequest", 0) == before + 1)
    lines = [r.getMessage() for r in caplog.records if peer in r.getMessage()]
    assert len(lines) == 1 and "before SASL authentication" in lines[0]


def test_failed_authentication_is_answered_after_the_delay_then_closed(
    broker: BrokerThread,
) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        start = time.monotonic()
        response = _plain(client, "alice", "wrong")
        elapsed = time.monotonic() - start
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "Invalid username or password" in response.error_message
        assert elapsed >= FAIL_DELAY_MS / 1000 * 0.9
        assert client.closed_by_peer()


def test_unsupported_mechanism_lists_the_enabled_ones(broker: BrokerThread) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        response = client.request(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.closed_by_peer()


def test_sasl_on_a_plaintext_listener_is_an_illegal_state(broker: BrokerThread) -> None:
    with WireClient(broker.address("PLAINTEXT")) as client:
        response = client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE


def _raw(client: WireClient, token: bytes) -> bytes:
    client.send_raw(struct.pack(">i", len(token)) + token)
    return client.read_frame()


def test_handshake_v0_exchanges_raw_tokens_plain(broker: BrokerThread) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        assert _raw(client, f"\0alice\0{PASSWORD}".encode()) == b""
        assert client.request(_metadata(), 9).brokers


def test_handshake_v0_exchanges_raw_tokens_scram(broker: BrokerThread) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        assert client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 0).error_code == 0
        scram = scramp.ScramClient(["SCRAM-SHA-512"], "alice", PASSWORD)
        scram.set_server_first(_raw(client, scram.get_client_first().encode()).decode())
        scram.set_server_final(_raw(client, scram.get_client_final().encode()).decode())
        assert client.request(_metadata(), 9).brokers


def test_session_expiry_closes_and_reauthentication_renews(broker: BrokerThread) -> None:
    address = broker.address("SASL_PLAINTEXT")
    with WireClient(address) as expiring, WireClient(address) as renewing:
        for client in (expiring, renewing):
            response = _plain(client, "alice", PASSWORD, version=1)
            assert response.session_lifetime_ms == REAUTH_MS
        time.sleep(REAUTH_MS / 1000 + 0.1)  # let the session lifetime run out
        # re-authentication on the same connection: the requests go on
        assert _plain(renewing, "alice", PASSWORD).error_code == ErrorCode.NONE
        assert renewing.request(_metadata(), 9).brokers
        # no re-authentication: the next request closes the connection
        expiring.send(_metadata(), 9)
        assert expiring.closed_by_peer()


def test_reauthentication_cannot_change_the_principal(broker: BrokerThread) -> None:
    with WireClient(broker.address("SASL_PLAINTEXT")) as client:
        assert _plain(client, "alice", PASSWORD).error_code == ErrorCode.NONE
        response = _plain(client, "bob", "bob-secret")
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "principal" in response.error_message
        assert client.closed_by_peer()


def test_confluent_kafka_reauthenticates(broker: BrokerThread, pki: Pki) -> None:
    from confluent_kafka import Producer

    from .conftest import client_config

    server = _counters(broker)
    before = server.auth_counters.reauthentications
    conf = client_config(broker, pki, "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256")
    producer = Producer(conf)
    delivered: list[Any] = []
    deadline = time.monotonic() + REAUTH_MS / 1000 * 3
    while time.monotonic() < deadline:  # keep producing across two session lifetimes
        producer.produce("reauth", b"x", on_delivery=lambda err, msg: delivered.append(err))
        producer.poll(0.1)
    assert producer.flush(10) == 0
    assert delivered and all(err is None for err in delivered)
    assert server.auth_counters.reauthentications > before
