"""KIP-848's consumer group APIs: ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe
v0-1.

Thin: each handler turns its request into a call on the group coordinator (through
``ctx.broker``) and the answer into a response; the topics a heartbeat is assigned from
are the broker's as they are now (``BrokerTopics``). They keep no group state and never
import trio or the network.

When the broker does not serve the consumer protocol (``group.coordinator.rebalance.
protocols`` without ``consumer``), a heartbeat is answered UNSUPPORTED_VERSION with the
message of ``apis.unserved``, as Kafka answers it then.

Authorization, as Kafka: a heartbeat needs READ on the group (else
GROUP_AUTHORIZATION_FAILED) and DESCRIBE on each topic it names (else
TOPIC_AUTHORIZATION_FAILED); ConsumerGroupDescribe needs DESCRIBE on the group. A
described member's topics are named by the broker's current names (a topic deleted since
is left out).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...protocol.errors import ErrorCode
from ...protocol.messages.group_heartbeats import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedAssignment,
    DescribedTopicPartitions,
    HeartbeatAssignment,
    HeartbeatTopicPartitions,
)
from ..authz import GROUP, NOT_REQUESTED_OPERATIONS, TOPIC, Op, allowed, authorized_operations
from ..context import RequestContext
from ..group_services import Assignment, ConsumerHeartbeat, TopicMeta, coordinator_of
from ..unserved import CONSUMER_PROTOCOL_REFUSED


class BrokerTopics:
    """``TopicLookup`` over the broker's topics as they are now."""

    def __init__(self, ctx: RequestContext) -> None:
        self._broker = ctx.broker

    def by_name(self, name: str) -> TopicMeta | None:
        info = self._broker.topic(name)
        if info is None:
            return None
        return TopicMeta(info.name, info.topic_id, len(info.partitions))

    def names(self) -> Iterable[str]:
        return [t.name for t in self._broker.topics()]


async def consumer_group_heartbeat(
    ctx: RequestContext, req: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    def error(code: int, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=code,
            error_message=message,
            member_epoch=0,
            heartbeat_interval_ms=0,
        )

    if not allowed(ctx, Op.READ, GROUP, req.group_id):
        return error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    names = req.subscribed_topic_names or []
    if any(not allowed(ctx, Op.DESCRIBE, TOPIC, t) for t in names):
        return error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    owned = (
        None
        if req.topic_partitions is None
        else {t.topic_id: list(t.partitions) for t in req.topic_partitions}
    )
    params = ConsumerHeartbeat(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=(
            None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names)
        ),
        subscribed_topic_regex=req.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=req.server_assignor,
        owned=owned,
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.client_host}",
        api_version=ctx.api_version,
    )
    result = await coordinator_of(ctx).consumer_group_heartbeat(params, BrokerTopics(ctx))
    if result is None:
        return error(ErrorCode.UNSUPPORTED_VERSION, CONSUMER_PROTOCOL_REFUSED)
    if result.error_code:
        return error(result.error_code, result.error_message)
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=ErrorCode.NONE,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=(
            None
            if result.assignment is None
            else HeartbeatAssignment(
                topic_partitions=[
                    HeartbeatTopicPartitions(topic_id=t, partitions=list(ps))
                    for t, ps in result.assignment.items()
                ]
            )
        ),
    )


def _described(ctx: RequestContext, assignment: Assignment) -> DescribedAssignment:
    out = []
    for topic_id, partitions in assignment.items():
        info = ctx.broker.topic_by_id(topic_id)
        if info is not None:
            out.append(
                DescribedTopicPartitions(
                    topic_id=topic_id, topic_name=info.name, partitions=list(partitions)
                )
            )
    return DescribedAssignment(topic_partitions=out)


async def consumer_group_describe(
    ctx: RequestContext, req: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    Group = ConsumerGroupDescribeResponse.DescribedGroup
    groups = []
    for group_id in req.group_ids:
        if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
            groups.append(
                Group(
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    group_id=group_id,
                    group_state="",
                    group_epoch=0,
                    assignment_epoch=0,
                    assignor_name="",
                    members=[],
                )
            )
            continue
        d = coordinator_of(ctx).consumer_group_describe(group_id)
        operations = (
            authorized_operations(ctx, GROUP, group_id)
            if req.include_authorized_operations
            else NOT_REQUESTED_OPERATIONS
        )
        groups.append(
            Group(
                error_code=d.error_code,
                error_message=d.error_message,
                group_id=group_id,
                group_state=d.state if d.error_code == ErrorCode.NONE else "",
                group_epoch=d.group_epoch,
                assignment_epoch=d.assignment_epoch,
                assignor_name=d.assignor_name,
                members=[
                    Group.Member(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=list(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=_described(ctx, m.assignment),
                        target_assignment=_described(ctx, m.target_assignment),
                        member_type=m.member_type,  # 0: a classic member inside the group
                    )
                    for m in d.members
                ],
                authorized_operations=operations,
            )
        )
    return ConsumerGroupDescribeResponse(throttle_time_ms=ctx.throttle_time_ms, groups=groups)
