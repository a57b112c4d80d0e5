"""The messages of the next-generation group protocols: ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69) of KIP-848's consumer protocol, served by
``apis.groups.consumer``, and ShareGroupHeartbeat (76, KIP-932's share groups), declared
only so that it can be refused in its own words (``apis.unserved``). Declarations only:
no handler logic."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, Struct, array, field


class HeartbeatTopicPartitions(Struct):
    topic_id: uuid.UUID = field("uuid")
    partitions: list[int] = field("[]int32")


class ConsumerGroupHeartbeatRequest(Request, api_key=68, versions="0-1", flexible="0+"):
    group_id: str = field("string")
    member_id: str = field("string")
    member_epoch: int = field("int32")
    instance_id: str | None = field("string", nullable="0+", default=None)
    rack_id: str | None = field("string", nullable="0+", default=None)
    rebalance_timeout_ms: int = field("int32", default=-1)
    subscribed_topic_names: list[str] | None = field("[]string", nullable="0+", default=None)
    subscribed_topic_regex: str | None = field("string", "1+", nullable="1+", default=None)
    server_assignor: str | None = field("string", nullable="0+", default=None)
    topic_partitions: list[HeartbeatTopicPartitions] | None = field(
        array(HeartbeatTopicPartitions), nullable="0+", default=None
    )


class HeartbeatAssignment(Struct):
    topic_partitions: list[HeartbeatTopicPartitions] = field(array(HeartbeatTopicPartitions))


class ConsumerGroupHeartbeatResponse(Response, api_key=68, versions="0-1", flexible="0+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    member_id: str | None = field("string", nullable="0+", default=None)
    member_epoch: int = field("int32")
    heartbeat_interval_ms: int = field("int32")
    assignment: HeartbeatAssignment | None = field(HeartbeatAssignment, nullable="0+", default=None)


class ShareGroupHeartbeatRequest(Request, api_key=76, versions="0-1", flexible="0+"):
    group_id: str = field("string")
    member_id: str = field("string")
    member_epoch: int = field("int32")
    rack_id: str | None = field("string", nullable="0+", default=None)
    subscribed_topic_names: list[str] | None = field("[]string", nullable="0+", default=None)


class ShareGroupHeartbeatResponse(Response, api_key=76, versions="0-1", flexible="0+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    member_id: str | None = field("string", nullable="0+", default=None)
    member_epoch: int = field("int32")
    heartbeat_interval_ms: int = field("int32")
    assignment: HeartbeatAssignment | None = field(HeartbeatAssignment, nullable="0+", default=None)


class DescribedTopicPartitions(Struct):
    topic_id: uuid.UUID = field("uuid")
    topic_name: str = field("string")
    partitions: list[int] = field("[]int32")


class DescribedAssignment(Struct):
    topic_partitions: list[DescribedTopicPartitions] = field(array(DescribedTopicPartitions))


class ConsumerGroupDescribeRequest(Request, api_key=69, versions="0-1", flexible="0+"):
    group_ids: list[str] = field("[]string")
    include_authorized_operations: bool = field("bool")


class ConsumerGroupDescribeResponse(Response, api_key=69, versions="0-1", flexible="0+"):
    class DescribedGroup(Struct):
        class Member(Struct):
            member_id: str = field("string")
            instance_id: str | None = field("string", nullable="0+", default=None)
            rack_id: str | None = field("string", nullable="0+", default=None)
            member_epoch: int = field("int32")
            client_id: str = field("string")
            client_host: str = field("string")
            subscribed_topic_names: list[str] = field("[]string")
            subscribed_topic_regex: str | None = field("string", nullable="0+", default=None)
            assignment: DescribedAssignment = field(DescribedAssignment)
            target_assignment: DescribedAssignment = field(DescribedAssignment)
            # KIP-1099 (v1): -1 unknown, 0 a classic member, 1 a consumer member
            member_type: int = field("int8", "1+", default=-1, ignorable=True)

        error_code: int = field("int16")
        error_message: str | None = field("string", nullable="0+", default=None)
        group_id: str = field("string")
        group_state: str = field("string")
        group_epoch: int = field("int32")
        assignment_epoch: int = field("int32")
        assignor_name: str = field("string")
        members: list[Member] = field(array(Member))
        authorized_operations: int = field("int32", default=-(2**31))

    throttle_time_ms: int = field("int32")
    groups: list[DescribedGroup] = field(array(DescribedGroup))


CONSUMER_GROUP_HEARTBEAT = register(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)
CONSUMER_GROUP_DESCRIBE = register(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)
SHARE_GROUP_HEARTBEAT = register(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)
