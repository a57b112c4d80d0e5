"""DescribeTopicPartitions v0 (KIP-966): the partitions of topics, a page at a time.

Owns ``describe_topic_partitions``, as Kafka's ``DescribeTopicPartitionsRequestHandler``
and ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`` answer it:

- the topics named, or every topic when none is (those the principal may not DESCRIBE
  are then left out; a named one is TOPIC_AUTHORIZATION_FAILED with the zero topic id and
  no partitions, after the others), from the cursor's topic on, in name order;
- a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION
  for a name that cannot be a topic's); with a cursor, the named topics must include the
  cursor's topic, else the whole request is INVALID_REQUEST;
- at most ``min(max.request.partition.size.limit, response_partition_limit)`` partitions
  in all, the cursor's topic from the cursor's partition, every other topic from 0. When
  a topic does not fit, its partitions that do are answered and ``next_cursor`` names the
  first that did not; when the limit is reached at a topic's end, ``next_cursor`` names
  the next topic (partition 0), which may not exist;
- each partition's leader (-1 without one), leader epoch, replicas, ISR and offline
  replicas; eligible leader replicas and the last known ELR are empty lists (this broker
  keeps no ELR: KIP-966's ``eligible.leader.replicas.version`` is 0 here);
- each described topic's authorized operations (always: the request has no flag for it).

No trio; the topics come from ``BrokerView.topics``.
"""

from __future__ import annotations

from ...protocol.error_response import error_response
from ...protocol.errors import ErrorCode
from ...protocol.messages.metadata import (
    DESCRIBE_TOPIC_PARTITIONS,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from ...protocol.schema import ZERO_UUID
from ..authz import TOPIC, Op, allowed, authorized_operations
from ..context import RequestContext
from ..services import TopicInfo
from ..topic_names import INTERNAL_TOPICS, topic_name_error

Topic = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
Partition = Topic.DescribeTopicPartitionsResponsePartition
Cursor = DescribeTopicPartitionsResponse.Cursor

LIMIT_KEY = "max.request.partition.size.limit"


async def describe_topic_partitions(
    ctx: RequestContext, req: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    broker = ctx.broker
    cursor = req.cursor
    after = cursor.topic_name if cursor is not None else ""
    every = not req.topics
    if every:
        names = {t.name for t in broker.topics() if t.name >= after}
    else:
        names = {t.name for t in req.topics if t.name >= after}
        if cursor is not None and cursor.topic_name not in names:
            answer = error_response(
                DESCRIBE_TOPIC_PARTITIONS, ctx.api_version, req, ErrorCode.INVALID_REQUEST
            )
            assert isinstance(answer, DescribeTopicPartitionsResponse)
            answer.throttle_time_ms = ctx.throttle_time_ms
            return answer
    authorized, denied = [], []
    for name in sorted(names):
        if allowed(ctx, Op.DESCRIBE, TOPIC, name, log_denied=not every):
            authorized.append(name)
        elif not every:
            denied.append(
                Topic(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID
                )
            )
    limit = min(int(broker.config_value(LIMIT_KEY)), req.response_partition_limit)
    topics, next_cursor = _page(ctx, authorized, cursor, limit, every)
    for t in topics:
        t.topic_authorized_operations = authorized_operations(ctx, TOPIC, t.name or "")
    return DescribeTopicPartitionsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        topics=topics + denied,
        next_cursor=next_cursor,
    )


def _page(
    ctx: RequestContext,
    names: list[str],
    cursor: DescribeTopicPartitionsRequest.Cursor | None,
    limit: int,
    every: bool,
) -> tuple[list[Topic], Cursor | None]:
    """The topics that fit in ``limit`` partitions, and where the next page starts."""
    remaining = limit
    topics: list[Topic] = []
    for name in names:
        if remaining == 0:  # the previous topic ended the page: this one starts the next
            return topics, Cursor(topic_name=name, partition_index=0)
        if remaining < 0:
            break
        info = ctx.broker.topic(name)
        if info is None:
            if not every:
                code = (
                    ErrorCode.INVALID_TOPIC_EXCEPTION
                    if topic_name_error(name) is not None
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                topics.append(
                    Topic(error_code=code, name=name, is_internal=name in INTERNAL_TOPICS)
                )
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions, next_index = _partitions(info, start, remaining)
        topics.append(
            Topic(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=info.topic_id,
                is_internal=info.internal,
                partitions=partitions,
            )
        )
        if next_index is not None:
            return topics, Cursor(topic_name=name, partition_index=next_index)
        remaining -= len(partitions)
    return topics, None


def _partitions(info: TopicInfo, start: int, most: int) -> tuple[list[Partition], int | None]:
    """Partitions ``start`` up to ``most`` of them, and the first left out (None: none)."""
    by_index = {p.index: p for p in info.partitions}
    count = len(info.partitions)
    upper = min(count, start + most)
    out = [
        Partition(
            error_code=ErrorCode.NONE,
            partition_index=i,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas),
            isr_nodes=list(p.isr),
            eligible_leader_replicas=[],
            last_known_elr=[],
            offline_replicas=list(p.offline),
        )
        for i in range(start, upper)
        if (p := by_index.get(i)) is not None
    ]
    return out, (upper if upper < count else None)
