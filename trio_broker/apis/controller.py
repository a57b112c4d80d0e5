"""The inter-broker control requests: LeaderAndIsr v0-7, StopReplica v0-4, UpdateMetadata
v0-8 (the versions of Kafka 3.9, the last release that had them), and ControlledShutdown
v1-3, a stopping broker's request to the controller (served in a ZooKeeper cluster only).

They are served on the control-plane listener only (the API table marks them control-only;
elsewhere they close the connection as invalid requests). The handlers decode every
version's layout into plain records and leave the effect to the broker
(``leader_and_isr``, ``stop_replicas``, ``update_metadata``). Each needs CLUSTER_ACTION on
the cluster; without it the request changes nothing and is CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ErrorCode
from ..protocol.messages.controller import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    LeaderAndIsrPartitionError,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from ..protocol.schema import ZERO_UUID
from .authz import Op, cluster_allowed
from .context import RequestContext
from .services import ClusterBroker, ClusterMetadata, PartitionAssignment, PartitionInfo

# Kafka's SecurityProtocol ids, for UpdateMetadata v1-v2 endpoints (no listener names yet).
_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


async def leader_and_isr(ctx: RequestContext, req: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
        return LeaderAndIsrResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    v = ctx.api_version
    assignments: list[PartitionAssignment] = []
    states: list[tuple[str, Any, Any]]
    if v < 2:
        states = [(s.topic_name, None, s) for s in req.ungrouped_partition_states]
    else:
        states = [
            (t.topic_name, t.topic_id if v >= 5 else None, s)
            for t in req.topic_states
            for s in t.partition_states
        ]
    for topic, topic_id, s in states:
        assignments.append(
            PartitionAssignment(
                topic=topic,
                topic_id=topic_id,
                partition=s.partition_index,
                leader=s.leader,
                leader_epoch=s.leader_epoch,
                replicas=tuple(s.replicas),
                isr=tuple(s.isr),
                version=s.partition_epoch,
            )
        )
    errors = await ctx.broker.leader_and_isr(req.controller_epoch, assignments)
    results = [
        LeaderAndIsrPartitionError(topic_name=a.topic, partition_index=a.partition, error_code=e)
        for a, e in zip(assignments, errors, strict=True)
    ]
    if v < 5:
        return LeaderAndIsrResponse(error_code=ErrorCode.NONE, partition_errors=results)
    by_topic: dict[Any, list[LeaderAndIsrPartitionError]] = {}
    for a, r in zip(assignments, results, strict=True):
        by_topic.setdefault(a.topic_id or ZERO_UUID, []).append(r)
    return LeaderAndIsrResponse(
        error_code=ErrorCode.NONE,
        topics=[
            LeaderAndIsrResponse.TopicError(topic_id=tid, partition_errors=errs)
            for tid, errs in by_topic.items()
        ],
    )


async def stop_replica(ctx: RequestContext, req: StopReplicaRequest) -> StopReplicaResponse:
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
        return StopReplicaResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    v = ctx.api_version
    partitions: list[tuple[str, int, bool]]
    if v == 0:
        partitions = [
            (p.topic_name, p.partition_index, req.delete_partitions)
            for p in req.ungrouped_partitions
        ]
    elif v <= 2:
        partitions = [
            (t.name, index, req.delete_partitions)
            for t in req.topics
            for index in t.partition_indexes
        ]
    else:
        partitions = [
            (t.topic_name, p.partition_index, p.delete_partition)
            for t in req.topic_states
            for p in t.partition_states
        ]
    errors = await ctx.broker.stop_replicas(req.controller_epoch, partitions)
    return StopReplicaResponse(
        error_code=ErrorCode.NONE,
        partition_errors=[
            StopReplicaResponse.PartitionError(topic_name=t, partition_index=p, error_code=e)
            for (t, p, _), e in zip(partitions, errors, strict=True)
        ],
    )


async def update_metadata(
    ctx: RequestContext, req: UpdateMetadataRequest
) -> UpdateMetadataResponse:
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
        return UpdateMetadataResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    v = ctx.api_version
    brokers = []
    for b in req.live_brokers:
        if v == 0:
            endpoints = {"PLAINTEXT": (b.v0_host, b.v0_port)}
        else:
            endpoints = {
                (e.listener if v >= 3 else _PROTOCOL_NAMES.get(e.security_protocol, "PLAINTEXT")): (
                    e.host,
                    e.port,
                )
                for e in b.endpoints
            }
        brokers.append(ClusterBroker(b.id, endpoints, b.rack if v >= 2 else None))
    if v < 5:
        states = [(s.topic_name, s) for s in req.ungrouped_partition_states]
        topic_ids: dict[str, Any] = {}
    else:
        states = [(t.topic_name, s) for t in req.topic_states for s in t.partition_states]
        topic_ids = {t.topic_name: t.topic_id for t in req.topic_states if v >= 7}
    partitions: dict[str, dict[int, PartitionInfo]] = {}
    for topic, s in states:
        partitions.setdefault(topic, {})[s.partition_index] = PartitionInfo(
            s.partition_index,
            s.leader,
            s.leader_epoch,
            tuple(s.replicas),
            tuple(s.isr),
            tuple(s.offline_replicas) if v >= 4 else (),
        )
    error = await ctx.broker.update_metadata(
        ClusterMetadata(req.controller_id, req.controller_epoch, brokers, partitions, topic_ids)
    )
    return UpdateMetadataResponse(error_code=error)


async def controlled_shutdown(
    ctx: RequestContext, req: ControlledShutdownRequest
) -> ControlledShutdownResponse:
    """Move the stopping broker's leaderships away (NOT_CONTROLLER unless this broker is
    the controller); the answer lists the partitions it still leads."""
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
        return ControlledShutdownResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    error, remaining = await ctx.broker.controlled_shutdown(req.broker_id, req.broker_epoch)
    R = ControlledShutdownResponse.RemainingPartition
    return ControlledShutdownResponse(
        error_code=error,
        remaining_partitions=[R(topic_name=t, partition_index=p) for t, p in remaining],
    )
