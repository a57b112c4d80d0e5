"""Kafka's per-listener security settings, ``listener.name.<listener>.<key>``: a listener's
own ``ssl.*`` keys and ``sasl.enabled.mechanisms`` win over the broker-wide ones, seen by
real clients; ``ssl.client.auth`` reaches SASL_SSL clients only with the listener prefix;
a prefixed key that would be ignored stops start-up with a message naming it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from trio_broker.server.config.broker_config import BrokerConfig
from trio_broker.server.config.configdef import ConfigError

from ..support.brokers import BrokerProcess, BrokerThread
from .clients import authenticates, first_error, kcat_round_trip
from .conftest import PASSWORD, Pki, add_user, client_config, secure_settings

# librdkafka's _TRANSPORT, _SSL and _ALL_BROKERS_DOWN: the client cannot connect
CANNOT_CONNECT = (-195, -181, -187)
AUTHENTICATION = -169  # librdkafka's _AUTHENTICATION
TWO_LISTENERS = {
    "listeners": "SSL://127.0.0.1:9094,SASL_SSL://127.0.0.1:9095",
    "ssl.keystore.location": "broker.pem",
}

# ------------------------------------------------------------------ configuration


def error_of(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        BrokerConfig(settings)
    return info.value


@pytest.mark.parametrize(
    ("extra", "key", "reason"),
    [
        (
            {"listener.name.ssl2.ssl.client.auth": "required"},
            "listener.name.ssl2.ssl.client.auth",
            "no listener SSL2 in listeners (SSL, SASL_SSL)",
        ),
        (
            {"listener.name.SASL_SSL.ssl.client.auth": "required"},
            "listener.name.SASL_SSL.ssl.client.auth",
            "listener names are lower case here, as in Kafka "
            "(listener.name.sasl_ssl.ssl.client.auth)",
        ),
        (
            {"listener.name.ssl.ssl.client.auht": "required"},
            "listener.name.ssl.ssl.client.auht",
            "did you mean listener.name.ssl.ssl.client.auth?",
        ),
        (
            {"listener.name.ssl.num.io.threads": "4"},
            "listener.name.ssl.num.io.threads",
            "num.io.threads cannot be set per listener",
        ),
        (
            {"listener.name.ssl.sasl.enabled.mechanisms": "PLAIN"},
            "listener.name.ssl.sasl.enabled.mechanisms",
            "listener SSL uses SSL, which has no SASL",
        ),
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092",
                "listener.name.plaintext.ssl.keystore.location": "broker.pem",
            },
            "listener.name.plaintext.ssl.keystore.location",
            "listener PLAINTEXT uses PLAINTEXT, which has no TLS",
        ),
        (
            {"listener.name.sasl_ssl.ssl.client.auth": "maybe"},
            "listener.name.sasl_ssl.ssl.client.auth",
            "expected one of required, requested, none",
        ),
        (
            {"listener.name.sasl_ssl.sasl.enabled.mechanisms": ""},
            "listener.name.sasl_ssl.sasl.enabled.mechanisms",
            "listener SASL_SSL uses SASL_SSL, which needs a mechanism",
        ),
        (
            {"ssl.keystore.location": None, "listener.name.ssl.ssl.keystore.location": "a.pem"},
            "listeners",
            "listener SASL_SSL uses SASL_SSL, which needs a key store",
        ),
        (
            {"listener.name.ssl.ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"},
            "listener.name.ssl.ssl.keystore.key",
            "not both (set: ssl.keystore.location, listener.name.ssl.ssl.keystore.key)",
        ),
    ],
)
def test_a_listener_key_that_would_be_ignored_is_an_error_naming_it(
    extra: dict[str, str | None], key: str, reason: str
) -> None:
    settings = {k: v for k, v in {**TWO_LISTENERS, **extra}.items() if v is not None}
    err = error_of(settings)
    assert err.key == key
    assert reason in err.reason


def test_a_listener_uses_its_own_settings_over_the_broker_wide_ones() -> None:
    config = BrokerConfig(
        {
            **TWO_LISTENERS,
            "ssl.truststore.location": "ca.pem",
            "ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.ssl.ssl.keystore.location": "ssl-only.pem",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        }
    )
    ssl, sasl_ssl = (config.listener_security_settings(n) for n in ("SSL", "SASL_SSL"))
    assert ssl["ssl.keystore.location"] == "ssl-only.pem"
    assert ssl.name("ssl.keystore.location") == "listener.name.ssl.ssl.keystore.location"
    assert sasl_ssl["ssl.keystore.location"] == "broker.pem"
    assert sasl_ssl["sasl.enabled.mechanisms"] == ("SCRAM-SHA-512",)
    # ssl.client.auth: the broker-wide value on SSL, never on SASL_SSL (as in Kafka)
    assert ssl["ssl.client.auth"] == "required"
    assert sasl_ssl["ssl.client.auth"] == "none"
    prefixed = config.with_updates({}).listener_security_settings("sasl_ssl")
    assert prefixed["ssl.truststore.location"] == "ca.pem"


def test_a_listener_password_is_masked_like_the_broker_wide_one() -> None:
    config = BrokerConfig({**TWO_LISTENERS, "listener.name.ssl.ssl.key.password": "s3cret"})
    assert config.originals["listener.name.ssl.ssl.key.password"] == "[hidden]"
    assert config.effective()["listener.name.ssl.ssl.key.password"] == "[hidden]"
    assert "s3cret" not in repr(config)
    err = error_of({"listener.name.nope.ssl.key.password": "s3cret"})
    assert "s3cret" not in str(err)


# ------------------------------------------------------------------ real clients


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A second CA and a broker key store it issued: (CA certificate, key store)."""
    d = tmp_path_factory.mktemp("other-ca")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(d / "ks.pem"))
    return d / "ca.pem", d / "ks.pem"


