"""The heartbeats of the group protocols this broker does not serve, declared so that it
can refuse them in their own words: ConsumerGroupHeartbeat (68, KIP-848's consumer
protocol) and ShareGroupHeartbeat (76, KIP-932's share groups). See ``apis.unserved``."""

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


CONSUMER_GROUP_HEARTBEAT = register(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)
SHARE_GROUP_HEARTBEAT = register(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)
