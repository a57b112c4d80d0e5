"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): stored credentials and the server
side of one exchange.

Owns: ``ScramCredential`` (salt, iterations, StoredKey, ServerKey: never the password),
the ways to make one (``new_credential`` from a password, ``credential_from_salted_password``
from what AlterUserScramCredentials carries), ``password_matches`` (how SASL/PLAIN checks a
password against a stored SCRAM credential) and ``ScramExchange``, the server's state
machine for one exchange. The client-first message's parsing (SASLprep, name escapes) and
the server-first message are the ``scramp`` library's, the proof check ours (see
``ScramExchange.final``); this module adds Kafka's rules around it (the mechanisms and
their wire ids, iteration bounds, the ``tokenauth`` extension refused, an unknown user
indistinguishable from a wrong password). Pure computation: PBKDF2 (``new_credential``,
``password_matches``) takes milliseconds, so callers on an event loop run those on a
worker thread.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass

import scramp
from scramp.utils import saslprep

from .errors import AuthenticationFailed

MECHANISMS: dict[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
"""Mechanism name -> its id in Describe/AlterUserScramCredentials (Kafka's ScramMechanism)."""
MECHANISM_NAMES = {v: k for k, v in MECHANISMS.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # RFC 7677's minimum, also Kafka's
MAX_ITERATIONS = 16384  # Kafka's maximum
# The secret decoy credentials of unknown users are derived from (one per process).
_DECOY_SECRET = os.urandom(32)


class CredentialError(ValueError):
    """A credential that cannot be stored (mechanism, iterations, empty salt ...)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def check_mechanism(mechanism: str) -> None:
    if mechanism not in MECHANISMS:
        raise CredentialError(
            f"unknown SCRAM mechanism {mechanism!r}; expected one of {', '.join(MECHANISMS)}"
        )


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise CredentialError(
            f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, not {iterations}"
        )


def _keys(mechanism: str, salted_password: bytes) -> tuple[bytes, bytes]:
    digest = _HASHES[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", digest)
    return stored_key, server_key


def new_credential(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    """A credential for ``password`` with a fresh random salt (PBKDF2: slow on purpose)."""
    check_mechanism(mechanism)
    check_iterations(iterations)
    if not password:
        raise CredentialError("the password must not be empty")
    try:
        salt_out, stored_key, server_key, i = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=iterations, salt=salt
        )
    except scramp.ScramException as exc:  # SASLprep refuses the password (RFC 4013)
        raise CredentialError(f"unusable password: {exc.args[0]}") from None
    return ScramCredential(mechanism, salt_out, i, stored_key, server_key)


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The stored form of an AlterUserScramCredentials upsertion (SaltedPassword = Hi(...))."""
    check_mechanism(mechanism)
    check_iterations(iterations)
    if not salt:
        raise CredentialError("the salt must not be empty")
    if len(salted_password) != hashlib.new(_HASHES[mechanism]).digest_size:
        raise CredentialError(f"the salted password has the wrong length for {mechanism}")
    stored_key, server_key = _keys(mechanism, salted_password)
    return ScramCredential(mechanism, salt, iterations, stored_key, server_key)


def password_matches(credential: ScramCredential | None, password: str) -> bool:
    """Whether ``password`` derives ``credential``'s StoredKey (for SASL/PLAIN). With no
    credential the same work is done on a decoy, so the time taken says nothing."""
    cred = credential or _decoy("", "SCRAM-SHA-256")
    try:  # as SCRAM derives it (RFC 5802 normalizes the password with SASLprep)
        prepared = saslprep(password)
    except scramp.ScramException:
        prepared = password
    salted = hashlib.pbkdf2_hmac(
        _HASHES[cred.mechanism], prepared.encode("utf-8"), cred.salt, cred.iterations
    )
    stored_key, _ = _keys(cred.mechanism, salted)
    return hmac.compare_digest(stored_key, cred.stored_key) and credential is not None


def _decoy(user: str, mechanism: str) -> ScramCredential:
    """A credential nobody can match, stable per user: an unknown user gets the same salt
    on every attempt, as a known one does."""
    seed = hmac.digest(_DECOY_SECRET, f"{mechanism}\0{user}".encode(), "sha256")
    size = hashlib.new(_HASHES[mechanism]).digest_size
    return ScramCredential(mechanism, seed[:16], MIN_ITERATIONS, os.urandom(size), seed[:size])


Lookup = Callable[[str, str], "ScramCredential | None"]
"""(user name, mechanism) -> the stored credential, or None."""


class ScramExchange:
    """The server side of one SCRAM exchange: ``first`` takes the client-first message and
    returns the server-first, ``final`` takes the client-final and returns the server-final;
    then ``user`` is authenticated. Any failure raises ``AuthenticationFailed`` with a
    message that does not say whether the user exists."""

    def __init__(self, mechanism: str, lookup: Lookup, *, nonce: str | None = None) -> None:
        check_mechanism(mechanism)
        self.mechanism = mechanism
        self.user: str | None = None
        self._lookup = lookup
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info, s_nonce=nonce)
        self._known = False
        self._cred = _decoy("", mechanism)
        self._gs2_header = self._auth_prefix = self._nonce = ""

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        self.user = user
        cred = self._lookup(user, self.mechanism)
        self._known = cred is not None
        if cred is None:
            cred = _decoy(user, self.mechanism)
        self._cred = cred
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def first(self, client_first: bytes) -> bytes:
        text = _text(client_first)
        _check_client_first(text)
        try:
            self._server.set_client_first(text)
            server_first: str = self._server.get_server_first()
        except scramp.ScramException as exc:
            raise AuthenticationFailed(f"invalid SCRAM client-first message: {exc}") from None
        gs2_end = text.index(",", text.index(",") + 1) + 1
        self._gs2_header = text[:gs2_end]
        self._auth_prefix = f"{text[gs2_end:]},{server_first},"
        self._nonce = server_first.split(",", 1)[0][2:]
        return server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """Check the client's proof and answer the server signature.

        Written here rather than left to scramp: scramp (strictly RFC 5802) wants the
        client-final nonce to equal the server-first one, while Kafka only checks that it
        ends with it, and librdkafka 2.0.x (Debian's kcat) sends the client nonce twice.
        The proof is computed over the message as sent, so this is as safe as Kafka."""
        text = _text(client_final)
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        attrs = dict(a.split("=", 1) for a in without_proof.split(",") if "=" in a)
        try:
            proof = base64.b64decode(proof_b64, validate=True)
            binding = base64.b64decode(attrs.get("c", ""), validate=True)
        except ValueError:
            raise AuthenticationFailed("invalid SCRAM client-final message") from None
        if not sep or not without_proof.startswith("c=") or "r" not in attrs:
            raise AuthenticationFailed("invalid SCRAM client-final message")
        if binding != self._gs2_header.encode():
            raise AuthenticationFailed("SCRAM channel binding does not match the gs2 header")
        if not attrs["r"].endswith(self._nonce):
            raise AuthenticationFailed("invalid nonce in the SCRAM client-final message")
        cred = self._cred
        digest = _HASHES[self.mechanism]
        auth_message = (self._auth_prefix + without_proof).encode()
        signature = hmac.digest(cred.stored_key, auth_message, digest)
        if len(proof) != len(signature):
            raise AuthenticationFailed(self.invalid_credentials())
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not (
            hmac.compare_digest(hashlib.new(digest, client_key).digest(), cred.stored_key)
            and self._known
        ):
            raise AuthenticationFailed(self.invalid_credentials())
        server_signature = hmac.digest(cred.server_key, auth_message, digest)
        return b"v=" + base64.b64encode(server_signature)

    def invalid_credentials(self) -> str:
        return (
            "Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {self.mechanism}"
        )


def _text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationFailed("a SCRAM message must be UTF-8") from None


def _check_client_first(text: str) -> None:
    """Kafka's rules on the client-first message that scramp does not know: no channel
    binding (Kafka offers no -PLUS mechanism) and no delegation tokens (the ``tokenauth``
    extension). scramp refuses an authzid (Kafka allows one naming the user itself: no
    client we know sends it)."""
    parts = text.split(",")
    if len(parts) < 4:
        raise AuthenticationFailed("invalid SCRAM client-first message")
    if parts[0] not in ("n", "y"):
        raise AuthenticationFailed("SCRAM channel binding is not supported")
    for extension in parts[4:]:
        if extension.split("=", 1)[0] == "tokenauth":
            raise AuthenticationFailed("delegation tokens (tokenauth) are not supported")
