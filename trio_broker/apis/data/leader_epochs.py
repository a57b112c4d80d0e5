"""OffsetForLeaderEpoch v2-v4 (key 23): where a leader epoch ended in the leader's log.

A consumer asks after a leader change (KIP-320) to learn whether the offset it holds is
still in the log the new leader has: for each partition the largest epoch at or below
the one asked, and the offset where that epoch ended (the log end for the current epoch);
-1 and -1 for an epoch newer than any in the log. A follower asks the same before it
truncates (KIP-101, KIP-279). Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere);
a current leader epoch older than the leader's is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH. Authorization, as Kafka: CLUSTER_ACTION on the cluster may ask about
every partition; otherwise DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ..authz import TOPIC, Op, allowed, cluster_allowed
from ..context import RequestContext

_SPEC = spec_for(ApiKey.OffsetForLeaderEpoch)
assert _SPEC is not None
Response: Any = _SPEC.response
TopicResult: Any = item_type(Response, "topics")
EpochEndOffset: Any = item_type(TopicResult, "partitions")


async def handle(ctx: RequestContext, req: Any) -> Any:
    replicates = cluster_allowed(ctx, Op.CLUSTER_ACTION)
    may = [replicates or allowed(ctx, Op.DESCRIBE, TOPIC, t.topic) for t in req.topics]
    asked = [
        (t.topic, p.partition, p.leader_epoch, p.current_leader_epoch)
        for t, ok in zip(req.topics, may, strict=True)
        if ok
        for p in t.partitions
    ]
    answers = iter(ctx.broker.epoch_end_offsets(asked))
    denied = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1)
    topics = []
    for t, ok in zip(req.topics, may, strict=True):
        partitions = []
        for p in t.partitions:
            error, epoch, end = next(answers) if ok else denied
            partitions.append(
                EpochEndOffset(
                    error_code=error, partition=p.partition, leader_epoch=epoch, end_offset=end
                )
            )
        topics.append(TopicResult(topic=t.topic, partitions=partitions))
    return Response(throttle_time_ms=ctx.throttle_time_ms, topics=topics)
