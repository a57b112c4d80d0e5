"""A Kafka protocol client on a trio stream: the broker's own requests to other brokers.

Owns: ``PeerClient``: one connection to another broker's listener, requests encoded with
the codec's ``encode_request``, responses decoded and matched by correlation id; and
``PeerListener``: how to reach that listener, Kafka's inter-broker client side. On a TLS
listener (``ssl_context``) the connection is a ``trio.SSLStream`` whose handshake
verifies the peer's certificate (and, as the context says, its host name); on a SASL
listener (``sasl``) ``connect`` sends SaslHandshake v1 and SaslAuthenticate v2 until the
``SaslClient`` is done. A refused handshake or login raises ``PeerAuthenticationError``
naming the peer and the listener; the caller logs it and tries again later. Followers
fetch with it, the ZooKeeper-era controller sends LeaderAndIsr, UpdateMetadata and
StopReplica with it, a stopping broker its ControlledShutdown; tests drive the broker
with it too. Must not: know the broker's config (``server.access.inter_broker`` builds the
``PeerListener``).
"""

from __future__ import annotations

import itertools
import ssl
import struct
from dataclasses import dataclass
from typing import Any

import trio

from ..protocol import messages  # noqa: F401  (registers every message)
from ..protocol.api import ApiKey, spec_for
from ..protocol.errors import ErrorCode
from ..protocol.header import decode_response, encode_request
from ..protocol.messages.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from ..protocol.primitives import join_parts
from ..protocol.schema import Request
from ..security.errors import AuthenticationFailed
from ..security.sasl_client import SaslClient, SaslLogin

SASL_HANDSHAKE_VERSION, SASL_AUTHENTICATE_VERSION = 1, 2
TLS_HANDSHAKE_TIMEOUT_S = 10.0  # as the server's side


@dataclass(frozen=True, slots=True)
class PeerListener:
    """A listener of the other brokers, as this broker connects to it: its name, its TLS
    client context (None: no TLS) and the SASL login (None: no SASL)."""

    name: str
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslLogin | None = None


PLAINTEXT_PEER = PeerListener("PLAINTEXT")


class PeerAuthenticationError(ConnectionError):
    """The TLS handshake or the SASL login with a peer failed (the message says which)."""


class PeerClient:
    def __init__(self, stream: trio.abc.Stream, client_id: str | None = "trio-broker") -> None:
        self.stream = stream
        self.client_id = client_id
        self._corr = itertools.count(1)
        self._pending: dict[int, tuple[int, int]] = {}
        self._buf = bytearray()

    @classmethod
    async def connect(
        cls,
        address: str,
        client_id: str | None = "trio-broker",
        listener: PeerListener = PLAINTEXT_PEER,
    ) -> PeerClient:
        """Connect to ``address`` (``host:port``, IPv6 hosts in brackets) on ``listener``:
        TCP, then TLS and SASL as it asks."""
        host, port = address.rsplit(":", 1)
        host = host.strip("[]")
        stream: trio.abc.Stream = await trio.open_tcp_stream(host, int(port))
        try:
            if listener.ssl_context is not None:
                stream = await _tls(stream, listener, host, address)
            client = cls(stream, client_id)
            if listener.sasl is not None:
                await client._login(listener.sasl, listener.name, address)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
        return client

    async def _login(self, login: SaslLogin, listener: str, address: str) -> None:
        where = f"broker {address} (listener {listener})"
        handshake = await self.request(
            SaslHandshakeRequest(mechanism=login.mechanism), SASL_HANDSHAKE_VERSION
        )
        if handshake.error_code != ErrorCode.NONE:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise PeerAuthenticationError(
                f"{where} does not offer SASL mechanism {login.mechanism} (offers: {offered})"
            )
        sasl = SaslClient(login)
        token: bytes | None = sasl.first()
        while token is not None:
            request = SaslAuthenticateRequest(auth_bytes=token)
            answer = await self.request(request, SASL_AUTHENTICATE_VERSION)
            if answer.error_code != ErrorCode.NONE:
                why = answer.error_message or ErrorCode(answer.error_code).name
                raise PeerAuthenticationError(
                    f"{where} refused the SASL/{login.mechanism} login of user "
                    f"{login.username!r}: {why}"
                )
            try:
                token = await trio.to_thread.run_sync(sasl.step, answer.auth_bytes)
            except AuthenticationFailed as exc:
                raise PeerAuthenticationError(f"{where}: {exc}") from None

    def frame(self, body: Request, version: int) -> tuple[int, bytes]:
        corr = next(self._corr)
        self._pending[corr] = (body.api_key, version)
        return corr, join_parts(encode_request(version, corr, self.client_id, body))

    async def send(self, body: Request, version: int) -> int:
        corr, data = self.frame(body, version)
        await self.stream.send_all(data)
        return corr

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = await self.stream.receive_some()
            if not chunk:
                raise ConnectionError("closed by the broker")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def receive(self) -> tuple[int, Any]:
        size = struct.unpack(">i", await self._read_exact(4))[0]
        frame = await self._read_exact(size)
        corr = struct.unpack_from(">i", frame)[0]
        api_key, version = self._pending.pop(corr)
        spec = spec_for(api_key)
        assert spec is not None
        if api_key == ApiKey.ApiVersions and version not in spec.versions:
            version = 0  # KIP-511: the answer to an unknown ApiVersions version is v0
        return decode_response(spec, version, frame)

    async def request(self, body: Request, version: int) -> Any:
        corr = await self.send(body, version)
        got, response = await self.receive()
        if got != corr:
            raise ConnectionError(f"correlation id {got} answers request {corr}")
        return response

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _tls(
    stream: trio.abc.Stream, listener: PeerListener, host: str, address: str
) -> trio.SSLStream[trio.abc.Stream]:
    """The TLS client handshake on ``stream`` (the peer's certificate checked as the
    context says); ``PeerAuthenticationError`` with the reason if it fails."""
    assert listener.ssl_context is not None
    tls = trio.SSLStream(stream, listener.ssl_context, server_hostname=host)
    reason: str = ""
    with trio.move_on_after(TLS_HANDSHAKE_TIMEOUT_S) as scope:
        try:
            await tls.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            cause = exc.__cause__ or exc
            verify = getattr(cause, "verify_message", None)
            detail = f"certificate verify failed: {verify}" if verify else cause
            reason = str(detail) or type(cause).__name__
    if scope.cancelled_caught:
        reason = f"no TLS handshake within {TLS_HANDSHAKE_TIMEOUT_S:g} s"
    if reason:
        raise PeerAuthenticationError(
            f"TLS handshake with broker {address} (listener {listener.name}) failed: {reason}"
        )
    return tls
