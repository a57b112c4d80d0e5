"""DescribeClientQuotas v0-1 and AlterClientQuotas v0-1: Kafka's view of client quotas.

The same quotas as the admin API's ``/v1/quotas`` (one store), so both views agree.
Entities are ``user``, ``client-id`` and ``user``+``client-id``, a null name meaning the
default entity. Describe filters: match type 0 is an exact name, 1 the default entity, 2
any entity of that type; ``strict`` asks for entities with exactly the filtered types.
Alter applies each entry's operations together, or none of them (INVALID_REQUEST naming
the problem); ``validate_only`` checks without changing anything. Describing needs
DESCRIBE_CONFIGS on the cluster, altering ALTER_CONFIGS (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from ..authz import Op, cluster_allowed
from ..context import RequestContext

EXACT, DEFAULT, ANY = 0, 1, 2
ENTITY_TYPES = ("user", "client-id")

DescribeEntry = DescribeClientQuotasResponse.EntryData
AlterEntry = AlterClientQuotasResponse.EntryData


def _matches(
    entity: dict[str, str | None],
    components: list[DescribeClientQuotasRequest.ComponentData],
    strict: bool,
) -> bool:
    for c in components:
        if c.entity_type not in entity:
            return False
        name = entity[c.entity_type]
        if c.match_type == EXACT and name != c.match:
            return False
        if c.match_type == DEFAULT and name is not None:
            return False
    return not strict or set(entity) == {c.entity_type for c in components}


async def describe(
    ctx: RequestContext, req: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return DescribeClientQuotasResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="the cluster DESCRIBE_CONFIGS permission is needed",
            entries=None,
        )
    seen: set[str] = set()
    for c in req.components:
        problem = None
        if c.entity_type not in ENTITY_TYPES:
            problem = f"entity type {c.entity_type!r} is not one of {', '.join(ENTITY_TYPES)}"
        elif c.entity_type in seen:
            problem = f"entity type {c.entity_type!r} is filtered twice"
        elif c.match_type not in (EXACT, DEFAULT, ANY):
            problem = f"match type {c.match_type} is not 0 (exact), 1 (default) or 2 (any)"
        elif c.match_type == EXACT and c.match is None:
            problem = f"an exact match on {c.entity_type} needs a name"
        if problem is not None:
            return DescribeClientQuotasResponse(
                throttle_time_ms=ctx.throttle_time_ms,
                error_code=ErrorCode.INVALID_REQUEST,
                error_message=problem,
                entries=None,
            )
        seen.add(c.entity_type)
    entries = [
        DescribeEntry(
            entity=[
                DescribeEntry.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()
            ],
            values=[DescribeEntry.ValueData(key=k, value=float(v)) for k, v in values.items()],
        )
        for entity, values in ctx.broker.client_quotas()
        if _matches(entity, req.components, req.strict)
    ]
    return DescribeClientQuotasResponse(
        throttle_time_ms=ctx.throttle_time_ms, error_code=ErrorCode.NONE, entries=entries
    )


async def alter(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    results = []
    may_alter = cluster_allowed(ctx, Op.ALTER_CONFIGS)
    for entry in req.entries:
        names = [e.entity_type for e in entry.entity]
        error: int = ErrorCode.NONE
        message: str | None = None
        if not may_alter:
            error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            message = "the cluster ALTER_CONFIGS permission is needed"
        elif len(set(names)) != len(names) or not names:
            error, message = ErrorCode.INVALID_REQUEST, "each entity type may appear once"
        else:
            entity = {e.entity_type: e.entity_name for e in entry.entity}
            changes: dict[str, float | None] = {}
            for op in entry.ops:
                changes[op.key] = None if op.remove else op.value
            error, message = await ctx.broker.alter_client_quota(
                entity, changes, validate_only=req.validate_only
            )
        results.append(
            AlterEntry(
                error_code=error,
                error_message=message,
                entity=[
                    AlterEntry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ],
            )
        )
    return AlterClientQuotasResponse(throttle_time_ms=ctx.throttle_time_ms, entries=results)
