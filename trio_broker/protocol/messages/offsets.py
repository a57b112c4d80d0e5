"""ListOffsets (2), OffsetForLeaderEpoch (23) and DeleteRecords (21): offsets of partition logs."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class ListOffsetsRequest(Request, api_key=2, versions="1-11", flexible="6+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            current_leader_epoch: int = field("int32", "4+", default=-1, ignorable=True)
            timestamp: int = field("int64")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    replica_id: int = field("int32")
    isolation_level: int = field("int8", "2+")
    topics: list[Topic] = field(array(Topic))
    # KIP-1075: how long a lookup in remote storage may take (none here: all is local)
    timeout_ms: int = field("int32", "10+", ignorable=True)


class ListOffsetsResponse(Response, api_key=2, versions="1-11", flexible="6+"):
    class TopicResponse(Struct):
        class PartitionResponse(Struct):
            partition_index: int = field("int32")
            error_code: int = field("int16")
            timestamp: int = field("int64", "1+", default=-1)
            offset: int = field("int64", "1+", default=-1)
            leader_epoch: int = field("int32", "4+", default=-1)

        name: str = field("string")
        partitions: list[PartitionResponse] = field(array(PartitionResponse))

    throttle_time_ms: int = field("int32", "2+", ignorable=True)
    topics: list[TopicResponse] = field(array(TopicResponse))


class DeleteRecordsRequest(Request, api_key=21, versions="0-2", flexible="2+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            offset: int = field("int64")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    topics: list[Topic] = field(array(Topic))
    timeout_ms: int = field("int32")


class DeleteRecordsResponse(Response, api_key=21, versions="0-2", flexible="2+"):
    class TopicResult(Struct):
        class PartitionResult(Struct):
            partition_index: int = field("int32")
            low_watermark: int = field("int64")
            error_code: int = field("int16")

        name: str = field("string")
        partitions: list[PartitionResult] = field(array(PartitionResult))

    throttle_time_ms: int = field("int32")
    topics: list[TopicResult] = field(array(TopicResult))


class OffsetForLeaderEpochRequest(Request, api_key=23, versions="2-4", flexible="4+"):
    class OffsetForLeaderTopic(Struct):
        class OffsetForLeaderPartition(Struct):
            partition: int = field("int32")
            current_leader_epoch: int = field("int32", "2+", default=-1, ignorable=True)
            leader_epoch: int = field("int32")

        topic: str = field("string")
        partitions: list[OffsetForLeaderPartition] = field(array(OffsetForLeaderPartition))

    replica_id: int = field("int32", "3+", default=-2, ignorable=True)
    topics: list[OffsetForLeaderTopic] = field(array(OffsetForLeaderTopic))


class OffsetForLeaderEpochResponse(Response, api_key=23, versions="2-4", flexible="4+"):
    class OffsetForLeaderTopicResult(Struct):
        class EpochEndOffset(Struct):
            error_code: int = field("int16")
            partition: int = field("int32")
            leader_epoch: int = field("int32", "1+", default=-1, ignorable=True)
            end_offset: int = field("int64", default=-1)

        topic: str = field("string")
        partitions: list[EpochEndOffset] = field(array(EpochEndOffset))

    throttle_time_ms: int = field("int32", "2+", ignorable=True)
    topics: list[OffsetForLeaderTopicResult] = field(array(OffsetForLeaderTopicResult))


LIST_OFFSETS = register(ListOffsetsRequest, ListOffsetsResponse)
DELETE_RECORDS = register(DeleteRecordsRequest, DeleteRecordsResponse)
OFFSET_FOR_LEADER_EPOCH = register(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse)
