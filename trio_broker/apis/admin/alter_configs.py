"""AlterConfigs v0-v2 and IncrementalAlterConfigs v0-v1: run-time config changes.

For TOPIC resources, BROKER resources (this broker's id, or ``""`` for the cluster-wide
default) and CLIENT_METRICS resources (KIP-714's subscriptions: ALTER_CONFIGS on the cluster;
Kafka's checks are ``server.telemetry``'s; every key removed deletes the subscription).
AlterConfigs replaces a resource's whole set of run-time settings;
IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT (the last two on
list-valued keys only) to the keys it names. ``validate_only`` checks and changes nothing.
Each resource is answered on its own, with Kafka's codes: TOPIC_AUTHORIZATION_FAILED /
CLUSTER_AUTHORIZATION_FAILED without ALTER_CONFIGS on the topic / the cluster,
UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (an unknown key, a bad value, a key that needs
a restart), INVALID_REQUEST (another broker's id, a resource named twice, a key given twice).
The broker's side, shared with the admin API's ``PUT /v1/config``, is
``server.config.admin``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ..authz import TOPIC as TOPIC_RESOURCE
from ..authz import Op, allowed, cluster_allowed
from ..context import RequestContext
from ..services import TopicError
from ..telemetry_services import CLIENT_METRICS

TOPIC, BROKER = 2, 4
SET = 0

_ALTER = spec_for(ApiKey.AlterConfigs)
_INCREMENTAL = spec_for(ApiKey.IncrementalAlterConfigs)
assert _ALTER is not None and _INCREMENTAL is not None
AlterConfigsResponse: Any = _ALTER.response
AlterResult: Any = item_type(AlterConfigsResponse, "responses")
IncrementalResponse: Any = _INCREMENTAL.response
IncrementalResult: Any = item_type(IncrementalResponse, "responses")


def _refusal(ctx: RequestContext, res: Any, duplicated: bool) -> tuple[int, str | None] | None:
    """Why a resource cannot be altered before its changes are looked at, if it cannot."""
    if duplicated:
        return ErrorCode.INVALID_REQUEST, "the resource is named more than once in the request"
    if res.resource_type == TOPIC:
        if not allowed(ctx, Op.ALTER_CONFIGS, TOPIC_RESOURCE, res.resource_name):
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
    elif res.resource_type in (BROKER, CLIENT_METRICS):
        if not cluster_allowed(ctx, Op.ALTER_CONFIGS):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        return (
            ErrorCode.INVALID_REQUEST,
            f"resource type {res.resource_type} cannot be altered "
            "(TOPIC, BROKER or CLIENT_METRICS)",
        )
    return None


def _duplicates(resources: list[Any]) -> set[tuple[int, str]]:
    counts = Counter((r.resource_type, r.resource_name) for r in resources)
    return {k for k, n in counts.items() if n > 1}


async def _answer(
    ctx: RequestContext,
    req: Any,
    result: Any,
    alter: Callable[[Any], Awaitable[None]],
) -> list[Any]:
    """Each resource's result: refused up front, or ``alter(resource)``'s outcome."""
    dup = _duplicates(req.resources)
    results = []
    for res in req.resources:
        code: int = ErrorCode.NONE
        message: str | None = None
        refused = _refusal(ctx, res, (res.resource_type, res.resource_name) in dup)
        if refused is not None:
            code, message = refused
        else:
            try:
                await alter(res)
            except TopicError as exc:  # ConfigChangeError too
                code, message = exc.error_code, exc.message
        results.append(
            result(
                error_code=code,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return results


async def handle_alter(ctx: RequestContext, req: Any) -> Any:
    async def replace(res: Any) -> None:
        if res.resource_type == CLIENT_METRICS:
            await ctx.broker.telemetry.alter_subscription(
                res.resource_name,
                [(c.name, SET, c.value) for c in res.configs],
                validate_only=req.validate_only,
                replace=True,
            )
            return
        await ctx.broker.replace_configs(
            res.resource_type,
            res.resource_name,
            {c.name: c.value for c in res.configs},
            validate_only=req.validate_only,
        )

    results = await _answer(ctx, req, AlterResult, replace)
    return AlterConfigsResponse(throttle_time_ms=ctx.throttle_time_ms, responses=results)


async def handle_incremental(ctx: RequestContext, req: Any) -> Any:
    async def alter(res: Any) -> None:
        if res.resource_type == CLIENT_METRICS:
            await ctx.broker.telemetry.alter_subscription(
                res.resource_name,
                [(c.name, c.config_operation, c.value) for c in res.configs],
                validate_only=req.validate_only,
            )
            return
        await ctx.broker.alter_configs_incrementally(
            res.resource_type,
            res.resource_name,
            [(c.name, c.config_operation, c.value) for c in res.configs],
            validate_only=req.validate_only,
        )

    results = await _answer(ctx, req, IncrementalResult, alter)
    return IncrementalResponse(throttle_time_ms=ctx.throttle_time_ms, responses=results)
