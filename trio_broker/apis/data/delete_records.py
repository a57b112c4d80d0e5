"""DeleteRecords v0-v2: move a partition's log start offset forward (-1: to the end).

A topic the principal may not DELETE is TOPIC_AUTHORIZATION_FAILED on each partition."""

from __future__ import annotations

from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ..authz import TOPIC, Op, allowed
from ..context import RequestContext

_SPEC = spec_for(ApiKey.DeleteRecords)
assert _SPEC is not None
DeleteRecordsResponse: Any = _SPEC.response
TopicResult: Any = item_type(DeleteRecordsResponse, "topics")
PartitionResult: Any = item_type(TopicResult, "partitions")


async def handle(ctx: RequestContext, req: Any) -> Any:
    may = [allowed(ctx, Op.DELETE, TOPIC, t.name) for t in req.topics]
    todo = [
        (t.name, p.partition_index, p.offset)
        for t, ok in zip(req.topics, may, strict=True)
        if ok
        for p in t.partitions
    ]
    done = iter(await ctx.broker.delete_records_many(todo) if todo else [])
    topics = []
    for t, ok in zip(req.topics, may, strict=True):
        partitions = []
        for p in t.partitions:
            if ok:
                error, low_watermark = next(done)
            else:
                error, low_watermark = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
            partitions.append(
                PartitionResult(
                    partition_index=p.partition_index, low_watermark=low_watermark, error_code=error
                )
            )
        topics.append(TopicResult(name=t.name, partitions=partitions))
    return DeleteRecordsResponse(throttle_time_ms=ctx.throttle_time_ms, topics=topics)
