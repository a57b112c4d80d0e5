"""InitProducerId v0-v5: a producer id and epoch for an idempotent or transactional producer.

Without a transactional id every call gets a new producer id at epoch 0 (also when an
existing id and epoch are given, v3+: starting over with a fresh id is always safe for a
non-transactional producer); it needs IDEMPOTENT_WRITE on the cluster or WRITE on some
topic (KIP-679), else CLUSTER_AUTHORIZATION_FAILED. With one, the transaction coordinator
answers (``BrokerView.transactions``: the id's producer id with its epoch bumped, which
fences an older producer of the id); it needs WRITE on the TRANSACTIONAL_ID, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an empty id is INVALID_REQUEST; PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH before v4.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.produce import InitProducerIdRequest, InitProducerIdResponse
from ..authz import TOPIC, Op, cluster_allowed
from ..context import RequestContext
from .coordinator import fenced_for, may_write_txn


async def handle(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id is not None:
        return await _transactional(ctx, req, req.transactional_id)
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


async def _transactional(
    ctx: RequestContext, req: InitProducerIdRequest, transactional_id: str
) -> InitProducerIdResponse:
    pid, epoch = -1, -1
    if transactional_id == "":
        code: int = ErrorCode.INVALID_REQUEST
    elif not may_write_txn(ctx, transactional_id):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        given = (req.producer_id, req.producer_epoch)
        expected = given if ctx.api_version >= 3 and given != (-1, -1) else None
        code, pid, epoch = await ctx.broker.transactions.init_producer_id(
            transactional_id, req.transaction_timeout_ms, expected
        )
    return InitProducerIdResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=fenced_for(ctx.api_version, 4, code),
        producer_id=pid,
        producer_epoch=epoch,
    )
