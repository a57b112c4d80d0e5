"""Metadata: brokers, cluster id, controller, and topics with their partitions.

v0 asks for all topics with an empty list, v1+ with null. Unknown topics are created when
both the request (v4+) and ``auto.create.topics.enable`` allow it; otherwise they come back
with UNKNOWN_TOPIC_OR_PARTITION. From v10 topic ids are returned, from v12 topics may be
asked for by id, and v13 has a top-level error code (KIP-1102's REBOOTSTRAP_REQUIRED, which
this broker has no cause to send: always NONE). Endpoints are those of the listener the
request arrived on.

Authorization, as Kafka: topics the principal may not DESCRIBE are left out of an
all-topics answer and are TOPIC_AUTHORIZATION_FAILED when named (existing or not, so
names do not leak); creating a topic needs CREATE on the cluster or on the topic, else
TOPIC_AUTHORIZATION_FAILED. The authorized-operations bit fields are filled in when asked.

Brokers and controller are the cluster as the controller last described it to this broker
(a broker on its own: itself). A broker of a ZooKeeper cluster that has not had the
controller's first UpdateMetadata yet knows neither (Kafka answers no brokers and
controller -1 then): Metadata and DescribeCluster wait for it, parked
(``park_until_described``), ``DESCRIBED_WAIT_MS`` at most, and answer what is known then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.errors import ErrorCode
from ..protocol.messages.metadata import MetadataRequest, MetadataResponse
from ..protocol.schema import ZERO_UUID
from ..security.acl import AclOperation
from .authz import (
    CLUSTER,
    NOT_REQUESTED_OPERATIONS,
    TOPIC,
    Op,
    allowed,
    authorized_operations,
    cluster_allowed,
)
from .context import Deferred, RequestContext
from .services import NewTopic, TopicError, TopicInfo
from .topic_names import topic_name_error

Topic = MetadataResponse.Topic
Partition = MetadataResponse.Topic.Partition

# What parked Metadata and DescribeCluster requests wait under, in the "metadata"
# purgatory, for the controller's first UpdateMetadata (the control plane checks it).
DESCRIBED = "cluster described"
# The controller tells a broker of the cluster within moments of its registration (a
# round trip on the control plane), and clients wait far longer for an answer (Kafka's
# request.timeout.ms, 30 s). Past this the answer is what is known: nobody, as Kafka's.
DESCRIBED_WAIT_MS = 5000


def park_until_described(ctx: RequestContext, answer: Callable[[], Awaitable[Any]]) -> Deferred:
    """Answer with ``answer()`` once the controller has described the cluster to this
    broker, or after ``DESCRIBED_WAIT_MS``.

    Why wait rather than answer "nobody" at once, as Kafka does: librdkafka's admin
    client looks for the controller again only when a broker's state or the controller
    id changes (rdkafka_broker.c ``rd_kafka_broker_controller_async``, rdkafka_metadata.c
    ``broker_changes``), and it connects to a broker only when something asks for it. An
    answer that leaves the controller or its broker entry out, then one that completes it
    with the same controller id, leaves its CreateTopics waiting until its timeout."""
    broker = ctx.broker

    async def complete(expired: bool) -> Any:
        return await answer()

    return broker.defer(
        ctx,
        keys=[DESCRIBED],
        timeout_ms=DESCRIBED_WAIT_MS,
        ready=lambda: broker.cluster_described,
        complete=complete,
        purgatory="metadata",
    )


async def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse | Deferred:
    if not ctx.broker.cluster_described:
        return park_until_described(ctx, lambda: _answer(ctx, req))
    return await _answer(ctx, req)


async def _answer(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    v = ctx.api_version
    brokers = [
        MetadataResponse.Broker(node_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
        for e in broker.endpoints(ctx.listener)
    ]
    all_topics = req.topics is None or (v == 0 and not req.topics)
    topics: list[Topic] = []
    if all_topics:
        topics = [
            _describe(t)
            for t in broker.topics()
            if allowed(ctx, Op.DESCRIBE, TOPIC, t.name, log_denied=False)
        ]
    else:
        allow_create = bool(broker.config_value("auto.create.topics.enable")) and (
            v < 4 or req.allow_auto_topic_creation
        )
        for wanted in req.topics or ():
            topics.append(await _lookup(ctx, wanted, allow_create))
    if v >= 8 and req.include_topic_authorized_operations:
        for t in topics:
            if t.error_code == ErrorCode.NONE and t.name is not None:
                t.topic_authorized_operations = authorized_operations(ctx, TOPIC, t.name)
    cluster_operations = NOT_REQUESTED_OPERATIONS
    if 8 <= v <= 10 and req.include_cluster_authorized_operations:
        cluster_operations = authorized_operations(ctx, CLUSTER, "kafka-cluster")
    return MetadataResponse(
        cluster_authorized_operations=cluster_operations,
        throttle_time_ms=ctx.throttle_time_ms,
        brokers=brokers,
        cluster_id=broker.cluster_id,
        controller_id=broker.controller_id,
        topics=topics,
    )


async def _lookup(ctx: RequestContext, wanted: MetadataRequest.Topic, allow_create: bool) -> Topic:
    broker = ctx.broker
    if wanted.name is None:
        info = broker.topic_by_id(wanted.topic_id)
        if info is None:
            return Topic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=wanted.topic_id)
        if not allowed(ctx, Op.DESCRIBE, TOPIC, info.name):
            return _denied(None, wanted.topic_id)
        return _describe(info)
    name = wanted.name
    if not allowed(ctx, Op.DESCRIBE, TOPIC, name):
        return _denied(name, ZERO_UUID)
    info = broker.topic(name)
    if info is not None:
        return _describe(info)
    if allow_create:
        if topic_name_error(name) is not None:
            return Topic(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name)
        if not cluster_allowed(ctx, AclOperation.CREATE, log_denied=False) and not allowed(
            ctx, Op.CREATE, TOPIC, name
        ):
            return _denied(name, ZERO_UUID)
        try:
            info = await broker.create_topic(
                NewTopic(
                    name,
                    int(broker.config_value("num.partitions")),
                    replication_factor=int(broker.config_value("default.replication.factor")),
                )
            )
        except TopicError as exc:
            info = broker.topic(name)  # created meanwhile by another request?
            if info is None:
                return Topic(error_code=exc.error_code, name=name)
        return _describe(info)
    return Topic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID)


def _denied(name: str | None, topic_id: object) -> Topic:
    return Topic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=topic_id)


def _describe(info: TopicInfo) -> Topic:
    return Topic(
        error_code=ErrorCode.NONE,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=[
            Partition(
                # no leader (offline, or not elected yet): Kafka's LEADER_NOT_AVAILABLE
                error_code=ErrorCode.LEADER_NOT_AVAILABLE if p.leader < 0 else ErrorCode.NONE,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=list(p.offline),
            )
            for p in info.partitions
        ],
    )
