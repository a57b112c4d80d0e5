"""The SCRAM and SASL state machines on their own: RFC 7677's test vector, failures that
do not tell an unknown user from a wrong password, Kafka's rules (iterations, tokenauth),
and the session's admission rules (before authentication, expiry, re-authentication)."""

from __future__ import annotations

import base64
import hashlib

import pytest
import scramp

from trio_broker.security.errors import AuthenticationFailed
from trio_broker.security.sasl import Admission, SaslSession, SaslState
from trio_broker.security.scram import (
    CredentialError,
    ScramCredential,
    ScramExchange,
    credential_from_salted_password,
    new_credential,
    password_matches,
)

# RFC 7677, section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
NONCE = "rOprNGfwEbeRWgbNEkqO" + SERVER_NONCE
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = f"r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
CLIENT_FINAL = f"c=biws,r={NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=".encode()
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _store(*creds: tuple[str, ScramCredential]):  # type: ignore[no-untyped-def]
    table = {(user, c.mechanism): c for user, c in creds}
    return lambda user, mechanism: table.get((user, mechanism))


def test_rfc7677_test_vector() -> None:
    cred = new_credential("SCRAM-SHA-256", "pencil", 4096, salt=SALT)
    exchange = ScramExchange("SCRAM-SHA-256", _store(("user", cred)), nonce=SERVER_NONCE)
    assert exchange.first(CLIENT_FIRST) == SERVER_FIRST
    assert exchange.final(CLIENT_FINAL) == SERVER_FINAL
    assert exchange.user == "user"


def test_wrong_password_and_unknown_user_fail_alike() -> None:
    cred = new_credential("SCRAM-SHA-256", "other", 4096, salt=SALT)
    messages = []
    for lookup in (_store(("user", cred)), _store()):
        exchange = ScramExchange("SCRAM-SHA-256", lookup, nonce=SERVER_NONCE)
        first = exchange.first(CLIENT_FIRST)
        assert first.startswith(f"r={NONCE},s=".encode())
        with pytest.raises(AuthenticationFailed) as caught:
            exchange.final(CLIENT_FINAL)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "invalid credentials" in messages[0]


def test_unknown_user_sees_the_same_salt_every_time() -> None:
    firsts = [ScramExchange("SCRAM-SHA-512", _store()).first(CLIENT_FIRST) for _ in range(2)]
    salts = [f.split(b",")[1] for f in firsts]
    assert salts[0] == salts[1]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scramp_client_authenticates(mechanism: str) -> None:
    lookup = _store(("bob", new_credential(mechanism, "hunter2", 8192)))
    client = scramp.ScramClient([mechanism], "bob", "hunter2")
    exchange = ScramExchange(mechanism, lookup)
    client.set_server_first(exchange.first(client.get_client_first().encode()).decode())
    client.set_server_final(exchange.final(client.get_client_final().encode()).decode())


def test_tokenauth_extension_is_refused() -> None:
    exchange = ScramExchange("SCRAM-SHA-256", _store())
    with pytest.raises(AuthenticationFailed, match="tokenauth"):
        exchange.first(b"n,,n=user,r=abc,tokenauth=true")


def test_salted_password_gives_the_same_credential_as_the_password() -> None:
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", SALT, 4096)
    via_salted = credential_from_salted_password("SCRAM-SHA-512", SALT, salted, 4096)
    assert via_salted == new_credential("SCRAM-SHA-512", "pw", 4096, salt=SALT)
    assert password_matches(via_salted, "pw")
    assert not password_matches(via_salted, "pW")
    assert not password_matches(None, "pw")


@pytest.mark.parametrize("iterations", [4095, 16385])
def test_iterations_out_of_bounds_are_refused(iterations: int) -> None:
    with pytest.raises(CredentialError, match="iterations"):
        new_credential("SCRAM-SHA-256", "pw", iterations)


def test_session_admission_expiry_and_reauthentication() -> None:
    lookup = _store(
        ("alice", new_credential("SCRAM-SHA-256", "pw")),
        ("mallory", new_credential("SCRAM-SHA-256", "pw")),
    )
    session = SaslSession(("PLAIN",), lookup, reauth_ms=1000)
    assert session.admit(18, 0) is Admission.PASS  # ApiVersions
    assert session.admit(3, 0) is Admission.UNAUTHENTICATED  # Metadata
    assert not session.handshake("SCRAM-SHA-256", 1)  # not enabled
    assert session.handshake("PLAIN", 1)
    token, done = session.step(b"\0alice\0pw", now_ms=0)
    assert (token, done, session.principal) == (b"", True, "User:alice")
    assert session.admit(3, 999) is Admission.PASS
    assert session.admit(3, 1000) is Admission.EXPIRED
    assert session.handshake("PLAIN", 1)  # re-authentication
    assert session.state is SaslState.AUTHENTICATING
    session.step(b"\0alice\0pw", now_ms=1000)
    assert session.admit(3, 1500) is Admission.PASS
    session.handshake("PLAIN", 1)
    with pytest.raises(AuthenticationFailed, match="principal"):  # not as somebody else
        session.step(b"\0mallory\0pw", now_ms=1600)
