"""InitProducerId v0-v4: a producer id and epoch for an idempotent producer.

Every call without a transactional id gets a new producer id at epoch 0 (also when an
existing id and epoch are given, v3+: starting over with a fresh id is always safe for a
non-transactional producer). Transactions are not supported: a transactional id is an
INVALID_REQUEST, and the transaction APIs are not in ApiVersions. An idempotent producer
needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from ..protocol.errors import ErrorCode
from ..protocol.messages.produce import InitProducerIdRequest, InitProducerIdResponse
from .authz import TOPIC, Op, cluster_allowed
from .context import RequestContext


async def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id is not None:
        return InitProducerIdResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.INVALID_REQUEST,
            producer_id=-1,
            producer_epoch=-1,
        )
    if not cluster_allowed(ctx, Op.IDEMPOTENT_WRITE, log_denied=False) and not (
        ctx.broker.authorize_any(ctx.principal, ctx.client_host, Op.WRITE, TOPIC)
    ):
        cluster_allowed(ctx, Op.IDEMPOTENT_WRITE)  # counted and logged as the denial
        return InitProducerIdResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    producer_id = await ctx.broker.new_producer_id()
    return InitProducerIdResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.NONE,
        producer_id=producer_id,
        producer_epoch=0,
    )
