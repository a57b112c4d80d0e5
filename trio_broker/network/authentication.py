"""SASL in the network layer: one connection's authentication before its requests reach
the handlers (as Kafka's SaslServerAuthenticator runs in its network threads).

Owns: ``ListenerSecurity`` (what a listener asks of its clients: a TLS context, the SASL
mechanisms and credential lookup, the failed-authentication delay, the session lifetime),
``AuthCounters`` (the figures the metrics report) and ``SaslDriver``, which a
``Connection`` on a SASL listener consults for every frame it reads:
- SaslHandshake and SaslAuthenticate requests (and, after a v0 handshake, the raw
  size-prefixed tokens) are answered here, in the connection's task, from the
  ``security.sasl.SaslSession`` state machine; each step runs on a worker thread (PLAIN
  derives a PBKDF2 key), so no other connection waits for it.
- Before authentication any other request than ApiVersions closes the connection
  (``UnauthenticatedRequest``, logged once and counted as a bad request), and so does one
  sent after the session's lifetime (``connections.max.reauth.ms``) ran out.
- A failed authentication is logged once (peer, mechanism, user name), answered with
  SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms``, and the
  connection is closed.
The driver knows nothing of the connection: it writes its answers, releases a request's
memory and reports a request complete through the ``SaslIo`` it is given, and leaves the
authenticated principal (``User:<name>``) in ``principal`` and the reason to close in
``close_reason`` for its caller.
"""

from __future__ import annotations

import enum
import logging
import ssl
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from ..protocol.errors import ErrorCode, RemoteProtocolError
from ..protocol.header import encode_response
from ..protocol.messages.sasl import (
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)
from ..protocol.primitives import Parts
from ..security.errors import AuthenticationFailed
from ..security.sasl import SASL_APIS, SUPPORTED_MECHANISMS, Admission, SaslSession, SaslState
from ..security.scram import Lookup
from .request import Request

log = logging.getLogger("trio_broker.security")


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """What one listener requires; the default (nothing) is PLAINTEXT."""

    ssl_context: ssl.SSLContext | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    credentials: Lookup | None = None
    failed_authentication_delay_ms: int = 100
    reauth_ms: int = 0
    tls_handshake_timeout_s: float = 10.0

    @property
    def sasl(self) -> bool:
        return bool(self.sasl_mechanisms)


@dataclass
class AuthCounters:
    successful: dict[str, int] = field(default_factory=dict)  # by mechanism
    failed: dict[str, int] = field(default_factory=dict)  # by mechanism
    reauthentications: int = 0
    unauthenticated_requests: int = 0
    expired_sessions: int = 0
    tls_handshakes: int = 0
    tls_handshake_failures: int = 0

    def count(self, table: dict[str, int], mechanism: str) -> None:
        table[mechanism] = table.get(mechanism, 0) + 1


class UnauthenticatedRequest(RemoteProtocolError):
    """A request other than ApiVersions and SASL before authentication completed."""


class SessionExpired(RemoteProtocolError):
    """A request after the SASL session's lifetime without re-authentication (KIP-368)."""


class Outcome(enum.Enum):
    PASS = "pass"  # an ordinary request: on to the handlers
    HANDLED = "handled"  # answered here
    CLOSE = "close"  # answered (or not); close the connection now


@dataclass(frozen=True, slots=True)
class SaslIo:
    """How a ``SaslDriver`` reaches its connection."""

    write: Callable[[Parts], Awaitable[None]]  # send a frame (its bytes counted)
    release: Callable[[Request], None]  # give back a request's memory-pool bytes
    completed: Callable[[Request], None]  # a request answered here is complete
    peer: str  # for log lines: the client's address
    listener: str
    connection_id: str


