"""Produce v3-v9: append record batches, validated by header and CRC, never decoded.

acks=0 gets no response (the no-op action); if one of its partitions failed, the client
cannot learn it from a response it does not read, so the connection is closed, as Kafka
does. acks=1 and acks=-1 are answered once the records are appended (and flushed when the
flush policy says so): with one replica, the high watermark is the log end. Any other acks
value is INVALID_REQUIRED_ACKS. Transactions are not supported. A topic the principal may
not WRITE is TOPIC_AUTHORIZATION_FAILED on each of its partitions, nothing appended.
"""

from __future__ import annotations

from typing import Any

from ..protocol.api import ApiKey, spec_for
from ..protocol.errors import ErrorCode
from ..protocol.schema import item_type
from .authz import TOPIC, Op, allowed
from .context import CloseConnection, RequestContext
from .services import WriteResult

_SPEC = spec_for(ApiKey.Produce)
assert _SPEC is not None
ProduceResponse: Any = _SPEC.response
TopicResponse: Any = item_type(ProduceResponse, "responses")
PartitionResponse: Any = item_type(TopicResponse, "partition_responses")
BatchError: Any = item_type(PartitionResponse, "record_errors")


async def handle(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    acks = req.acks
    failed = False
    topics = []
    for topic in req.topic_data:
        partitions = []
        may_write = allowed(ctx, Op.WRITE, TOPIC, topic.name)
        for data in topic.partition_data:
            if not may_write:
                result = WriteResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif acks not in (-1, 0, 1):
                result = WriteResult(
                    ErrorCode.INVALID_REQUIRED_ACKS, error_message=f"acks={acks} is not -1, 0 or 1"
                )
            elif req.transactional_id is not None:
                result = WriteResult(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    error_message="transactions are not supported by this broker",
                )
            else:
                result = await broker.produce(topic.name, data.index, data.records, acks)
            failed = failed or result.error_code != ErrorCode.NONE
            partitions.append(
                PartitionResponse(
                    index=data.index,
                    error_code=result.error_code,
                    base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time_ms,
                    log_start_offset=result.log_start_offset,
                    record_errors=[
                        BatchError(batch_index=i, batch_index_error_message=m)
                        for i, m in result.record_errors
                    ],
                    error_message=result.error_message,
                )
            )
        topics.append(TopicResponse(name=topic.name, partition_responses=partitions))
    if acks == 0:
        return CloseConnection("a produce with acks=0 failed") if failed else None
    return ProduceResponse(responses=topics, throttle_time_ms=ctx.throttle_time_ms)
