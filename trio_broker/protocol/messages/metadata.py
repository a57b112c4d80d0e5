"""Metadata (key 3): brokers, cluster id, controller, topics and their partitions; and
DescribeTopicPartitions (75, KIP-966): topics' partitions, a page at a time."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, Struct, array, field


class MetadataRequest(Request, api_key=3, versions="0-13", flexible="9+"):
    class Topic(Struct):
        topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
        name: str | None = field("string", nullable="10+")

    topics: list[Topic] | None = field(array(Topic), nullable="1+")
    allow_auto_topic_creation: bool = field("bool", "4+", default=True)
    include_cluster_authorized_operations: bool = field("bool", "8-10")
    include_topic_authorized_operations: bool = field("bool", "8+")


class MetadataResponse(Response, api_key=3, versions="0-13", flexible="9+"):
    class Broker(Struct):
        node_id: int = field("int32")
        host: str = field("string")
        port: int = field("int32")
        rack: str | None = field("string", "1+", nullable="1+", default=None, ignorable=True)

    class Topic(Struct):
        class Partition(Struct):
            error_code: int = field("int16")
            partition_index: int = field("int32")
            leader_id: int = field("int32")
            leader_epoch: int = field("int32", "7+", default=-1, ignorable=True)
            replica_nodes: list[int] = field("[]int32")
            isr_nodes: list[int] = field("[]int32")
            offline_replicas: list[int] = field("[]int32", "5+", ignorable=True)

        error_code: int = field("int16")
        name: str | None = field("string", nullable="12+")
        topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
        is_internal: bool = field("bool", "1+", ignorable=True)
        partitions: list[Partition] = field(array(Partition))
        topic_authorized_operations: int = field("int32", "8+", default=-(2**31))

    throttle_time_ms: int = field("int32", "3+", ignorable=True)
    brokers: list[Broker] = field(array(Broker))
    cluster_id: str | None = field("string", "2+", nullable="2+", default=None, ignorable=True)
    controller_id: int = field("int32", "1+", default=-1, ignorable=True)
    topics: list[Topic] = field(array(Topic))
    cluster_authorized_operations: int = field("int32", "8-10", default=-(2**31))
    error_code: int = field("int16", "13+", ignorable=True)  # KIP-1102's top-level error


METADATA = register(MetadataRequest, MetadataResponse)


class DescribeTopicPartitionsRequest(Request, api_key=75, versions="0", flexible="0+"):
    class TopicRequest(Struct):
        name: str = field("string")

    class Cursor(Struct):
        topic_name: str = field("string")
        partition_index: int = field("int32")

    topics: list[TopicRequest] = field(array(TopicRequest))
    response_partition_limit: int = field("int32", default=2000)
    # None: from the first topic, partition 0
    cursor: Cursor | None = field(Cursor, nullable="0+", default=None)


class DescribeTopicPartitionsResponse(Response, api_key=75, versions="0", flexible="0+"):
    class DescribeTopicPartitionsResponseTopic(Struct):
        class DescribeTopicPartitionsResponsePartition(Struct):
            error_code: int = field("int16")
            partition_index: int = field("int32")
            leader_id: int = field("int32")
            leader_epoch: int = field("int32", default=-1, ignorable=True)
            replica_nodes: list[int] = field("[]int32")
            isr_nodes: list[int] = field("[]int32")
            eligible_leader_replicas: list[int] | None = field(
                "[]int32", nullable="0+", default=None
            )
            last_known_elr: list[int] | None = field("[]int32", nullable="0+", default=None)
            offline_replicas: list[int] = field("[]int32", ignorable=True)

        error_code: int = field("int16")
        name: str | None = field("string", nullable="0+", default=None)
        topic_id: uuid.UUID = field("uuid", ignorable=True)
        is_internal: bool = field("bool", default=False, ignorable=True)
        partitions: list[DescribeTopicPartitionsResponsePartition] = field(
            array(DescribeTopicPartitionsResponsePartition)
        )
        topic_authorized_operations: int = field("int32", default=-2147483648)

    class Cursor(Struct):
        topic_name: str = field("string")
        partition_index: int = field("int32")

    throttle_time_ms: int = field("int32", ignorable=True)
    topics: list[DescribeTopicPartitionsResponseTopic] = field(
        array(DescribeTopicPartitionsResponseTopic)
    )
    # None: nothing left to describe
    next_cursor: Cursor | None = field(Cursor, nullable="0+", default=None)


DESCRIBE_TOPIC_PARTITIONS = register(
    DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
)
