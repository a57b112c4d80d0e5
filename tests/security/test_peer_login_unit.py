"""The broker's side as a client of another broker, on its own: JAAS entries parsed as
Kafka's ``JaasConfig`` reads them, and ``SaslClient`` against the server's ``SaslSession``
for each mechanism (a wrong password refused; a SCRAM server that does not know the
password cannot pass as the peer)."""

from __future__ import annotations

import re

import pytest

from trio_broker.security.errors import AuthenticationFailed
from trio_broker.security.jaas import JaasError, parse_jaas_config
from trio_broker.security.sasl import SaslSession
from trio_broker.security.sasl_client import SaslClient, SaslLogin
from trio_broker.security.scram import ScramCredential, new_credential

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.mark.parametrize(
    ("text", "options"),
    [
        (
            f'{PLAIN_MODULE} required username="admin" password="admin-secret";',
            {
                "username": "admin",
                "password": "admin-secret",
            },
        ),
        # bare words, escapes, comments, other options kept, several lines
        (
            f"{PLAIN_MODULE} required\n  username=admin // the broker\n"
            '  password="a\\"b;c" /* quoted */ user_alice="x";',
            {"username": "admin", "password": 'a"b;c', "user_alice": "x"},
        ),
        ("M Required;", {}),
    ],
)
def test_jaas_entries(text: str, options: dict[str, str]) -> None:
    entry = parse_jaas_config(text)
    assert entry.options == options
    assert entry.control_flag in ("required",)
    assert "secret" not in repr(entry)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "expected: <LoginModule class>"),
        (f"{PLAIN_MODULE} required username=admin", "must end with ';'"),
        (f"{PLAIN_MODULE} always;", "control flag 'always'"),
        (f"{PLAIN_MODULE} required username;", "expected option=value"),
        (f"{PLAIN_MODULE} required; {PLAIN_MODULE} required;", "exactly one"),
        (f'{PLAIN_MODULE} required username="admin;', "unexpected character"),
    ],
)
def test_malformed_jaas_entries(text: str, why: str) -> None:
    with pytest.raises(JaasError, match=re.escape(why)):
        parse_jaas_config(text)


def _store(password: str) -> dict[str, ScramCredential]:
    return {m: new_credential(m, password) for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def _exchange(mechanism: str, client_password: str, server_password: str) -> str | None:
    """Run one exchange; the server's principal (None: the client gave up first)."""
    creds = _store(server_password)
    server = SaslSession([mechanism], lambda user, m: creds.get(m) if user == "broker" else None)
    assert server.handshake(mechanism, 1)
    client = SaslClient(SaslLogin(mechanism, "broker", client_password))
    token: bytes | None = client.first()
    while token is not None:
        answer, _ = server.step(token, 0)
        token = client.step(answer)
    return server.principal


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_client_logs_in(mechanism: str) -> None:
    assert _exchange(mechanism, "broker-secret", "broker-secret") == "User:broker"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_refused_by_the_server(mechanism: str) -> None:
    with pytest.raises(AuthenticationFailed, match=r"(?i)invalid"):
        _exchange(mechanism, "wrong", "broker-secret")


def test_a_scram_server_without_the_password_cannot_pass_as_the_peer() -> None:
    honest = SaslSession(["SCRAM-SHA-256"], lambda u, m: _store("broker-secret").get(m))
    honest.handshake("SCRAM-SHA-256", 1)
    client = SaslClient(SaslLogin("SCRAM-SHA-256", "broker", "broker-secret"))
    first = client.first()
    server_first, _ = honest.step(first, 0)
    client.step(server_first)
    forged = b"v=" + b"A" * 44  # a server signature made up without the stored key
    with pytest.raises(AuthenticationFailed, match="SCRAM"):
        client.step(forged)
