"""TLS on a connection: the server handshake, in the connection's own task.

Owns: ``tls_handshake``. It wraps an accepted socket in a ``trio.SSLStream`` and completes
the handshake under a deadline, so a slow or silent client holds only its own task, never
a processor or another connection. It returns the TLS stream and the principal of the
client certificate's subject (``User:CN=...``; ``User:ANONYMOUS`` without one), or the
reason the handshake failed; the caller logs, counts and closes.
Must not: know connections or listeners.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import trio

from ..security.principal import principal_from_certificate


@dataclass(frozen=True, slots=True)
class TlsSession:
    stream: trio.SSLStream[trio.abc.Stream]
    principal: str


async def tls_handshake(
    transport: trio.abc.Stream, context: ssl.SSLContext, timeout_s: float
) -> TlsSession | str:
    """Handshake as the server: the session, or why it failed (a one-line reason)."""
    stream = trio.SSLStream(transport, context, server_side=True)
    reason = ""
    with trio.move_on_after(timeout_s) as scope:
        try:
            await stream.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            cause = exc.__cause__ or exc
            reason = getattr(cause, "reason", None) or str(cause) or type(cause).__name__
    if scope.cancelled_caught:
        reason = f"no TLS handshake within {timeout_s:g} s"
    if reason:
        return reason
    return TlsSession(stream, principal_from_certificate(stream.getpeercert(binary_form=True)))
