"""ApiVersions: the api keys and version ranges this broker answers (KIP-511 aware).

An unsupported request version is answered with a v0 response carrying UNSUPPORTED_VERSION
and our ranges, so the client can retry with a version we know. From v3 the client's
software name and version must match Kafka's pattern, else INVALID_REQUEST.
"""

from __future__ import annotations

import functools
import re

from ..protocol.errors import ErrorCode
from ..protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from .context import RequestContext

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


@functools.lru_cache(maxsize=8)
def _api_keys(ranges: tuple[tuple[int, int, int], ...]) -> list[ApiVersionsResponse.ApiVersion]:
    """The answer's list for a set of ranges, built once (it is only ever encoded)."""
    return [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, lo, hi in ranges
    ]


async def handle(ctx: RequestContext, req: ApiVersionsRequest | None) -> ApiVersionsResponse:
    keys = _api_keys(tuple(ctx.broker.api_versions(ctx.plane)))
    if req is None:
        ctx.response_version = 0
        return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=keys)
    error = ErrorCode.NONE
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(req.client_software_name)
        and _SOFTWARE.fullmatch(req.client_software_version)
    ):
        error = ErrorCode.INVALID_REQUEST
    return ApiVersionsResponse(
        error_code=error, api_keys=keys, throttle_time_ms=ctx.throttle_time_ms
    )
