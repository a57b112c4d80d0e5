"""DescribeAcls (29), CreateAcls (30) and DeleteAcls (31): access control lists."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class DescribeAclsRequest(Request, api_key=29, versions="1-3", flexible="2+"):
    resource_type_filter: int = field("int8")
    resource_name_filter: str | None = field("string", nullable="0+")
    pattern_type_filter: int = field("int8", "1+", default=3)
    principal_filter: str | None = field("string", nullable="0+")
    host_filter: str | None = field("string", nullable="0+")
    operation: int = field("int8")
    permission_type: int = field("int8")


class DescribeAclsResponse(Response, api_key=29, versions="1-3", flexible="2+"):
    class Resource(Struct):
        class AclDescription(Struct):
            principal: str = field("string")
            host: str = field("string")
            operation: int = field("int8")
            permission_type: int = field("int8")

        resource_type: int = field("int8")
        resource_name: str = field("string")
        pattern_type: int = field("int8", "1+", default=3)
        acls: list[AclDescription] = field(array(AclDescription))

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    resources: list[Resource] = field(array(Resource))


class CreateAclsRequest(Request, api_key=30, versions="1-3", flexible="2+"):
    class AclCreation(Struct):
        resource_type: int = field("int8")
        resource_name: str = field("string")
        resource_pattern_type: int = field("int8", "1+", default=3)
        principal: str = field("string")
        host: str = field("string")
        operation: int = field("int8")
        permission_type: int = field("int8")

    creations: list[AclCreation] = field(array(AclCreation))


class CreateAclsResponse(Response, api_key=30, versions="1-3", flexible="2+"):
    class AclCreationResult(Struct):
        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)

    throttle_time_ms: int = field("int32")
    results: list[AclCreationResult] = field(array(AclCreationResult))


class DeleteAclsRequest(Request, api_key=31, versions="1-3", flexible="2+"):
    class Filter(Struct):
        resource_type_filter: int = field("int8")
        resource_name_filter: str | None = field("string", nullable="0+")
        pattern_type_filter: int = field("int8", "1+", default=3)
        principal_filter: str | None = field("string", nullable="0+")
        host_filter: str | None = field("string", nullable="0+")
        operation: int = field("int8")
        permission_type: int = field("int8")

    filters: list[Filter] = field(array(Filter))


class DeleteAclsResponse(Response, api_key=31, versions="1-3", flexible="2+"):
    class FilterResult(Struct):
        class MatchingAcl(Struct):
            error_code: int = field("int16")
            error_message: str | None = field("string", nullable="0+", default=None)
            resource_type: int = field("int8")
            resource_name: str = field("string")
            pattern_type: int = field("int8", "1+", default=3)
            principal: str = field("string")
            host: str = field("string")
            operation: int = field("int8")
            permission_type: int = field("int8")

        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        matching_acls: list[MatchingAcl] = field(array(MatchingAcl))

    throttle_time_ms: int = field("int32")
    filter_results: list[FilterResult] = field(array(FilterResult))


DESCRIBE_ACLS = register(DescribeAclsRequest, DescribeAclsResponse)
CREATE_ACLS = register(CreateAclsRequest, CreateAclsResponse)
DELETE_ACLS = register(DeleteAclsRequest, DeleteAclsResponse)
