"""TLS on a connection: the server handshake, in the connection's own task.

Owns: ``start_tls``. It wraps the accepted socket in a ``trio.SSLStream`` and completes the
handshake under a deadline (``ListenerSecurity.tls_handshake_timeout_s``), so a slow or
silent client holds only its own task, never a processor or another connection. A failed
handshake (no client certificate where one is required, an untrusted one, a plaintext
client, the deadline) is logged once with the peer and counted, and the connection is
closed. The client certificate's subject becomes the connection's principal
(``User:CN=...``); without one it stays ``User:ANONYMOUS``.
"""

from __future__ import annotations

import logging
import ssl
from typing import TYPE_CHECKING

import trio

from ..security.principal import principal_from_certificate

if TYPE_CHECKING:
    from .authentication import AuthCounters
    from .connection import Connection

log = logging.getLogger("trio_broker.security")


async def start_tls(
    conn: Connection, context: ssl.SSLContext, timeout_s: float, counters: AuthCounters
) -> bool:
    """Handshake as the server; True once ``conn.stream`` is the TLS stream."""
    stream = trio.SSLStream(conn.stream, context, server_side=True)
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
        counters.tls_handshake_failures += 1
        log.warning(
            "TLS handshake with %s on listener %s failed: %s",
            conn.remote_str,
            conn.listener.name,
            reason,
        )
        conn.close_reason = f"TLS handshake failed: {reason}"
        return False
    counters.tls_handshakes += 1
    conn.stream = stream
    conn.principal = principal_from_certificate(stream.getpeercert(binary_form=True))
    return True
