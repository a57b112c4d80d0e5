"""DescribeAcls v1-3, CreateAcls v1-3, DeleteAcls v1-3: the ACLs through Kafka's API.

The same store as the admin API's ``/v1/acls``. Creating and deleting need ALTER on the
cluster, describing needs DESCRIBE on it (CLUSTER_AUTHORIZATION_FAILED otherwise). A
creation that is not a definite binding (ANY, MATCH or UNKNOWN values, an empty name, a
principal that is not Type:name, a CLUSTER resource not named ``kafka-cluster``) and a
filter with an UNKNOWN value are INVALID_REQUEST with a message saying why; the valid
creations of the same request are stored all the same, as Kafka does.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from ...security.acl import AclBinding, AclError, AclFilter
from ..authz import Op, cluster_allowed
from ..context import RequestContext

_DENIED = "the cluster ALTER permission is needed to change ACLs"


async def describe(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    def error(code: int, message: str) -> DescribeAclsResponse:
        return DescribeAclsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=code,
            error_message=message,
            resources=[],
        )

    if not cluster_allowed(ctx, Op.DESCRIBE):
        return error(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "the cluster DESCRIBE permission is needed to describe ACLs",
        )
    try:
        acl_filter = AclFilter.of(
            req.resource_type_filter,
            req.resource_name_filter,
            req.pattern_type_filter,
            req.principal_filter,
            req.host_filter,
            req.operation,
            req.permission_type,
        )
    except AclError as exc:
        return error(ErrorCode.INVALID_REQUEST, str(exc))
    grouped: dict[tuple[int, str, int], list[AclBinding]] = {}
    for b in ctx.broker.find_acls(acl_filter):
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    Resource = DescribeAclsResponse.Resource
    return DescribeAclsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=[
            Resource(
                resource_type=rtype,
                resource_name=name,
                pattern_type=ptype,
                acls=[
                    Resource.AclDescription(
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in bindings
                ],
            )
            for (rtype, name, ptype), bindings in grouped.items()
        ],
    )


async def create(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    Result = CreateAclsResponse.AclCreationResult
    if not cluster_allowed(ctx, Op.ALTER):
        return CreateAclsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            results=[
                Result(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=_DENIED)
                for _ in req.creations
            ],
        )
    results: list[CreateAclsResponse.AclCreationResult] = []
    valid: list[AclBinding] = []
    for c in req.creations:
        try:
            valid.append(
                AclBinding.of(
                    c.resource_type,
                    c.resource_name,
                    c.resource_pattern_type,
                    c.principal,
                    c.host,
                    c.operation,
                    c.permission_type,
                )
            )
        except AclError as exc:
            results.append(Result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc)))
            continue
        results.append(Result(error_code=ErrorCode.NONE, error_message=None))
    if valid:
        await ctx.broker.create_acls(valid)
    return CreateAclsResponse(throttle_time_ms=ctx.throttle_time_ms, results=results)


async def delete(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    FilterResult = DeleteAclsResponse.FilterResult
    Matching = FilterResult.MatchingAcl
    if not cluster_allowed(ctx, Op.ALTER):
        return DeleteAclsResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            filter_results=[
                FilterResult(
                    error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    error_message=_DENIED,
                    matching_acls=[],
                )
                for _ in req.filters
            ],
        )
    filters: list[AclFilter | str] = []
    for wire in req.filters:
        try:
            filters.append(
                AclFilter.of(
                    wire.resource_type_filter,
                    wire.resource_name_filter,
                    wire.pattern_type_filter,
                    wire.principal_filter,
                    wire.host_filter,
                    wire.operation,
                    wire.permission_type,
                )
            )
        except AclError as exc:
            filters.append(str(exc))
    usable = [f for f in filters if isinstance(f, AclFilter)]
    matched = iter(await ctx.broker.delete_acls(usable) if usable else [])
    results = []
    for f in filters:
        if isinstance(f, str):
            results.append(
                FilterResult(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=f, matching_acls=[]
                )
            )
            continue
        results.append(
            FilterResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[
                    Matching(
                        error_code=ErrorCode.NONE,
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in next(matched)
                ],
            )
        )
    return DeleteAclsResponse(throttle_time_ms=ctx.throttle_time_ms, filter_results=results)
