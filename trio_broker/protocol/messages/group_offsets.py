"""Committed consumer group offsets: OffsetCommit (8), OffsetFetch (9) and OffsetDelete (47)."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, Struct, array, field


class OffsetCommitRequest(Request, api_key=8, versions="2-10", flexible="8+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            committed_offset: int = field("int64")
            committed_leader_epoch: int = field("int32", "6+", default=-1, ignorable=True)
            committed_metadata: str | None = field("string", nullable="0+")

        name: str = field("string", "0-9", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
        partitions: list[Partition] = field(array(Partition))

    group_id: str = field("string")
    generation_id_or_member_epoch: int = field("int32", "1+", default=-1, ignorable=True)
    member_id: str = field("string", "1+", ignorable=True)
    group_instance_id: str | None = field("string", "7+", nullable="7+", default=None)
    retention_time_ms: int = field("int64", "2-4", default=-1, ignorable=True)
    topics: list[Topic] = field(array(Topic))


class OffsetCommitResponse(Response, api_key=8, versions="2-10", flexible="8+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            error_code: int = field("int16")

        name: str = field("string", "0-9", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
        partitions: list[Partition] = field(array(Partition))

    throttle_time_ms: int = field("int32", "3+", ignorable=True)
    topics: list[Topic] = field(array(Topic))


class OffsetFetchRequest(Request, api_key=9, versions="1-10", flexible="6+"):
    class Topic(Struct):
        name: str = field("string", "0-7")
        partition_indexes: list[int] = field("[]int32", "0-7")

    class Group(Struct):
        class Topics(Struct):
            name: str = field("string", "8-9", ignorable=True)
            topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
            partition_indexes: list[int] = field("[]int32", "8+")

        group_id: str = field("string", "8+")
        member_id: str | None = field("string", "9+", nullable="9+", default=None, ignorable=True)
        member_epoch: int = field("int32", "9+", default=-1, ignorable=True)
        topics: list[Topics] | None = field(array(Topics), "8+", nullable="8+")

    group_id: str = field("string", "0-7")
    topics: list[Topic] | None = field(array(Topic), "0-7", nullable="2-7")
    groups: list[Group] = field(array(Group), "8+")
    require_stable: bool = field("bool", "7+")


class OffsetFetchResponse(Response, api_key=9, versions="1-10", flexible="6+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32", "0-7")
            committed_offset: int = field("int64", "0-7")
            committed_leader_epoch: int = field("int32", "5-7", default=-1, ignorable=True)
            metadata: str | None = field("string", "0-7", nullable="0-7", default=None)
            error_code: int = field("int16", "0-7")

        name: str = field("string", "0-7")
        partitions: list[Partition] = field(array(Partition), "0-7")

    class Group(Struct):
        class Topics(Struct):
            class Partitions(Struct):
                partition_index: int = field("int32", "8+")
                committed_offset: int = field("int64", "8+")
                committed_leader_epoch: int = field("int32", "8+", default=-1, ignorable=True)
                metadata: str | None = field("string", "8+", nullable="8+", default=None)
                error_code: int = field("int16", "8+")

            name: str = field("string", "8-9", ignorable=True)
            topic_id: uuid.UUID = field("uuid", "10+", ignorable=True)
            partitions: list[Partitions] = field(array(Partitions), "8+")

        group_id: str = field("string", "8+")
        topics: list[Topics] = field(array(Topics), "8+")
        error_code: int = field("int16", "8+")

    throttle_time_ms: int = field("int32", "3+", ignorable=True)
    topics: list[Topic] = field(array(Topic), "0-7")
    error_code: int = field("int16", "2-7", ignorable=True)
    groups: list[Group] = field(array(Group), "8+")


class OffsetDeleteRequest(Request, api_key=47, versions="0", flexible="none"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    group_id: str = field("string")
    topics: list[Topic] = field(array(Topic))


class OffsetDeleteResponse(Response, api_key=47, versions="0", flexible="none"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            error_code: int = field("int16")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    error_code: int = field("int16")
    throttle_time_ms: int = field("int32", ignorable=True)
    topics: list[Topic] = field(array(Topic))


OFFSET_COMMIT = register(OffsetCommitRequest, OffsetCommitResponse)
OFFSET_FETCH = register(OffsetFetchRequest, OffsetFetchResponse)
OFFSET_DELETE = register(OffsetDeleteRequest, OffsetDeleteResponse)