class SaslDriver:
    def __init__(self, io: SaslIo, security: ListenerSecurity, counters: AuthCounters):
        assert security.credentials is not None
        self.io = io
        self.security = security
        self.counters = counters
        self.session = SaslSession(
            security.sasl_mechanisms, security.credentials, security.reauth_ms
        )
        self.principal: str | None = None  # once authenticated
        self.close_reason = ""

    @property
    def raw(self) -> bool:
        """After a v0 handshake the next frame is a raw SASL token, not a request."""
        return self.session.state is SaslState.AUTHENTICATING_RAW

    async def intercept(self, request: Request) -> Outcome:
        key = request.spec.key
        if key in SASL_APIS:
            # answered here, from its decoded body: its frame's pool bytes go back now
            self.io.release(request)
        if key == SASL_HANDSHAKE.key:
            return await self._handshake(request)
        if key == SASL_AUTHENTICATE.key:
            return await self._authenticate(request)
        verdict = self.session.admit(key, _now_ms())
        if verdict is Admission.PASS:
            return Outcome.PASS
        self.io.release(request)
        if verdict is Admission.EXPIRED:
            self.counters.expired_sessions += 1
            raise SessionExpired(
                f"{request.spec.name} after the SASL session of {self.session.principal} "
                "expired (connections.max.reauth.ms) without re-authentication"
            )
        self.counters.unauthenticated_requests += 1
        raise UnauthenticatedRequest(
            f"{request.spec.name} before SASL authentication completed "
            f"(only ApiVersions, SaslHandshake and SaslAuthenticate are accepted)"
        )

    # ----------------------------------------------------------------- handshake

    async def _handshake(self, request: Request) -> Outcome:
        session = self.session
        mechanism = request.body.mechanism
        try:
            accepted = session.handshake(mechanism, request.version)
        except AuthenticationFailed as exc:
            body: Any = SaslHandshakeResponse(
                error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=list(session.enabled)
            )
            await self._respond(request, body)
            self.close_reason = str(exc)
            return Outcome.CLOSE
        code = ErrorCode.NONE if accepted else ErrorCode.UNSUPPORTED_SASL_MECHANISM
        await self._respond(
            request, SaslHandshakeResponse(error_code=code, mechanisms=list(session.enabled))
        )
        if not accepted:
            # counted under "unsupported", not the client's string (bounded metric labels)
            label = mechanism if mechanism in SUPPORTED_MECHANISMS else "unsupported"
            self._failed(label, f"mechanism {mechanism!r} is not enabled")
            self.close_reason = f"unsupported SASL mechanism {mechanism!r}"
            return Outcome.CLOSE
        return Outcome.HANDLED

    # -------------------------------------------------------------- authenticate

    async def _authenticate(self, request: Request) -> Outcome:
        session = self.session
        if session.state is not SaslState.AUTHENTICATING:
            # Kafka answers a SaslAuthenticate out of turn with ILLEGAL_SASL_STATE
            message = (
                "SaslAuthenticate after a v0 SaslHandshake (send raw tokens)"
                if session.state is SaslState.AUTHENTICATING_RAW
                else "SaslAuthenticate without a SaslHandshake before it"
            )
            await self._respond(
                request,
                SaslAuthenticateResponse(
                    error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message, auth_bytes=b""
                ),
            )
            if session.state is SaslState.AUTHENTICATED:
                return Outcome.HANDLED
            self.close_reason = message
            return Outcome.CLOSE
        try:
            token, done = await self._step(request.body.auth_bytes)
        except AuthenticationFailed as exc:
            await self._fail_delay()
            await self._respond(
                request,
                SaslAuthenticateResponse(
                    error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                    error_message=str(exc),
                    auth_bytes=b"",
                ),
            )
            return Outcome.CLOSE
        lifetime = self.security.reauth_ms if done else 0
        await self._respond(
            request,
            SaslAuthenticateResponse(
                error_code=ErrorCode.NONE,
                error_message=None,
                auth_bytes=token,
                session_lifetime_ms=lifetime,
            ),
        )
        return Outcome.HANDLED

    async def raw_token(self, frame: bytes | bytearray) -> bool:
        """A raw token after a v0 handshake; False: close the connection."""
        try:
            token, _done = await self._step(bytes(frame))
        except AuthenticationFailed:
            await self._fail_delay()
            return False  # v0 has no error response: the client sees the close
        await self.io.write([struct.pack(">i", len(token)), token])
        return True

    async def _step(self, token: bytes) -> tuple[bytes, bool]:
        session = self.session
        mechanism = session.mechanism or "?"
        reauth = session.reauthenticating
        try:
            out, done = await trio.to_thread.run_sync(session.step, token, _now_ms())
        except AuthenticationFailed as exc:
            self._failed(mechanism, str(exc))
            raise
        except Exception:  # a bug of ours: the client gets a failure, the broker stays up
            log.exception("SASL %s step failed on connection %s", mechanism, self.io.connection_id)
            self._failed(mechanism, "internal error")
            raise AuthenticationFailed("Authentication failed: internal error") from None
        if done:
            self.counters.count(self.counters.successful, mechanism)
            if reauth:
                self.counters.reauthentications += 1
            assert session.principal is not None
            self.principal = session.principal
            log.debug(
                "connection %s from %s authenticated as %s (%s)",
                self.io.connection_id,
                self.io.peer,
                session.principal,
                mechanism,
            )
        return out, done

    def _failed(self, mechanism: str, reason: str) -> None:
        self.counters.count(self.counters.failed, mechanism)
        user = self.session.user
        log.warning(
            "failed authentication from %s on listener %s: mechanism %s, user %s: %s",
            self.io.peer,
            self.io.listener,
            mechanism,
            repr(user) if user is not None else "(none)",
            reason,
        )
        self.close_reason = "failed authentication"

    async def _fail_delay(self) -> None:
        delay = self.security.failed_authentication_delay_ms
        if delay > 0:
            await trio.sleep(delay / 1000)

    async def _respond(self, request: Request, body: Any) -> None:
        parts = encode_response(request.spec, request.version, request.header.correlation_id, body)
        times = request.times
        times.dequeue_ns = times.api_local_complete_ns = times.response_complete_ns = (
            time.monotonic_ns()
        )
        times.response_dequeue_ns = times.response_complete_ns
        await self.io.write(parts)
        times.send_complete_ns = time.monotonic_ns()
        self.io.release(request)
        self.io.completed(request)


def _now_ms() -> float:
    return time.monotonic() * 1000


__all__ = [
    "AuthCounters",
    "ListenerSecurity",
    "Outcome",
    "SaslDriver",
    "SaslIo",
    "SessionExpired",
    "UnauthenticatedRequest",
]
