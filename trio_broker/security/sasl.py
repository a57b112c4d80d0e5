"""One connection's SASL state on a SASL listener (Kafka's SaslServerAuthenticator, sans I/O).

Owns: ``SaslState``, ``SaslSession`` and ``Admission``. The network layer feeds the session
the SaslHandshake and SaslAuthenticate requests (or, after a v0 handshake, the raw tokens)
and asks ``admit`` about every other request. The states::

    UNAUTHENTICATED --SaslHandshake v1--> AUTHENTICATING --done--> AUTHENTICATED
                    --SaslHandshake v0--> AUTHENTICATING_RAW --done--> AUTHENTICATED
    AUTHENTICATED --SaslHandshake--> AUTHENTICATING(_RAW)   (re-authentication, KIP-368)

Before authentication only ApiVersions and the SASL requests are admitted; after a
session's lifetime (``connections.max.reauth.ms``) only those again. A failed step raises
``AuthenticationFailed`` and the connection must be closed. PLAIN's step derives a PBKDF2
key: callers on an event loop run ``step`` on a worker thread.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from .errors import AuthenticationFailed
from .plain import parse_plain
from .scram import MECHANISMS, Lookup, ScramCredential, ScramExchange, password_matches

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_APIS = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})
SUPPORTED_MECHANISMS = ("PLAIN", *MECHANISMS)


class SaslState(enum.Enum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    AUTHENTICATING = "AUTHENTICATING"  # SaslAuthenticate requests carry the tokens
    AUTHENTICATING_RAW = "AUTHENTICATING_RAW"  # size-prefixed raw tokens (handshake v0)
    AUTHENTICATED = "AUTHENTICATED"


class Admission(enum.Enum):
    PASS = "pass"  # to the handlers
    UNAUTHENTICATED = "unauthenticated"  # close: not authenticated (yet)
    EXPIRED = "expired"  # close: the session's lifetime is over (KIP-368)


class SaslSession:
    def __init__(self, enabled: Sequence[str], lookup: Lookup, reauth_ms: int = 0) -> None:
        self.enabled = tuple(m for m in enabled if m in SUPPORTED_MECHANISMS)
        self.reauth_ms = reauth_ms
        self.state = SaslState.UNAUTHENTICATED
        self.mechanism: str | None = None
        self.user: str | None = None  # the user name of the exchange under way
        self.principal: str | None = None  # set once authenticated
        self.expires_at_ms: float | None = None
        self.authentications = 0
        self._lookup = lookup
        self._scram: ScramExchange | None = None

    @property
    def reauthenticating(self) -> bool:
        return self.principal is not None and self.state is not SaslState.AUTHENTICATED

    def admit(self, api_key: int, now_ms: float) -> Admission:
        """May a request other than the SASL ones pass now?"""
        if api_key == API_VERSIONS and self.state is not SaslState.AUTHENTICATING_RAW:
            return Admission.PASS
        if self.state is not SaslState.AUTHENTICATED:
            return Admission.UNAUTHENTICATED
        if self.expires_at_ms is not None and now_ms >= self.expires_at_ms:
            return Admission.EXPIRED
        return Admission.PASS

    def handshake(self, mechanism: str, version: int) -> bool:
        """A SaslHandshake: True if ``mechanism`` is enabled (the exchange may begin)."""
        if self.state not in (SaslState.UNAUTHENTICATED, SaslState.AUTHENTICATED):
            raise AuthenticationFailed(f"unexpected SaslHandshake in state {self.state.value}")
        if mechanism not in self.enabled:
            return False
        self.mechanism = mechanism
        self.user = None
        self._scram = None
        self.state = SaslState.AUTHENTICATING if version >= 1 else SaslState.AUTHENTICATING_RAW
        return True

    def step(self, token: bytes, now_ms: float) -> tuple[bytes, bool]:
        """One client token -> (the server's token, whether authentication is complete)."""
        if self.state not in (SaslState.AUTHENTICATING, SaslState.AUTHENTICATING_RAW):
            raise AuthenticationFailed("SaslAuthenticate before a SaslHandshake")
        mechanism = self.mechanism
        assert mechanism is not None
        if mechanism == "PLAIN":
            user, password = parse_plain(token)
            self.user = user
            if not password_matches(self._plain_credential(user), password):
                raise AuthenticationFailed("Authentication failed: Invalid username or password")
            return self._done(user, b"", now_ms)
        if self._scram is None:
            self._scram = ScramExchange(mechanism, self._lookup)
            try:
                return self._scram.first(token), False
            finally:
                self.user = self._scram.user
        server_final = self._scram.final(token)
        scram_user = self._scram.user
        assert scram_user is not None
        return self._done(scram_user, server_final, now_ms)

    def _plain_credential(self, user: str) -> ScramCredential | None:
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            cred = self._lookup(user, mechanism)
            if cred is not None:
                return cred
        return None

    def _done(self, user: str, token: bytes, now_ms: float) -> tuple[bytes, bool]:
        principal = f"User:{user}"
        if self.principal is not None and principal != self.principal:
            raise AuthenticationFailed(
                f"re-authentication must keep the principal ({self.principal}), not change it"
            )
        self.principal = principal
        self.state = SaslState.AUTHENTICATED
        self.expires_at_ms = now_ms + self.reauth_ms if self.reauth_ms > 0 else None
        self.authentications += 1
        self._scram = None
        return token, True
