"""SaslHandshake (17) and SaslAuthenticate (36): choosing a SASL mechanism, then its exchange."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, field


class SaslHandshakeRequest(Request, api_key=17, versions="0-1", flexible="none"):
    mechanism: str = field("string")


class SaslHandshakeResponse(Response, api_key=17, versions="0-1", flexible="none"):
    error_code: int = field("int16")
    mechanisms: list[str] = field("[]string")


class SaslAuthenticateRequest(Request, api_key=36, versions="0-2", flexible="2+"):
    auth_bytes: bytes = field("bytes")


class SaslAuthenticateResponse(Response, api_key=36, versions="0-2", flexible="2+"):
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    auth_bytes: bytes = field("bytes")
    session_lifetime_ms: int = field("int64", "1+", ignorable=True)


SASL_HANDSHAKE = register(SaslHandshakeRequest, SaslHandshakeResponse)
SASL_AUTHENTICATE = register(SaslAuthenticateRequest, SaslAuthenticateResponse)
