"""ApiVersions: the api keys and version ranges this broker answers (KIP-511 aware).

An unsupported request version is answered with a v0 response carrying UNSUPPORTED_VERSION
and our ranges, so the client can retry with a version we know. From v3 the client's
software name and version must match Kafka's pattern, else INVALID_REQUEST.

From v3 the answer carries the features (KIP-584) as Kafka 4 reports them: the levels this
broker supports, and the finalized ones, which clients act on. ``transaction.version`` 2
is finalized (KIP-890 part 2: Produce v12's implicit partition addition, EndTxn v5's epoch
bump and TxnOffsetCommit v5, served), so a client that knows it ends each transaction
with an epoch bump; ``group.version`` 1 is finalized too (KIP-848's consumer groups are
served, unless ``group.coordinator.rebalance.protocols`` leaves them out, as in Kafka,
where that setting and the feature are separate; a level 0 is never listed as finalized,
as Kafka lists only levels of 1 and above). As Kafka answers v3 (KAFKA-17011),
a supported range starting at 0 is reported from 1 there, and one of 0 alone not at all.
The finalized features' epoch is ``FEATURES_EPOCH``: the features are this build's, raised
with it, so a client adopts them from any broker of the cluster.
"""

from __future__ import annotations

import functools
import re

from ..protocol.errors import ErrorCode
from ..protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from .context import RequestContext

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

# (name, min level, max level) this broker supports, and the finalized levels.
SUPPORTED_FEATURES = (("group.version", 0, 1), ("transaction.version", 0, 2))
FINALIZED_FEATURES = (("transaction.version", 2), ("group.version", 1))
# Raised whenever a build changes the finalized levels (Kafka's is the metadata offset of
# their last change): clients adopt the finalized features of the highest epoch they see.
FEATURES_EPOCH = 2  # 2: group.version 1 (KIP-848's consumer groups served)


@functools.lru_cache(maxsize=8)
def _features(
    version: int,
) -> tuple[
    list[ApiVersionsResponse.SupportedFeatureKey], list[ApiVersionsResponse.FinalizedFeatureKey]
]:
    """The answer's feature lists for a request version (built once)."""
    supported = []
    for name, low, high in SUPPORTED_FEATURES:
        if version < 4 and low == 0:  # KAFKA-17011: v3 clients cannot read a 0 minimum
            if high == 0:
                continue
            low = 1
        supported.append(
            ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=low, max_version=high)
        )
    finalized = [
        ApiVersionsResponse.FinalizedFeatureKey(
            name=name, max_version_level=level, min_version_level=level
        )
        for name, level in FINALIZED_FEATURES
        if level >= 1
    ]
    return supported, finalized


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
    supported, finalized = _features(ctx.api_version)
    return ApiVersionsResponse(
        error_code=error,
        api_keys=keys,
        throttle_time_ms=ctx.throttle_time_ms,
        supported_features=supported,
        finalized_features_epoch=FEATURES_EPOCH if ctx.api_version >= 3 else -1,
        finalized_features=finalized,
    )
