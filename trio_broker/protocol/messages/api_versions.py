"""ApiVersions (key 18): which api keys and versions the broker answers (KIP-511 v3+)."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class ApiVersionsRequest(Request, api_key=18, versions="0-4", flexible="3+"):
    client_software_name: str = field("string", "3+", ignorable=True)
    client_software_version: str = field("string", "3+", ignorable=True)


class ApiVersionsResponse(Response, api_key=18, versions="0-4", flexible="3+"):
    class ApiVersion(Struct):
        api_key: int = field("int16")
        min_version: int = field("int16")
        max_version: int = field("int16")

    class SupportedFeatureKey(Struct):
        name: str = field("string", "3+")
        min_version: int = field("int16", "3+")
        max_version: int = field("int16", "3+")

    class FinalizedFeatureKey(Struct):
        name: str = field("string", "3+")
        max_version_level: int = field("int16", "3+")
        min_version_level: int = field("int16", "3+")

    error_code: int = field("int16")
    api_keys: list[ApiVersion] = field(array(ApiVersion))
    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    supported_features: list[SupportedFeatureKey] = field(
        array(SupportedFeatureKey), "3+", tag=0, ignorable=True
    )
    finalized_features_epoch: int = field("int64", "3+", tag=1, default=-1, ignorable=True)
    finalized_features: list[FinalizedFeatureKey] = field(
        array(FinalizedFeatureKey), "3+", tag=2, ignorable=True
    )
    zk_migration_ready: bool = field("bool", "3+", tag=3, ignorable=True)


API_VERSIONS = register(ApiVersionsRequest, ApiVersionsResponse)
