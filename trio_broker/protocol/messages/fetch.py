"""Fetch (key 1): reading record batches from partition logs, with fetch sessions (KIP-227)."""

from __future__ import annotations

import uuid

from ..api import register
from ..primitives import RecordsValue
from ..schema import ZERO_UUID, Request, Response, Struct, array, field

# FetchRequest's HighWatermark when the fetching replica does not send one (KIP-1166)
NO_HIGH_WATERMARK_SENT = 2**63 - 1


class FetchRequest(Request, api_key=1, versions="4-18", flexible="12+"):
    class Topic(Struct):
        class Partition(Struct):
            partition: int = field("int32")
            current_leader_epoch: int = field("int32", "9+", default=-1, ignorable=True)
            fetch_offset: int = field("int64")
            last_fetched_epoch: int = field("int32", "12+", default=-1)
            log_start_offset: int = field("int64", "5+", default=-1, ignorable=True)
            partition_max_bytes: int = field("int32")
            replica_directory_id: uuid.UUID = field(
                "uuid", "17+", default=ZERO_UUID, tag=0, ignorable=True
            )
            # KIP-1166: the high watermark the fetching replica knows (-1: none; the
            # default: the replica does not say)
            high_watermark: int = field(
                "int64", "18+", default=NO_HIGH_WATERMARK_SENT, tag=1, ignorable=True
            )

        topic: str = field("string", "0-12", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "13+", ignorable=True)
        partitions: list[Partition] = field(array(Partition))

    class ForgottenTopic(Struct):
        topic: str = field("string", "7-12", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "13+", ignorable=True)
        partitions: list[int] = field("[]int32", "7+")

    cluster_id: str | None = field(
        "string", "12+", nullable="12+", default=None, tag=0, ignorable=True
    )

    class ReplicaState(Struct):
        replica_id: int = field("int32", "15+", default=-1)
        replica_epoch: int = field("int64", "15+", default=-1)

    replica_id: int = field("int32", "0-14", default=-1)
    replica_state: ReplicaState = field(ReplicaState, "15+", tag=1)
    max_wait_ms: int = field("int32")
    min_bytes: int = field("int32")
    max_bytes: int = field("int32", "3+", default=2147483647, ignorable=True)
    isolation_level: int = field("int8", "4+", ignorable=True)
    session_id: int = field("int32", "7+", ignorable=True)
    session_epoch: int = field("int32", "7+", default=-1, ignorable=True)
    topics: list[Topic] = field(array(Topic))
    forgotten_topics_data: list[ForgottenTopic] = field(array(ForgottenTopic), "7+")
    rack_id: str = field("string", "11+", ignorable=True)


class FetchResponse(Response, api_key=1, versions="4-18", flexible="12+"):
    class FetchableTopicResponse(Struct):
        class PartitionData(Struct):
            class EpochEndOffset(Struct):
                epoch: int = field("int32", "12+", default=-1)
                end_offset: int = field("int64", "12+", default=-1)

            class LeaderIdAndEpoch(Struct):
                leader_id: int = field("int32", "12+", default=-1)
                leader_epoch: int = field("int32", "12+", default=-1)

            class SnapshotId(Struct):
                end_offset: int = field("int64", default=-1)
                epoch: int = field("int32", default=-1)

            class AbortedTransaction(Struct):
                producer_id: int = field("int64", "4+")
                first_offset: int = field("int64", "4+")

            partition_index: int = field("int32")
            error_code: int = field("int16")
            high_watermark: int = field("int64")
            last_stable_offset: int = field("int64", "4+", default=-1, ignorable=True)
            log_start_offset: int = field("int64", "5+", default=-1, ignorable=True)
            diverging_epoch: EpochEndOffset = field(EpochEndOffset, "12+", tag=0)
            current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "12+", tag=1)
            snapshot_id: SnapshotId = field(SnapshotId, "12+", tag=2)
            aborted_transactions: list[AbortedTransaction] | None = field(
                array(AbortedTransaction), "4+", nullable="4+", ignorable=True
            )
            preferred_read_replica: int = field("int32", "11+", default=-1)
            records: RecordsValue = field("records", nullable="0+")

        topic: str = field("string", "0-12", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "13+", ignorable=True)
        partitions: list[PartitionData] = field(array(PartitionData))

    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    error_code: int = field("int16", "7+", ignorable=True)
    session_id: int = field("int32", "7+")
    responses: list[FetchableTopicResponse] = field(array(FetchableTopicResponse))

    class NodeEndpoint(Struct):
        node_id: int = field("int32", "16+")
        host: str = field("string", "16+")
        port: int = field("int32", "16+")
        rack: str | None = field("string", "16+", nullable="16+", default=None)

    node_endpoints: list[NodeEndpoint] = field(array(NodeEndpoint), "16+", tag=0)


FETCH = register(FetchRequest, FetchResponse)
