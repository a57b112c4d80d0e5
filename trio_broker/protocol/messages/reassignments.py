"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), v0 (KIP-455):
an admin moves partitions to other brokers, and lists the moves under way."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class AlterPartitionReassignmentsRequest(Request, api_key=45, versions="0-1", flexible="0+"):
    class ReassignableTopic(Struct):
        class ReassignablePartition(Struct):
            partition_index: int = field("int32")
            # None cancels the partition's pending reassignment.
            replicas: list[int] | None = field("[]int32", nullable="0+", default=None)

        name: str = field("string")
        partitions: list[ReassignablePartition] = field(array(ReassignablePartition))

    timeout_ms: int = field("int32", default=60000)
    # KIP-860: False refuses a target whose replica count differs from the partition's
    allow_replication_factor_change: bool = field("bool", "1+", default=True)
    topics: list[ReassignableTopic] = field(array(ReassignableTopic))


class AlterPartitionReassignmentsResponse(Response, api_key=45, versions="0-1", flexible="0+"):
    class ReassignableTopicResponse(Struct):
        class ReassignablePartitionResponse(Struct):
            partition_index: int = field("int32")
            error_code: int = field("int16")
            error_message: str | None = field("string", nullable="0+", default=None)

        name: str = field("string")
        partitions: list[ReassignablePartitionResponse] = field(
            array(ReassignablePartitionResponse)
        )

    throttle_time_ms: int = field("int32")
    allow_replication_factor_change: bool = field("bool", "1+", default=True, ignorable=True)
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    responses: list[ReassignableTopicResponse] = field(array(ReassignableTopicResponse))


class ListPartitionReassignmentsRequest(Request, api_key=46, versions="0", flexible="0+"):
    class ListPartitionReassignmentsTopics(Struct):
        name: str = field("string")
        partition_indexes: list[int] = field("[]int32")

    timeout_ms: int = field("int32", default=60000)
    # None: every partition being reassigned.
    topics: list[ListPartitionReassignmentsTopics] | None = field(
        array(ListPartitionReassignmentsTopics), nullable="0+", default=None
    )


class ListPartitionReassignmentsResponse(Response, api_key=46, versions="0", flexible="0+"):
    class OngoingTopicReassignment(Struct):
        class OngoingPartitionReassignment(Struct):
            partition_index: int = field("int32")
            replicas: list[int] = field("[]int32")
            adding_replicas: list[int] = field("[]int32")
            removing_replicas: list[int] = field("[]int32")

        name: str = field("string")
        partitions: list[OngoingPartitionReassignment] = field(array(OngoingPartitionReassignment))

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    error_message: str | None = field("string", nullable="0+", default=None)
    topics: list[OngoingTopicReassignment] = field(array(OngoingTopicReassignment))


ALTER_PARTITION_REASSIGNMENTS = register(
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse
)
LIST_PARTITION_REASSIGNMENTS = register(
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse
)
