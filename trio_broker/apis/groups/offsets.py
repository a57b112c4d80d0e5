"""Committed offsets APIs: OffsetCommit v2-10, OffsetFetch v1-10, OffsetDelete v0.

Thin: partitions of topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION here
(OffsetCommit, OffsetDelete), the rest goes to the group coordinator through
``ctx.broker``; no offsets are kept or written here. An OffsetCommit is answered once its
records are in ``__consumer_offsets``.
OffsetCommit v2-v4 may give a retention time (kept as the offsets' expiry time); later
versions use ``offsets.retention.minutes``. OffsetFetch: v1 has no top-level error, so a
group-level error is reported on every partition; from v2 a null topic list asks for all
of the group's offsets; v8 asks for several groups at once. v9 (KIP-848) is v8 for the
classic groups served here: OffsetCommit's generation is the classic generation, a commit
with a generation >= 0 to a group that does not exist is GROUP_ID_NOT_FOUND (older versions:
ILLEGAL_GENERATION); for a consumer-protocol group (KIP-848) OffsetCommit's generation is
the member epoch, and OffsetCommit and OffsetFetch check the member and its epoch as Kafka
does (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). v10 (KIP-848) names topics by id, in the request
and the answer: an id no topic has is UNKNOWN_TOPIC_ID for each of its partitions (after
the group's authorization, as Kafka checks), and OffsetFetch of all a group's offsets
answers each topic by its id (offsets of a topic that no longer exists are left out: v10
cannot name it). Offsets are kept by topic name, as ``__consumer_offsets`` holds them.

Authorization, as Kafka: OffsetCommit needs READ on the group (else every partition is
GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED);
OffsetFetch DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic: a named
topic not allowed is TOPIC_AUTHORIZATION_FAILED, and asking for all offsets leaves such
topics out; OffsetDelete DELETE on the group and READ on each topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from ...protocol.errors import ErrorCode
from ...protocol.messages.group_offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from ..authz import GROUP, TOPIC, Op, allowed
from ..context import RequestContext
from ..group_services import (
    CommittedOffset,
    OffsetCommitEntry,
    TopicPartition,
    coordinator_of,
    unknown_topic_partition,
)

# ------------------------------------------------------------------ OffsetCommit


def _name_of(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    """The name of the topic with ``topic_id`` (v10+), or None if no topic has it."""
    info = ctx.broker.topic_by_id(topic_id)
    return info.name if info is not None else None


def _id_of(ctx: RequestContext, name: str) -> uuid.UUID | None:
    info = ctx.broker.topic(name)
    return info.topic_id if info is not None else None


async def offset_commit(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    v = ctx.api_version
    errors: dict[TopicPartition, int] = {}
    entries: list[OffsetCommitEntry] = []
    may_read_group = allowed(ctx, Op.READ, GROUP, req.group_id)
    # each request topic's name (v10: its id's; "" when no topic has the id)
    names = [(_name_of(ctx, t.topic_id) or "") if v >= 10 else t.name for t in req.topics]
    for t, name in zip(req.topics, names, strict=True):
        may_read = may_read_group and bool(name) and allowed(ctx, Op.READ, TOPIC, name)
        for p in t.partitions:
            if not may_read_group:
                errors[(name, p.partition_index)] = ErrorCode.GROUP_AUTHORIZATION_FAILED
                continue
            if not name and v >= 10:
                errors[(name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            if not may_read:
                errors[(name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if unknown_topic_partition(ctx, name, p.partition_index):
                errors[(name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entries.append(
                OffsetCommitEntry(
                    topic=name,
                    partition=p.partition_index,
                    offset=p.committed_offset,
                    leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                    metadata=p.committed_metadata,
                )
            )
    if entries:
        errors.update(
            await coordinator_of(ctx).commit_offsets(
                req.group_id,
                req.generation_id_or_member_epoch,
                req.member_id,
                req.group_instance_id if v >= 7 else None,
                req.retention_time_ms if v <= 4 else -1,
                entries,
                # v9 (KIP-848) names the missing group; older versions keep Kafka's answer.
                ErrorCode.GROUP_ID_NOT_FOUND if v >= 9 else ErrorCode.ILLEGAL_GENERATION,
            )
        )
    Topic, Partition = OffsetCommitResponse.Topic, OffsetCommitResponse.Topic.Partition
    return OffsetCommitResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        topics=[
            Topic(
                name=name,
                topic_id=t.topic_id if v >= 10 else None,
                partitions=[
                    Partition(
                        partition_index=p.partition_index,
                        error_code=errors[(name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t, name in zip(req.topics, names, strict=True)
        ],
    )


# ------------------------------------------------------------------ OffsetFetch


def _wanted(topics: Sequence[tuple[str, Sequence[int]]] | None) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(name, p) for name, partitions in topics for p in partitions]


_DENIED = CommittedOffset(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _fetch_group(
    ctx: RequestContext,
    group_id: str,
    wanted: list[TopicPartition] | None,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> tuple[int, dict[TopicPartition, CommittedOffset]]:
    """One group's committed offsets, as far as the principal may see them."""
    if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
    seen: dict[str, bool] = {}

    def visible(topic: str, log_denied: bool) -> bool:
        if topic not in seen:
            seen[topic] = allowed(ctx, Op.DESCRIBE, TOPIC, topic, log_denied=log_denied)
        return seen[topic]

    if wanted is None:
        code, found = coordinator_of(ctx).fetch_offsets(group_id, None, require_stable, member)
        return code, {tp: c for tp, c in found.items() if visible(tp[0], False)}
    mine = [tp for tp in wanted if visible(tp[0], True)]
    code, found = coordinator_of(ctx).fetch_offsets(group_id, mine, require_stable, member)
    return code, {**found, **{tp: _DENIED for tp in wanted if not seen[tp[0]]}}


