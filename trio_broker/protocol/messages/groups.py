"""Group membership: FindCoordinator, Join/Sync/Heartbeat/LeaveGroup, List/Describe/DeleteGroups."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class FindCoordinatorRequest(Request, api_key=10, versions="0-6", flexible="3+"):
    key: str = field("string", "0-3")
    key_type: int = field("int8", "1+")
    coordinator_keys: list[str] = field("[]string", "4+")


class FindCoordinatorResponse(Response, api_key=10, versions="0-6", flexible="3+"):
    class Coordinator(Struct):
        key: str = field("string", "4+")
        node_id: int = field("int32", "4+")
        host: str = field("string", "4+")
        port: int = field("int32", "4+")
        error_code: int = field("int16", "4+")
        error_message: str | None = field(
            "string", "4+", nullable="4+", ignorable=True, default=None
        )

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16", "0-3")
    error_message: str | None = field("string", "1-3", nullable="1-3", ignorable=True, default=None)
    node_id: int = field("int32", "0-3")
    host: str = field("string", "0-3")
    port: int = field("int32", "0-3")
    coordinators: list[Coordinator] = field(array(Coordinator), "4+")


class JoinGroupRequest(Request, api_key=11, versions="0-9", flexible="6+"):
    class Protocol(Struct):
        name: str = field("string")
        metadata: bytes = field("bytes")

    group_id: str = field("string")
    session_timeout_ms: int = field("int32")
    rebalance_timeout_ms: int = field("int32", "1+", default=-1, ignorable=True)
    member_id: str = field("string")
    group_instance_id: str | None = field("string", "5+", nullable="5+", default=None)
    protocol_type: str = field("string")
    protocols: list[Protocol] = field(array(Protocol))
    reason: str | None = field("string", "8+", nullable="8+", default=None, ignorable=True)


class JoinGroupResponse(Response, api_key=11, versions="0-9", flexible="6+"):
    class Member(Struct):
        member_id: str = field("string")
        group_instance_id: str | None = field(
            "string", "5+", nullable="5+", default=None, ignorable=True
        )
        metadata: bytes = field("bytes")

    throttle_time_ms: int = field("int32", "2+", ignorable=True)
    error_code: int = field("int16")
    generation_id: int = field("int32", default=-1)
    protocol_type: str | None = field("string", "7+", nullable="7+", default=None, ignorable=True)
    protocol_name: str | None = field("string", nullable="7+")
    leader: str = field("string")
    skip_assignment: bool = field("bool", "9+")
    member_id: str = field("string")
    members: list[Member] = field(array(Member))


class HeartbeatRequest(Request, api_key=12, versions="0-4", flexible="4+"):
    group_id: str = field("string")
    generation_id: int = field("int32")
    member_id: str = field("string")
    group_instance_id: str | None = field("string", "3+", nullable="3+", default=None)


class HeartbeatResponse(Response, api_key=12, versions="0-4", flexible="4+"):
    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16")


class LeaveGroupRequest(Request, api_key=13, versions="0-5", flexible="4+"):
    class MemberIdentity(Struct):
        member_id: str = field("string", "3+")
        group_instance_id: str | None = field("string", "3+", nullable="3+", default=None)
        reason: str | None = field("string", "5+", nullable="5+", default=None, ignorable=True)

    group_id: str = field("string")
    member_id: str = field("string", "0-2")
    members: list[MemberIdentity] = field(array(MemberIdentity), "3+")


class LeaveGroupResponse(Response, api_key=13, versions="0-5", flexible="4+"):
    class MemberResponse(Struct):
        member_id: str = field("string", "3+")
        group_instance_id: str | None = field("string", "3+", nullable="3+", default=None)
        error_code: int = field("int16", "3+")

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16")
    members: list[MemberResponse] = field(array(MemberResponse), "3+")


class SyncGroupRequest(Request, api_key=14, versions="0-5", flexible="4+"):
    class Assignment(Struct):
        member_id: str = field("string")
        assignment: bytes = field("bytes")

    group_id: str = field("string")
    generation_id: int = field("int32")
    member_id: str = field("string")
    group_instance_id: str | None = field("string", "3+", nullable="3+", default=None)
    protocol_type: str | None = field("string", "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = field("string", "5+", nullable="5+", default=None, ignorable=True)
    assignments: list[Assignment] = field(array(Assignment))


class SyncGroupResponse(Response, api_key=14, versions="0-5", flexible="4+"):
    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16")
    protocol_type: str | None = field("string", "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = field("string", "5+", nullable="5+", default=None, ignorable=True)
    assignment: bytes = field("bytes")


class DescribeGroupsRequest(Request, api_key=15, versions="0-6", flexible="5+"):
    groups: list[str] = field("[]string")
    include_authorized_operations: bool = field("bool", "3+")


class DescribeGroupsResponse(Response, api_key=15, versions="0-6", flexible="5+"):
    class DescribedGroup(Struct):
        class DescribedGroupMember(Struct):
            member_id: str = field("string")
            group_instance_id: str | None = field(
                "string", "4+", nullable="4+", default=None, ignorable=True
            )
            client_id: str = field("string")
            client_host: str = field("string")
            member_metadata: bytes = field("bytes")
            member_assignment: bytes = field("bytes")

        error_code: int = field("int16")
        error_message: str | None = field("string", "6+", nullable="6+", default=None)
        group_id: str = field("string")
        group_state: str = field("string")
        protocol_type: str = field("string")
        protocol_data: str = field("string")
        members: list[DescribedGroupMember] = field(array(DescribedGroupMember))
        authorized_operations: int = field("int32", "3+", default=-(2**31))

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    groups: list[DescribedGroup] = field(array(DescribedGroup))


class ListGroupsRequest(Request, api_key=16, versions="0-5", flexible="3+"):
    states_filter: list[str] = field("[]string", "4+")
    types_filter: list[str] = field("[]string", "5+")


class ListGroupsResponse(Response, api_key=16, versions="0-5", flexible="3+"):
    class ListedGroup(Struct):
        group_id: str = field("string")
        protocol_type: str = field("string")
        group_state: str = field("string", "4+", ignorable=True)
        group_type: str = field("string", "5+", ignorable=True)

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16")
    groups: list[ListedGroup] = field(array(ListedGroup))


class DeleteGroupsRequest(Request, api_key=42, versions="0-2", flexible="2+"):
    groups_names: list[str] = field("[]string")


class DeleteGroupsResponse(Response, api_key=42, versions="0-2", flexible="2+"):
    class DeletableGroupResult(Struct):
        group_id: str = field("string")
        error_code: int = field("int16")

    throttle_time_ms: int = field("int32")
    results: list[DeletableGroupResult] = field(array(DeletableGroupResult))


FIND_COORDINATOR = register(FindCoordinatorRequest, FindCoordinatorResponse)
JOIN_GROUP = register(JoinGroupRequest, JoinGroupResponse)
HEARTBEAT = register(HeartbeatRequest, HeartbeatResponse)
LEAVE_GROUP = register(LeaveGroupRequest, LeaveGroupResponse)
SYNC_GROUP = register(SyncGroupRequest, SyncGroupResponse)
DESCRIBE_GROUPS = register(DescribeGroupsRequest, DescribeGroupsResponse)
LIST_GROUPS = register(ListGroupsRequest, ListGroupsResponse)
DELETE_GROUPS = register(DeleteGroupsRequest, DeleteGroupsResponse)
