"""ListOffsets v1-v11: earliest, latest, by timestamp, and the max-timestamp offset.

Special timestamps, as Kafka: -2 the log start offset, -1 the latest offset (the high
watermark, or the last stable offset under read_committed), -3 the offset of the record
with the largest timestamp (v7+), -4 the local log start offset (v8+; the log start here,
there is no tiered storage), -5 the last tiered offset (v9+) and -6 the earliest offset
pending upload to tiered storage (v11+, KIP-1023), both -1 here; a special timestamp below
its version is UNSUPPORTED_VERSION for its partition, as Kafka's ReplicaManager answers.
v10's TimeoutMs (KIP-1075) bounds how long a lookup in remote storage may wait: there is
none, every lookup is local and answered at once. A
timestamp >= 0 finds the first record with a timestamp at or after it, inside compressed
batches too; none: offset -1. Partitions of a topic the principal may not
DESCRIBE are TOPIC_AUTHORIZATION_FAILED. A current leader epoch (v4+) older than the
leader's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH. Nothing at or past the
high watermark (the last stable offset under read_committed) is answered, and a new
leader whose high watermark has not yet reached the log end its epoch began with answers
"latest", and a lookup by time that finds nothing below it, OFFSET_NOT_AVAILABLE
(KIP-207; LEADER_NOT_AVAILABLE before v5, as Kafka): both retriable, so a client never
takes a stale high watermark below records the previous leader acknowledged for the end.
Every request is answered as a client's (Kafka answers a replica's or a debugging tool's
ListOffsets up to the log end: no broker here sends one).
"""

from __future__ import annotations

from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ..authz import TOPIC, Op, allowed
from ..context import RequestContext

_SPEC = spec_for(ApiKey.ListOffsets)
assert _SPEC is not None
ListOffsetsResponse: Any = _SPEC.response
TopicResponse: Any = item_type(ListOffsetsResponse, "topics")
PartitionResponse: Any = item_type(TopicResponse, "partitions")

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


# The first version that may ask for each special timestamp (Kafka's
# ListOffsetsRequest: MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD).
FIRST_VERSION = {-3: 7, -4: 8, -5: 9, -6: 11}


async def handle(ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    committed = v >= 2 and req.isolation_level == 1
    may = [allowed(ctx, Op.DESCRIBE, TOPIC, t.name) for t in req.topics]
    todo = [
        (t.name, p.partition_index, p.timestamp, p.current_leader_epoch)
        for t, ok in zip(req.topics, may, strict=True)
        if ok
        for p in t.partitions
        if v >= FIRST_VERSION.get(p.timestamp, 0)
    ]
    found = iter(await ctx.broker.list_offsets_many(todo, committed_only=committed) if todo else [])
    topics = []
    for t, ok in zip(req.topics, may, strict=True):
        partitions = []
        for p in t.partitions:
            error: int
            if ok and v < FIRST_VERSION.get(p.timestamp, 0):
                error, offset, timestamp, epoch = ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1
            elif ok:
                error, offset, timestamp, epoch = next(found)
                if error == ErrorCode.OFFSET_NOT_AVAILABLE and v < 5:
                    error = ErrorCode.LEADER_NOT_AVAILABLE  # as Kafka answers before v5
            else:
                error, offset, timestamp, epoch = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1
            partitions.append(
                PartitionResponse(
                    partition_index=p.partition_index,
                    error_code=error,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch,
                )
            )
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return ListOffsetsResponse(throttle_time_ms=ctx.throttle_time_ms, topics=topics)