def _by_topic(
    wanted: list[TopicPartition] | None, found: dict[TopicPartition, CommittedOffset]
) -> dict[str, list[tuple[int, CommittedOffset]]]:
    """Results grouped by topic, in the order asked (or sorted, when all were asked)."""
    order = wanted if wanted is not None else sorted(found)
    out: dict[str, list[tuple[int, CommittedOffset]]] = {}
    for tp in order:
        out.setdefault(tp[0], []).append((tp[1], found.get(tp, CommittedOffset())))
    return out


def _topics(
    topic: Any,
    partition: Any,
    wanted: list[TopicPartition] | None,
    found: dict[TopicPartition, CommittedOffset],
) -> list[Any]:
    """The response's topics, in the classes of its version (one group's, v8+, or the
    whole response's)."""
    return [
        topic(
            name=name,
            partitions=[
                partition(
                    partition_index=index,
                    committed_offset=c.offset,
                    committed_leader_epoch=c.leader_epoch,
                    metadata=c.metadata,
                    error_code=c.error_code,
                )
                for index, c in parts
            ],
        )
        for name, parts in _by_topic(wanted, found).items()
    ]


def _by_id(
    ctx: RequestContext, topics: list[Any], unknown: list[tuple[uuid.UUID, Sequence[int]]]
) -> list[Any]:
    """v10's topics: each named by its id (a topic that no longer exists is left out),
    then those asked for by an id no topic has, each partition UNKNOWN_TOPIC_ID."""
    Topics = OffsetFetchResponse.Group.Topics
    named = []
    for t in topics:
        topic_id = _id_of(ctx, t.name)
        if topic_id is not None:
            t.topic_id = topic_id
            named.append(t)
    for topic_id, partitions in unknown:
        named.append(
            Topics(
                topic_id=topic_id,
                partitions=[
                    Topics.Partitions(
                        partition_index=p,
                        committed_offset=-1,
                        metadata="",  # Kafka's NO_METADATA
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                    )
                    for p in partitions
                ],
            )
        )
    return named


async def offset_fetch(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    v = ctx.api_version
    require_stable = req.require_stable if v >= 7 else False
    if v >= 8:
        groups = []
        G = OffsetFetchResponse.Group
        for g in req.groups:
            asked: list[tuple[str, Sequence[int]]] | None = None
            unknown: list[tuple[uuid.UUID, Sequence[int]]] = []  # v10: ids no topic has
            if g.topics is not None and v >= 10:
                asked = []
                for t in g.topics:
                    name = _name_of(ctx, t.topic_id)
                    if name is None:
                        unknown.append((t.topic_id, t.partition_indexes))
                    else:
                        asked.append((name, t.partition_indexes))
            elif g.topics is not None:
                asked = [(t.name, t.partition_indexes) for t in g.topics]
            wanted = _wanted(asked)
            member = (g.member_id, g.member_epoch) if v >= 9 else (None, -1)
            code, found = _fetch_group(ctx, g.group_id, wanted, require_stable, member)
            topics = [] if code else _topics(G.Topics, G.Topics.Partitions, wanted, found)
            if v >= 10 and not code:
                topics = _by_id(ctx, topics, unknown)
            groups.append(G(group_id=g.group_id, error_code=code, topics=topics))
        return OffsetFetchResponse(throttle_time_ms=ctx.throttle_time_ms, groups=groups)

    asked = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
    wanted = _wanted(asked if v >= 2 else (asked or []))
    code, found = _fetch_group(ctx, req.group_id, wanted, require_stable)
    if code and v < 2:  # no top-level error field: every partition carries it
        found = {tp: CommittedOffset(error_code=code) for tp in wanted or []}
    elif code:
        found = {}
        wanted = []
    T = OffsetFetchResponse.Topic
    return OffsetFetchResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=code,
        topics=_topics(T, T.Partition, wanted, found),
    )


# ------------------------------------------------------------------ OffsetDelete


async def offset_delete(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    errors: dict[TopicPartition, int] = {}
    wanted: list[TopicPartition] = []
    if not allowed(ctx, Op.DELETE, GROUP, req.group_id):
        return OffsetDeleteResponse(
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time_ms=ctx.throttle_time_ms
        )
    for t in req.topics:
        may_read = allowed(ctx, Op.READ, TOPIC, t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if not may_read:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif unknown_topic_partition(ctx, *tp):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
    code, results = await coordinator_of(ctx).delete_offsets(req.group_id, wanted)
    T = OffsetDeleteResponse.Topic
    if code:
        return OffsetDeleteResponse(error_code=code, throttle_time_ms=ctx.throttle_time_ms)
    errors.update(results)
    return OffsetDeleteResponse(
        error_code=ErrorCode.NONE,
        throttle_time_ms=ctx.throttle_time_ms,
        topics=[
            T(
                name=t.name,
                partitions=[
                    T.Partition(
                        partition_index=p.partition_index,
                        error_code=errors.get((t.name, p.partition_index), ErrorCode.NONE),
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ],
    )
