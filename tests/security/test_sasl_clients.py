"""SASL with real clients: confluent-kafka over SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512) and SASL_SSL, kcat over SASL_SSL with SCRAM, kafka-python with SCRAM; a
wrong password or an unknown user gives the client an authentication error and the broker
one log line per failed attempt, naming the user and mechanism, never the password."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from ..support.brokers import BrokerThread
from .clients import first_error, kcat_round_trip, principals, round_trip
from .conftest import PASSWORD, Pki, client_config

AUTHENTICATION = -169  # librdkafka's _AUTHENTICATION


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "PLAIN"),
    ],
)
def test_confluent_kafka_round_trip(
    secure_broker: BrokerThread, pki: Pki, protocol: str, mechanism: str
) -> None:
    conf = client_config(secure_broker, pki, protocol, mechanism=mechanism)
    topic = f"sasl-{protocol}-{mechanism}".lower()
    assert round_trip(conf, topic) == [f"{topic}-{i}".encode() for i in range(5)]


def test_sasl_principal_is_the_user(secure_broker: BrokerThread, pki: Pki) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(secure_broker, pki, "SASL_SSL", mechanism="SCRAM-SHA-256"))
    admin.list_topics(timeout=10)  # the connection stays open while we look
    assert "User:alice" in principals(secure_broker, "SASL_SSL")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", PASSWORD)])
def test_bad_credentials_give_an_authentication_error_logged_once_per_attempt(
    secure_broker: BrokerThread,
    pki: Pki,
    caplog: pytest.LogCaptureFixture,
    mechanism: str,
    user: str,
    password: str,
) -> None:
    caplog.set_level(logging.WARNING, logger="trio_broker.security")
    conf = client_config(
        secure_broker, pki, "SASL_PLAINTEXT", mechanism=mechanism, user=user, password=password
    )
    conf["reconnect.backoff.ms"] = 10000  # one attempt while we look
    err = first_error(conf)
    assert err.code() == AUTHENTICATION
    # the same words for an unknown user as for a wrong password
    assert "invalid" in err.str().lower() and user not in err.str()
    lines = [r.getMessage() for r in caplog.records if "failed authentication" in r.getMessage()]
    assert len(lines) == 1
    assert f"mechanism {mechanism}" in lines[0] and repr(user) in lines[0]
    assert password not in caplog.text


def test_kcat_over_sasl_ssl_with_scram(
    secure_broker: BrokerThread, pki: Pki, tmp_path: Path
) -> None:
    conf = client_config(secure_broker, pki, "SASL_SSL", mechanism="SCRAM-SHA-256")
    assert kcat_round_trip(conf, "kcat-scram", tmp_path) == [f"line {i}" for i in range(20)]


def test_kcat_with_a_wrong_password_reports_authentication_failure(
    secure_broker: BrokerThread, pki: Pki
) -> None:
    conf = client_config(
        secure_broker, pki, "SASL_SSL", mechanism="SCRAM-SHA-512", password="not-it"
    )
    args = [f"-X{k}={v}" for k, v in conf.items() if k != "bootstrap.servers"]
    out = subprocess.run(
        ["kcat", "-L", "-b", conf["bootstrap.servers"], *args, "-m", "2"],
        timeout=30,
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "Authentication failed" in out.stderr


def test_kafka_python_with_scram(secure_broker: BrokerThread, pki: Pki) -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=secure_broker.address("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
        request_timeout_ms=10000,
    )
    try:
        admin.create_topics([NewTopic("kafka-python-scram", 1, 1)])
        assert "kafka-python-scram" in admin.list_topics()
    finally:
        admin.close()


def test_an_unsupported_enabled_mechanism_stops_start_up(pki: Pki, tmp_path: Path) -> None:
    from trio_broker.server.config.broker_config import load_config
    from trio_broker.server.config.configdef import ConfigError
    from trio_broker.server.lifecycle.broker import Broker

    from ..support.brokers import overrides_for
    from .conftest import secure_settings

    settings = secure_settings(pki, **{"sasl.enabled.mechanisms": "SCRAM-SHA-256,GSSAPI"})
    config = load_config(None, overrides_for(tmp_path, **settings))
    with pytest.raises(ConfigError, match="GSSAPI") as caught:
        Broker(config)
    assert caught.value.key == "sasl.enabled.mechanisms"
