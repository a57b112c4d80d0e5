"""SaslHandshake and SaslAuthenticate as API handlers: only reached where SASL is not in use.

On SASL listeners the network layer answers both before any request reaches a handler
(``network.authentication``). A handler sees them only on a listener without SASL, or
after authentication; there, as Kafka does, they are answered with ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from ..protocol.errors import ErrorCode
from ..protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from .context import RequestContext


async def handshake(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


async def authenticate(
    ctx: RequestContext, req: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message=f"listener {ctx.listener} ({ctx.security_protocol}) does not use SASL",
        auth_bytes=b"",
    )
