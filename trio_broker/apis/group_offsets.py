"""Committed offsets APIs: OffsetCommit v2-8, OffsetFetch v1-8, OffsetDelete v0.

Thin: partitions of topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION here
(OffsetCommit, OffsetDelete), the rest goes to the group coordinator through
``ctx.broker``; no offsets are kept or written here. An OffsetCommit is answered once its
records are in ``__consumer_offsets``.
OffsetCommit v2-v4 may give a retention time (kept as the offsets' expiry time); later
versions use ``offsets.retention.minutes``. OffsetFetch: v1 has no top-level error, so a
group-level error is reported on every partition; from v2 a null topic list asks for all
of the group's offsets; v8 asks for several groups at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol.errors import ErrorCode
from ..protocol.messages.group_offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from .context import RequestContext
from .group_services import (
    CommittedOffset,
    OffsetCommitEntry,
    TopicPartition,
    coordinator_of,
    unknown_topic_partition,
)

# ------------------------------------------------------------------ OffsetCommit


async def offset_commit(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    v = ctx.api_version
    errors: dict[TopicPartition, int] = {}
    entries: list[OffsetCommitEntry] = []
    for t in req.topics:
        for p in t.partitions:
            if unknown_topic_partition(ctx, t.name, p.partition_index):
                errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            entries.append(
                OffsetCommitEntry(
                    topic=t.name,
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
            )
        )
    Topic, Partition = OffsetCommitResponse.Topic, OffsetCommitResponse.Topic.Partition
    return OffsetCommitResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        topics=[
            Topic(
                name=t.name,
                partitions=[
                    Partition(
                        partition_index=p.partition_index,
                        error_code=errors[(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ],
    )


# ------------------------------------------------------------------ OffsetFetch


def _wanted(topics: Sequence[tuple[str, Sequence[int]]] | None) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(name, p) for name, partitions in topics for p in partitions]


def _by_topic(
    wanted: list[TopicPartition] | None, found: dict[TopicPartition, CommittedOffset]
) -> dict[str, list[tuple[int, CommittedOffset]]]:
    """Results grouped by topic, in the order asked (or sorted, when all were asked)."""
    order = wanted if wanted is not None else sorted(found)
    out: dict[str, list[tuple[int, CommittedOffset]]] = {}
    for tp in order:
        out.setdefault(tp[0], []).append((tp[1], found.get(tp, CommittedOffset())))
    return out


async def offset_fetch(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    v = ctx.api_version
    coordinator = coordinator_of(ctx)
    require_stable = req.require_stable if v >= 7 else False
    if v >= 8:
        groups = []
        for g in req.groups:
            asked = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            wanted = _wanted(asked)
            code, found = coordinator.fetch_offsets(g.group_id, wanted, require_stable)
            G = OffsetFetchResponse.Group
            groups.append(
                G(
                    group_id=g.group_id,
                    error_code=code,
                    topics=[]
                    if code
                    else [
                        G.Topics(
                            name=name,
                            partitions=[
                                G.Topics.Partitions(
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
                    ],
                )
            )
        return OffsetFetchResponse(throttle_time_ms=ctx.throttle_time_ms, groups=groups)

    asked = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
    wanted = _wanted(asked if v >= 2 else (asked or []))
    code, found = coordinator.fetch_offsets(req.group_id, wanted, require_stable)
    if code and v < 2:  # no top-level error field: every partition carries it
        found = {tp: CommittedOffset(error_code=code) for tp in wanted or []}
    elif code:
        found = {}
        wanted = []
    T = OffsetFetchResponse.Topic
    return OffsetFetchResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=code,
        topics=[
            T(
                name=name,
                partitions=[
                    T.Partition(
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
        ],
    )


# ------------------------------------------------------------------ OffsetDelete


async def offset_delete(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    errors: dict[TopicPartition, int] = {}
    wanted: list[TopicPartition] = []
    for t in req.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if unknown_topic_partition(ctx, *tp):
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
