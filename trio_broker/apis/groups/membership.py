"""Group membership APIs: FindCoordinator v0-6, JoinGroup v0-9, SyncGroup v0-5,
Heartbeat v0-4, LeaveGroup v0-5, DescribeGroups v0-6, ListGroups v0-5, DeleteGroups v0-2.
ListGroups v5 names each group's type: classic, or consumer for a KIP-848 group (whose
state is Kafka's consumer group state: Empty, Assigning, Reconciling, Stable); DescribeGroups
answers a consumer group as Kafka does, as a group that is not there (it is not classic).

Thin: each handler turns its request into a call on the group coordinator (through
``ctx.broker``) and the answer into a response of the request's version; they must not
keep group state or decide protocol outcomes, and never import trio or the network. A JoinGroup or
SyncGroup the coordinator cannot answer yet comes back as a ``Pending``: the request is
parked in the ``rebalance`` purgatory under it and answered when the coordinator fills it
in (or, if the broker shuts down first, with NOT_COORDINATOR so the client looks again).

FindCoordinator: a broker on its own coordinates every group; in a ZooKeeper cluster the
leader of the group's partition of ``__consumer_offsets`` does
(``locate_group_coordinator``); a TRANSACTION key likewise names the transaction
coordinator (``BrokerView.transactions``: the leader of the id's partition of
``__transaction_state``), with DESCRIBE on the TRANSACTIONAL_ID (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED). A SHARE key (v6+, KIP-932)
needs CLUSTER_ACTION on the cluster, as Kafka 3.9 asks, and is then
COORDINATOR_NOT_AVAILABLE too: share groups are not served; before v6 it is
INVALID_REQUEST.

Authorization, as Kafka: FindCoordinator and DescribeGroups need DESCRIBE on the group,
JoinGroup, SyncGroup, Heartbeat and LeaveGroup READ, DeleteGroups DELETE; else
GROUP_AUTHORIZATION_FAILED. ListGroups lists every group to a principal with DESCRIBE on
the cluster, else only the groups it may DESCRIBE.

DescribeGroups of a group that does not exist answers it Dead with no members before v6,
and from v6 GROUP_ID_NOT_FOUND with Kafka's message ("Group g not found.") and an empty
state (KIP-1043).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ...protocol.errors import ErrorCode
from ...protocol.messages.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ...security.acl import ResourceType
from ..authz import (
    GROUP,
    NOT_REQUESTED_OPERATIONS,
    Op,
    allowed,
    authorized_operations,
    cluster_allowed,
)
from ..context import Deferred, RequestContext
from ..group_services import (
    JoinParams,
    JoinResult,
    MemberIdentity,
    Pending,
    SyncParams,
    SyncResult,
    coordinator_of,
)
from .consumer import BrokerTopics

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2  # v6+ (KIP-932)
NO_SHARE_GROUPS = "share groups are not supported by this broker"

R = TypeVar("R")


def _park(
    ctx: RequestContext,
    pending: Pending[R],
    respond: Callable[[R], Any],
    on_shutdown: R,
) -> Deferred:
    async def complete(expired: bool) -> Any:
        result = pending.result
        return respond(result if result is not None else on_shutdown)

    return ctx.broker.defer(  # type: ignore[attr-defined, no-any-return]
        ctx,
        keys=[pending],
        timeout_ms=pending.timeout_ms,
        ready=lambda: pending.done,
        complete=complete,
        purgatory="rebalance",
    )


# ------------------------------------------------------------------ FindCoordinator


async def find_coordinator(
    ctx: RequestContext, req: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    v = ctx.api_version
    key_type = req.key_type if v >= 1 else KEY_TYPE_GROUP
    keys = req.coordinator_keys if v >= 4 else [req.key]
    endpoints = {e.node_id: e for e in ctx.broker.endpoints(ctx.listener)}
    found: list[tuple[str, int, str, int, int, str | None]] = []
    for key in keys:
        if key_type == KEY_TYPE_GROUP and not allowed(ctx, Op.DESCRIBE, GROUP, key):
            found.append((key, -1, "", -1, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
            continue
        if key_type == KEY_TYPE_TRANSACTION and not allowed(
            ctx, Op.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
        ):
            denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            found.append((key, -1, "", -1, denied, None))
            continue
        error: int = ErrorCode.COORDINATOR_NOT_AVAILABLE
        message: str | None
        if key_type in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION):
            if key_type == KEY_TYPE_GROUP:
                node, error, message = await ctx.broker.locate_group_coordinator(key)
            else:
                node, error, message = await ctx.broker.transactions.locate(key)
            endpoint = endpoints.get(node)
            if error == ErrorCode.NONE and endpoint is not None:
                found.append((key, node, endpoint.host, endpoint.port, ErrorCode.NONE, None))
                continue
            if error == ErrorCode.NONE:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
                message = f"broker {node} has no {ctx.listener} listener"
        elif key_type == KEY_TYPE_SHARE and v >= 6:
            message = NO_SHARE_GROUPS
            if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
                error, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
        else:
            error, message = ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}"
        found.append((key, -1, "", -1, error, message))
    if v >= 4:
        return FindCoordinatorResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=key, node_id=node, host=host, port=port, error_code=code, error_message=msg
                )
                for key, node, host, port, code, msg in found
            ],
        )
    _, node, host, port, code, msg = found[0]
    return FindCoordinatorResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=code,
        error_message=msg,
        node_id=node,
        host=host,
        port=port,
    )


# ------------------------------------------------------------------ JoinGroup


async def join_group(ctx: RequestContext, req: JoinGroupRequest) -> Any:
    v = ctx.api_version
    may_read = allowed(ctx, Op.READ, GROUP, req.group_id)
    params = JoinParams(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=req.group_instance_id if v >= 5 else None,
        client_id=ctx.client_id or "",
        client_host=f"/{ctx.client_host}",
        session_timeout_ms=req.session_timeout_ms,
        # v0 has no rebalance timeout: the session timeout serves as one
        rebalance_timeout_ms=req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms,
        protocol_type=req.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in req.protocols),
        require_known_member_id=v >= 4,
        supports_skip_assignment=v >= 9,
        reason=req.reason if v >= 8 else None,
    )

    def respond(result: JoinResult) -> JoinGroupResponse:
        return JoinGroupResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=result.error_code,
            generation_id=result.generation_id,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name if v >= 7 else (result.protocol_name or ""),
            leader=result.leader,
            skip_assignment=result.skip_assignment,
            member_id=result.member_id,
            members=[
                JoinGroupResponse.Member(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata,
                )
                for m in result.members
            ],
        )

    if not may_read:
        return respond(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id=req.member_id))
    outcome = coordinator_of(ctx).join_group(params, BrokerTopics(ctx))
    if isinstance(outcome, Pending):
        gone = JoinResult(ErrorCode.NOT_COORDINATOR, member_id=req.member_id)
        return _park(ctx, outcome, respond, gone)
    return respond(outcome)


# ------------------------------------------------------------------ SyncGroup


async def sync_group(ctx: RequestContext, req: SyncGroupRequest) -> Any:
    v = ctx.api_version

    def respond(result: SyncResult) -> SyncGroupResponse:
        return SyncGroupResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=result.error_code,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            assignment=result.assignment,
        )

    if not allowed(ctx, Op.READ, GROUP, req.group_id):
        return respond(SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    if v >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return respond(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    params = SyncParams(
        req.group_id,
        req.generation_id,
        req.member_id,
        req.group_instance_id if v >= 3 else None,
        req.protocol_type if v >= 5 else None,
        req.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in req.assignments},
    )
    outcome = coordinator_of(ctx).sync_group(params)
    if isinstance(outcome, Pending):
        return _park(ctx, outcome, respond, SyncResult(ErrorCode.NOT_COORDINATOR))
    return respond(outcome)


# ------------------------------------------------------------------ Heartbeat


async def heartbeat(ctx: RequestContext, req: HeartbeatRequest) -> HeartbeatResponse:
    if not allowed(ctx, Op.READ, GROUP, req.group_id):
        return HeartbeatResponse(
            throttle_time_ms=ctx.throttle_time_ms, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
        )
    code = coordinator_of(ctx).heartbeat(
        req.group_id,
        req.generation_id,
        req.member_id,
        req.group_instance_id if ctx.api_version >= 3 else None,
    )
    return HeartbeatResponse(throttle_time_ms=ctx.throttle_time_ms, error_code=code)


# ------------------------------------------------------------------ LeaveGroup


async def leave_group(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    v = ctx.api_version
    if not allowed(ctx, Op.READ, GROUP, req.group_id):
        return LeaveGroupResponse(
            throttle_time_ms=ctx.throttle_time_ms, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED
        )
    if v < 3:
        members = [MemberIdentity(req.member_id)]
    else:
        members = [
            MemberIdentity(m.member_id, m.group_instance_id, m.reason if v >= 5 else None)
            for m in req.members
        ]
    result = coordinator_of(ctx).leave_group(req.group_id, members)
    if v < 3:
        # one member, no per-member results: its error is the request's
        code = result.error_code
        if code == ErrorCode.NONE and result.members:
            code = result.members[0][1]
        return LeaveGroupResponse(throttle_time_ms=ctx.throttle_time_ms, error_code=code)
    return LeaveGroupResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=result.error_code,
        members=[
            LeaveGroupResponse.MemberResponse(
                member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=code
            )
            for m, code in result.members
        ],
    )


# ------------------------------------------------------------------ DescribeGroups


async def describe_groups(
    ctx: RequestContext, req: DescribeGroupsRequest
) -> DescribeGroupsResponse:
    coordinator = coordinator_of(ctx)
    with_operations = ctx.api_version >= 3 and req.include_authorized_operations
    groups = []
    Described = DescribeGroupsResponse.DescribedGroup
    for group_id in req.groups:
        if not allowed(ctx, Op.DESCRIBE, GROUP, group_id):
            groups.append(
                Described(
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=NOT_REQUESTED_OPERATIONS,
                )
            )
            continue
        operations = (
            authorized_operations(ctx, GROUP, group_id)
            if with_operations
            else NOT_REQUESTED_OPERATIONS
        )
        d = coordinator.describe_group(group_id)
        if ctx.api_version >= 6 and d.error_code == ErrorCode.NONE and d.state == DEAD:
            groups.append(
                Described(
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                    group_id=group_id,
                    group_state="",
                    protocol_type="",
                    protocol_data="",
                    members=[],
                    authorized_operations=NOT_REQUESTED_OPERATIONS,
                )
            )
            continue
        groups.append(
            DescribeGroupsResponse.DescribedGroup(
                error_code=d.error_code,
                group_id=group_id,
                group_state=d.state,
                protocol_type=d.protocol_type,
                protocol_data=d.protocol,
                members=[
                    DescribeGroupsResponse.DescribedGroup.DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in d.members
                ],
                authorized_operations=operations,
            )
        )
    return DescribeGroupsResponse(throttle_time_ms=ctx.throttle_time_ms, groups=groups)


# ------------------------------------------------------------------ ListGroups


# The state of a group that does not exist (Kafka's classic group state DEAD).
DEAD = "Dead"


async def list_groups(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    states = req.states_filter if ctx.api_version >= 4 else []
    types = {t.lower() for t in req.types_filter} if ctx.api_version >= 5 else set()
    code, overviews = coordinator_of(ctx).list_groups(states)
    if types:
        overviews = [g for g in overviews if g.group_type in types]
    if not cluster_allowed(ctx, Op.DESCRIBE, log_denied=False):
        overviews = [
            g for g in overviews if allowed(ctx, Op.DESCRIBE, GROUP, g.group_id, log_denied=False)
        ]
    return ListGroupsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=code,
        groups=[
            ListGroupsResponse.ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.state,
                group_type=g.group_type,
            )
            for g in overviews
        ],
    )


# ------------------------------------------------------------------ DeleteGroups


async def delete_groups(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(req.groups_names))
    denied = {g for g in names if not allowed(ctx, Op.DELETE, GROUP, g)}
    allowed_names = [g for g in names if g not in denied]
    results = await coordinator_of(ctx).delete_groups(allowed_names) if allowed_names else {}
    results = {**results, **{g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in denied}}
    return DeleteGroupsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=results[g])
            for g in dict.fromkeys(req.groups_names)
        ],
    )
