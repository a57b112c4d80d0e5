"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44): resource configs;
ListConfigResources (74, KIP-1142; ListClientMetricsResources of KIP-1000 at v0): which
resources have configs."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeConfigsRequest(Request, api_key=32, versions="0-4", flexible="4+"):
    class Resource(Struct):
        resource_type: int = field("int8")
        resource_name: str = field("string")
        configuration_keys: list[str] | None = field("[]string", nullable="0+")

    resources: list[Resource] = field(array(Resource))
    include_synonyms: bool = field("bool", "1+")
    include_documentation: bool = field("bool", "3+")


class DescribeConfigsResponse(Response, api_key=32, versions="0-4", flexible="4+"):
    class Result(Struct):
        class ResourceResult(Struct):
            class Synonym(Struct):
                name: str = field("string", "1+")
                value: str | None = field("string", "1+", nullable="0+", default=None)
                source: int = field("int8", "1+")

            name: str = field("string")
            value: str | None = field("string", nullable="0+", default=None)
            read_only: bool = field("bool")
            is_default: bool = field("bool", "0")
            config_source: int = field("int8", "1+", default=-1, ignorable=True)
            is_sensitive: bool = field("bool")
            synonyms: list[Synonym] = field(array(Synonym), "1+", ignorable=True)
            config_type: int = field("int8", "3+", ignorable=True)
            documentation: str | None = field(
                "string", "3+", nullable="0+", ignorable=True, default=None
            )

        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        resource_type: int = field("int8")
        resource_name: str = field("string")
        configs: list[ResourceResult] = field(array(ResourceResult))

    throttle_time_ms: int = field("int32")
    results: list[Result] = field(array(Result))


class AlterConfigsRequest(Request, api_key=33, versions="0-2", flexible="2+"):
    class Resource(Struct):
        class AlterableConfig(Struct):
            name: str = field("string")
            value: str | None = field("string", nullable="0+")

        resource_type: int = field("int8")
        resource_name: str = field("string")
        configs: list[AlterableConfig] = field(array(AlterableConfig))

    resources: list[Resource] = field(array(Resource))
    validate_only: bool = field("bool")


class AlterConfigsResponse(Response, api_key=33, versions="0-2", flexible="2+"):
    class ResourceResponse(Struct):
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        resource_type: int = field("int8")
        resource_name: str = field("string")

    throttle_time_ms: int = field("int32")
    responses: list[ResourceResponse] = field(array(ResourceResponse))


class IncrementalAlterConfigsRequest(Request, api_key=44, versions="0-1", flexible="1+"):
    class AlterConfigsResource(Struct):
        class AlterableConfig(Struct):
            name: str = field("string")
            config_operation: int = field("int8")
            value: str | None = field("string", nullable="0+")

        resource_type: int = field("int8")
        resource_name: str = field("string")
        configs: list[AlterableConfig] = field(array(AlterableConfig))

    resources: list[AlterConfigsResource] = field(array(AlterConfigsResource))
    validate_only: bool = field("bool")


class IncrementalAlterConfigsResponse(Response, api_key=44, versions="0-1", flexible="1+"):
    class AlterConfigsResourceResponse(Struct):
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        resource_type: int = field("int8")
        resource_name: str = field("string")

    throttle_time_ms: int = field("int32")
    responses: list[AlterConfigsResourceResponse] = field(array(AlterConfigsResourceResponse))


class ListConfigResourcesRequest(Request, api_key=74, versions="0-1", flexible="0+"):
    # empty: every type the version supports
    resource_types: list[int] = field("[]int8", "1+")


class ListConfigResourcesResponse(Response, api_key=74, versions="0-1", flexible="0+"):
    class ConfigResource(Struct):
        resource_name: str = field("string")
        resource_type: int = field("int8", "1+", default=16, ignorable=True)

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    config_resources: list[ConfigResource] = field(array(ConfigResource))


DESCRIBE_CONFIGS = register(DescribeConfigsRequest, DescribeConfigsResponse)
ALTER_CONFIGS = register(AlterConfigsRequest, AlterConfigsResponse)
INCREMENTAL_ALTER_CONFIGS = register(
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
)
LIST_CONFIG_RESOURCES = register(ListConfigResourcesRequest, ListConfigResourcesResponse)
