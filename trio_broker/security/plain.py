"""SASL/PLAIN (RFC 4616): parsing the one client message.

Owns: ``parse_plain``. The password is checked against the stored SCRAM credential
(``scram.password_matches``): PLAIN and SCRAM share one credential store, so a user
created for SCRAM can also authenticate with PLAIN (over TLS, please).
"""

from __future__ import annotations

from .errors import AuthenticationFailed


def parse_plain(token: bytes) -> tuple[str, str]:
    """``[authzid] NUL authcid NUL passwd`` -> (user, password). As Kafka, an authzid is
    accepted only when it names the user itself."""
    try:
        authzid, user, password = token.decode("utf-8").split("\0")
    except (UnicodeDecodeError, ValueError):
        raise AuthenticationFailed(
            "invalid SASL/PLAIN message: expected [authzid] NUL user NUL password"
        ) from None
    if not user or not password:
        raise AuthenticationFailed("invalid SASL/PLAIN message: empty user name or password")
    if authzid and authzid != user:
        raise AuthenticationFailed("the SASL/PLAIN authorization id must be the user name")
    return user, password
