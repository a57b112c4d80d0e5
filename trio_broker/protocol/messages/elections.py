"""ElectLeaders (43): an admin asks the controller for preferred or unclean elections."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class ElectLeadersRequest(Request, api_key=43, versions="0-2", flexible="2+"):
    class TopicPartitions(Struct):
        topic: str = field("string")
        partitions: list[int] = field("[]int32")

    election_type: int = field("int8", "1+")  # 0: preferred, 1: unclean (KIP-460)
    topic_partitions: list[TopicPartitions] | None = field(array(TopicPartitions), nullable="0+")
    timeout_ms: int = field("int32", default=60000)


class ElectLeadersResponse(Response, api_key=43, versions="0-2", flexible="2+"):
    class ReplicaElectionResult(Struct):
        class PartitionResult(Struct):
            partition_id: int = field("int32")
            error_code: int = field("int16")
            error_message: str | None = field("string", nullable="0+", default=None)

        topic: str = field("string")
        partition_result: list[PartitionResult] = field(array(PartitionResult))

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16", "1+")
    replica_election_results: list[ReplicaElectionResult] = field(array(ReplicaElectionResult))


ELECT_LEADERS = register(ElectLeadersRequest, ElectLeadersResponse)
