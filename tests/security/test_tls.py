"""TLS listeners with real clients: confluent-kafka and kcat over SSL, with and without a
client certificate; the certificate's subject is the principal; a missing or untrusted
client certificate where one is required fails the handshake, logged once."""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
import ssl
import time
from pathlib import Path

import pytest

from trio_broker.server.config.broker_config import load_config
from trio_broker.server.config.configdef import ConfigError
from trio_broker.server.lifecycle.broker import Broker

from ..support.brokers import BrokerThread, overrides_for
from .clients import first_error, kcat_round_trip, principals, round_trip, wait_for
from .conftest import Pki, client_config, secure_settings

# librdkafka's _TRANSPORT, _SSL and _ALL_BROKERS_DOWN: the client cannot connect
CANNOT_CONNECT = (-195, -181, -187)


def test_confluent_kafka_round_trip_over_ssl_without_client_certificate(
    secure_broker: BrokerThread, pki: Pki
) -> None:
    conf = client_config(secure_broker, pki, "SSL")
    assert round_trip(conf, "tls-anon") == [f"tls-anon-{i}".encode() for i in range(5)]


def test_client_certificate_subject_is_the_principal(secure_broker: BrokerThread, pki: Pki) -> None:
    conf = client_config(secure_broker, pki, "SSL", client_cert=True)
    assert len(round_trip(conf, "tls-cert")) == 5
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(conf)
    admin.list_topics(timeout=10)  # keeps a connection open while we look
    assert f"User:{pki.client_subject}" in principals(secure_broker, "SSL")


def _handshake_failures(broker: BrokerThread) -> int:
    assert broker.broker is not None
    return broker.broker.socket_server.auth_counters.tls_handshake_failures


@pytest.fixture(scope="module")
def strict_broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    b = BrokerThread(
        tmp_path_factory.mktemp("strict"), secure_settings(pki, **{"ssl.client.auth": "required"})
    ).start()
    yield b
    b.stop()


def test_required_client_certificate_missing_fails_and_is_logged_once(
    strict_broker: BrokerThread, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_broker.security")
    err = first_error(client_config(strict_broker, pki, "SSL"))
    assert err.code() in CANNOT_CONNECT
    # one plain TLS client: exactly one log line naming its address
    before = _handshake_failures(strict_broker)
    host, port = strict_broker.address("SSL").split(":")
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    with (
        socket.create_connection((host, int(port))) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as tls,
    ):
        # TLS 1.3: the client finishes first; the refusal arrives on the first read
        try:
            tls.sendall(b"\0\0\0\0")
            data = tls.recv(10)
        except (ssl.SSLError, ConnectionError):
            data = b""
        assert data == b""  # refused: nothing but the close
    wait_for(lambda: _handshake_failures(strict_broker) == before + 1)
    lines = [r.getMessage() for r in caplog.records if "TLS handshake" in r.getMessage()]
    assert lines and all("failed" in line for line in lines)
    assert len(lines) == _handshake_failures(strict_broker)


def test_required_client_certificate_present_round_trips(
    strict_broker: BrokerThread, pki: Pki
) -> None:
    conf = client_config(strict_broker, pki, "SSL", client_cert=True)
    assert len(round_trip(conf, "tls-required")) == 5


def test_untrusted_client_certificate_is_refused(strict_broker: BrokerThread, pki: Pki) -> None:
    conf = client_config(strict_broker, pki, "SSL")
    conf["ssl.certificate.location"] = str(pki.other_cert)
    conf["ssl.key.location"] = str(pki.other_key)
    assert first_error(conf).code() in CANNOT_CONNECT


def test_kcat_produces_and_consumes_over_ssl(
    secure_broker: BrokerThread, pki: Pki, tmp_path: Path
) -> None:
    conf = client_config(secure_broker, pki, "SSL", client_cert=True)
    assert kcat_round_trip(conf, "kcat-tls", tmp_path) == [f"line {i}" for i in range(20)]


def test_plaintext_client_on_a_tls_listener_is_closed(
    secure_broker: BrokerThread, pki: Pki
) -> None:
    conf = client_config(secure_broker, pki, "SSL")
    conf["security.protocol"] = "PLAINTEXT"
    assert first_error(conf).code() in CANNOT_CONNECT


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"ssl.keystore.location": "missing.pem"}, "ssl.keystore.location"),
        ({"ssl.keystore.location": "ca.pem"}, "ssl.keystore.location"),  # no private key
        ({"ssl.truststore.location": "server.pem.nope"}, "ssl.truststore.location"),
        (
            {"ssl.keystore.key": "junk", "ssl.keystore.certificate.chain": "junk"},
            "ssl.keystore.key",
        ),
    ],
)
def test_bad_key_store_stops_start_up_naming_the_key(
    pki: Pki, tmp_path: Path, settings: dict[str, str], key: str
) -> None:
    base = secure_settings(pki)
    if "ssl.keystore.key" in settings:
        del base["ssl.keystore.location"]
    for k, v in settings.items():
        base[k] = str(pki.ca.parent / v) if v.endswith((".pem", ".nope")) else v
    config = load_config(None, overrides_for(tmp_path, **base))
    with pytest.raises(ConfigError) as caught:
        Broker(config)
    assert caught.value.key == key


def test_inline_pem_key_store(pki: Pki, tmp_path: Path) -> None:
    text = pki.server.read_text()
    end = re.search(r"-----END [A-Z ]*PRIVATE KEY-----\n", text)
    assert end is not None
    settings = secure_settings(pki)
    del settings["ssl.keystore.location"]
    settings["ssl.keystore.key"] = text[: end.end()]
    settings["ssl.keystore.certificate.chain"] = text[end.end() :]
    b = BrokerThread(tmp_path / "data", settings).start()
    try:
        assert len(round_trip(client_config(b, pki, "SSL"), "inline-pem")) == 5
    finally:
        b.stop()


def test_a_silent_client_holds_up_no_other_tls_connection(
    secure_broker: BrokerThread, pki: Pki
) -> None:
    host, port = secure_broker.address("SSL").split(":")
    with socket.create_connection((host, int(port))):  # connects, never says hello
        conf = client_config(secure_broker, pki, "SSL")
        assert len(round_trip(conf, "tls-beside-silent", 2)) == 2


def test_a_client_that_never_completes_the_handshake_is_closed_at_the_deadline(
    pki: Pki, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_broker.security")
    b = BrokerThread(tmp_path / "data", secure_settings(pki)).start()
    try:
        assert b.broker is not None
        listener = b.broker.socket_server.listener("SSL")

        def shorten() -> None:  # the 10 s deadline, shortened for the test
            listener.update_security(
                dataclasses.replace(listener.context.security, tls_handshake_timeout_s=0.3)
            )

        b.call(shorten)
        host, port = b.address("SSL").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as silent:
            start = time.monotonic()
            assert silent.recv(1) == b""  # closed by the broker
            assert time.monotonic() - start >= 0.25  # not before the deadline
        wait_for(lambda: _handshake_failures(b) == 1)
        assert [r.getMessage() for r in caplog.records if "no TLS handshake" in r.getMessage()]
    finally:
        b.stop()
