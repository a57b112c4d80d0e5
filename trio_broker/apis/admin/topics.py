"""Topic administration: CreateTopics v2-v7, DeleteTopics v1-v6, CreatePartitions v0-v3.

The replication factor (-1: ``default.replication.factor``) and a manual assignment are
the broker's to check: one broker on its own holds every replica (a factor other than 1 is
INVALID_REPLICATION_FACTOR, an assignment naming another broker
INVALID_REPLICA_ASSIGNMENT); a ZooKeeper cluster places replicas on its live brokers, new
partitions too (CreatePartitions' assignments are checked there).
Topic configs are checked against Kafka's topic config names; an unknown or invalid one is
INVALID_CONFIG with a message naming it. ``validate_only`` runs every check and creates
nothing. A topic named twice in one request is INVALID_REQUEST. Authorization, as Kafka:
creating needs CREATE on the cluster or on the topic, deleting DELETE and adding
partitions ALTER on the topic; else TOPIC_AUTHORIZATION_FAILED (checked before existence,
so an unauthorized client learns nothing of the topic).
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID, item_type
from ..authz import TOPIC, Op, allowed, cluster_allowed
from ..context import RequestContext
from ..services import NewTopic, TopicError

_CREATE = spec_for(ApiKey.CreateTopics)
_DELETE = spec_for(ApiKey.DeleteTopics)
_PARTITIONS = spec_for(ApiKey.CreatePartitions)
assert _CREATE is not None and _DELETE is not None and _PARTITIONS is not None
CreateTopicsResponse: Any = _CREATE.response
CreatableTopicResult: Any = item_type(CreateTopicsResponse, "topics")
CreatableTopicConfigs: Any = item_type(CreatableTopicResult, "configs")
DeleteTopicsResponse: Any = _DELETE.response
DeletableTopicResult: Any = item_type(DeleteTopicsResponse, "responses")
CreatePartitionsResponse: Any = _PARTITIONS.response
CreatePartitionsTopicResult: Any = item_type(CreatePartitionsResponse, "results")


async def create_topics(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    counts = Counter(t.name for t in req.topics)
    may_create_any = cluster_allowed(ctx, Op.CREATE, log_denied=False)
    results = []
    todo = []
    for t in req.topics:
        result = CreatableTopicResult(name=t.name, error_code=ErrorCode.NONE)
        results.append(result)
        if counts[t.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"topic {t.name!r} appears more than once in the request"
        elif not may_create_any and not allowed(ctx, Op.CREATE, TOPIC, t.name):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            todo.append((t, result))
    # Side by side: in a ZooKeeper cluster each waits for the controller to place it and
    # for this broker's metadata to show it, and those waits overlap, as Kafka's one
    # delayed operation for the whole request does.
    await broker.side_by_side(
        [functools.partial(_create_one, broker, req.validate_only, t, r) for t, r in todo]
    )
    return CreateTopicsResponse(throttle_time_ms=ctx.throttle_time_ms, topics=results)


async def _create_one(broker: Any, validate_only: bool, t: Any, result: Any) -> None:
    num_partitions = t.num_partitions
    rf = t.replication_factor
    if t.assignments:
        if num_partitions != -1 or rf != -1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = "give either assignments or partitions and replication"
            return
        num_partitions = len(t.assignments)
    if num_partitions == -1:
        num_partitions = int(broker.config_value("num.partitions"))
    if rf == -1:
        rf = int(broker.config_value("default.replication.factor"))
    configs = {c.name: c.value for c in t.configs}
    replicas = [a.broker_ids for a in t.assignments] if t.assignments else None
    try:
        info = await broker.create_topic(
            NewTopic(t.name, num_partitions, configs, rf, replicas), validate_only=validate_only
        )
    except TopicError as exc:
        result.error_code = exc.error_code
        result.error_message = exc.message
        return
    result.topic_id = info.topic_id if not validate_only else ZERO_UUID
    result.num_partitions = num_partitions
    result.replication_factor = len(t.assignments[0].broker_ids) if t.assignments else rf
    result.configs = [
        CreatableTopicConfigs(
            name=e.name,
            value=e.text,
            read_only=e.read_only,
            config_source=int(e.source),
            is_sensitive=e.is_sensitive,
        )
        for e in broker.topic_config_entries(t.name, configs).values()
    ]


async def delete_topics(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    wanted: list[tuple[str | None, Any]] = (
        [(t.name, t.topic_id) for t in req.topics]
        if ctx.api_version >= 6
        else [(name, ZERO_UUID) for name in req.topic_names]
    )
    results = []
    for name, topic_id in wanted:
        result = DeletableTopicResult(name=name, topic_id=topic_id, error_code=ErrorCode.NONE)
        results.append(result)
        if name is not None and not allowed(ctx, Op.DELETE, TOPIC, name):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        info = broker.topic(name) if name is not None else broker.topic_by_id(topic_id)
        if info is not None and name is None and not allowed(ctx, Op.DELETE, TOPIC, info.name):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        if info is None:
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result.error_code = missing if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
            continue
        result.name, result.topic_id = info.name, info.topic_id
        try:
            await broker.delete_topic(info.name)
        except TopicError as exc:
            result.error_code = exc.error_code
            result.error_message = exc.message
    return DeleteTopicsResponse(throttle_time_ms=ctx.throttle_time_ms, responses=results)


async def create_partitions(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        result = CreatePartitionsTopicResult(name=t.name, error_code=ErrorCode.NONE)
        results.append(result)
        if counts[t.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = f"topic {t.name!r} appears more than once in the request"
            continue
        if not allowed(ctx, Op.ALTER, TOPIC, t.name):
            result.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        replicas = None if t.assignments is None else [a.broker_ids for a in t.assignments]
        try:
            await broker.create_partitions(
                t.name, t.count, validate_only=req.validate_only, replicas=replicas
            )
        except TopicError as exc:
            result.error_code = exc.error_code
            result.error_message = exc.message
    return CreatePartitionsResponse(throttle_time_ms=ctx.throttle_time_ms, results=results)
