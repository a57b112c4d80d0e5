"""AlterPartitionReassignments v0-1 and ListPartitionReassignments v0 (KIP-455): an admin
moves partitions to other brokers, and lists the moves under way. v1's
AllowReplicationFactorChange false (KIP-860) refuses a target with another replica count
than the partition's (or than the move under way's), INVALID_REPLICATION_FACTOR with
Kafka's message, and the answer says which was asked.

Alter needs ALTER on the cluster, List DESCRIBE on the cluster: without it the answer is
CLUSTER_AUTHORIZATION_FAILED at the top level, with nothing else, as Kafka's. Both are the
controller's (``alter_reassignments``, ``list_reassignments``): NOT_CONTROLLER at the top
level on any other broker (the admin client asks the controller Metadata names). Alter
answers per partition (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
NO_REASSIGNMENT_IN_PROGRESS for a cancel of none, with Kafka's messages) once the moves
have begun; List names only the partitions being moved (of those asked for, or all). A
broker on its own is its cluster's controller: a reassignment to itself completes at once,
any other target is INVALID_REPLICA_ASSIGNMENT, and nothing is ever listed as moving.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ...protocol.messages.reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from ..authz import Op, cluster_allowed
from ..context import RequestContext

Altered = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
Ongoing = ListPartitionReassignmentsResponse.OngoingTopicReassignment


async def alter(
    ctx: RequestContext, req: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    allow = req.allow_replication_factor_change if ctx.api_version >= 1 else True
    if not cluster_allowed(ctx, Op.ALTER):
        return _altered(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {}, allow)
    targets = {
        (t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
        for t in req.topics
        for p in t.partitions
    }
    error, results = await ctx.broker.alter_reassignments(targets, req.timeout_ms, allow)
    return _altered(error, results, allow)


def _altered(
    error: int, results: dict[tuple[str, int], tuple[int, str | None]], allow_rf_change: bool
) -> AlterPartitionReassignmentsResponse:
    by_topic: dict[str, list[Altered.ReassignablePartitionResponse]] = {}
    for (topic, p), (code, message) in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            Altered.ReassignablePartitionResponse(
                partition_index=p,
                error_code=code,
                error_message=message if message or not code else ErrorCode(code).name,
            )
        )
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=allow_rf_change,
        error_code=error,
        error_message=None if error == ErrorCode.NONE else ErrorCode(error).name,
        responses=[Altered(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


async def list_ongoing(
    ctx: RequestContext, req: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return _listed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    asked = None
    if req.topics is not None:
        asked = [(t.name, p) for t in req.topics for p in t.partition_indexes]
    error, ongoing = ctx.broker.list_reassignments(asked)
    return _listed(error, ongoing)


def _listed(
    error: int, ongoing: dict[tuple[str, int], tuple[list[int], ...]]
) -> ListPartitionReassignmentsResponse:
    by_topic: dict[str, list[Ongoing.OngoingPartitionReassignment]] = {}
    for (topic, p), (replicas, adding, removing) in sorted(ongoing.items()):
        by_topic.setdefault(topic, []).append(
            Ongoing.OngoingPartitionReassignment(
                partition_index=p,
                replicas=list(replicas),
                adding_replicas=list(adding),
                removing_replicas=list(removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        error_code=error,
        error_message=None if error == ErrorCode.NONE else ErrorCode(error).name,
        topics=[Ongoing(name=t, partitions=ps) for t, ps in by_topic.items()],
    )