@pytest.fixture(scope="module")
def per_listener_broker(
    pki: Pki, other_ca: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerThread]:
    """Broker-wide: certificates requested, every mechanism. SASL_SSL: a certificate
    required and SCRAM-SHA-512 only. SSL: its own key store, from the other CA."""
    settings = secure_settings(
        pki,
        **{
            "ssl.client.auth": "none",
            "listener.name.sasl_ssl.ssl.client.auth": "required",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.ssl.ssl.keystore.location": str(other_ca[1]),
        },
    )
    b = BrokerThread(tmp_path_factory.mktemp("per-listener"), settings).start()
    add_user(b, "alice", PASSWORD)
    yield b
    b.stop()


def test_sasl_ssl_with_its_own_client_auth_refuses_a_client_without_a_certificate(
    per_listener_broker: BrokerThread, pki: Pki, tmp_path: Path
) -> None:
    conf = client_config(per_listener_broker, pki, "SASL_SSL", mechanism="SCRAM-SHA-512")
    assert first_error(conf).code() in CANNOT_CONNECT
    with_cert = client_config(
        per_listener_broker, pki, "SASL_SSL", mechanism="SCRAM-SHA-512", client_cert=True
    )
    lines = kcat_round_trip(with_cert, "own-client-auth", tmp_path, count=3)
    assert lines == ["line 0", "line 1", "line 2"]


def test_sasl_ssl_offers_only_its_own_mechanisms(
    per_listener_broker: BrokerThread, pki: Pki
) -> None:
    plain = client_config(per_listener_broker, pki, "SASL_SSL", mechanism="PLAIN", client_cert=True)
    plain["reconnect.backoff.ms"] = 10000  # one attempt while we look
    assert first_error(plain).code() == AUTHENTICATION
    # SASL_PLAINTEXT keeps the broker-wide list
    assert authenticates(
        client_config(per_listener_broker, pki, "SASL_PLAINTEXT", mechanism="PLAIN")
    )


def test_ssl_serves_its_own_key_store(
    per_listener_broker: BrokerThread, pki: Pki, other_ca: tuple[Path, Path], tmp_path: Path
) -> None:
    conf = client_config(per_listener_broker, pki, "SSL")
    conf["ssl.ca.location"] = str(other_ca[0])  # trusts the other CA only
    assert kcat_round_trip(conf, "own-key-store", tmp_path, count=2) == ["line 0", "line 1"]
    conf["ssl.ca.location"] = str(pki.ca)  # the broker-wide key store's CA: not this one
    assert first_error(conf).code() in CANNOT_CONNECT


def test_a_listener_key_store_that_cannot_be_loaded_stops_start_up_naming_the_key(
    pki: Pki, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.pem"
    overrides = [
        f"{k}={v}"
        for k, v in {
            **secure_settings(pki),
            "log.dirs": str(tmp_path / "data"),
            "listener.name.sasl_ssl.ssl.keystore.location": str(missing),
        }.items()
    ]
    code, lines = BrokerProcess(tmp_path / "data", overrides).run_to_failure()
    assert code == 2
    assert lines == [
        "trio-broker: configuration error: "
        f"listener.name.sasl_ssl.ssl.keystore.location={missing}: no such file"
    ]
