"""LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6), ControlledShutdown (7): Kafka
3.x controller requests."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, Struct, array, field


class LeaderAndIsrPartitionState(Struct):
    topic_name: str = field("string", "0-1", ignorable=True)
    partition_index: int = field("int32")
    controller_epoch: int = field("int32")
    leader: int = field("int32")
    leader_epoch: int = field("int32")
    isr: list[int] = field("[]int32")
    partition_epoch: int = field("int32")
    replicas: list[int] = field("[]int32")
    adding_replicas: list[int] = field("[]int32", "3+", ignorable=True)
    removing_replicas: list[int] = field("[]int32", "3+", ignorable=True)
    is_new: bool = field("bool", "1+", ignorable=True)
    leader_recovery_state: int = field("int8", "6+")


class LeaderAndIsrRequest(Request, api_key=4, versions="0-7", flexible="4+"):
    class TopicState(Struct):
        topic_name: str = field("string", "2+")
        topic_id: uuid.UUID = field("uuid", "5+", ignorable=True)
        partition_states: list[LeaderAndIsrPartitionState] = field(
            array(LeaderAndIsrPartitionState), "2+"
        )

    class LiveLeader(Struct):
        broker_id: int = field("int32")
        host_name: str = field("string")
        port: int = field("int32")

    controller_id: int = field("int32")
    is_kraft_controller: bool = field("bool", "7+")
    controller_epoch: int = field("int32")
    broker_epoch: int = field("int64", "2+", default=-1, ignorable=True)
    type: int = field("int8", "5+")
    ungrouped_partition_states: list[LeaderAndIsrPartitionState] = field(
        array(LeaderAndIsrPartitionState), "0-1"
    )
    topic_states: list[TopicState] = field(array(TopicState), "2+")
    live_leaders: list[LiveLeader] = field(array(LiveLeader))


class LeaderAndIsrPartitionError(Struct):
    topic_name: str = field("string", "0-4", ignorable=True)
    partition_index: int = field("int32")
    error_code: int = field("int16")


class LeaderAndIsrResponse(Response, api_key=4, versions="0-7", flexible="4+"):
    class TopicError(Struct):
        topic_id: uuid.UUID = field("uuid", "5+")
        partition_errors: list[LeaderAndIsrPartitionError] = field(
            array(LeaderAndIsrPartitionError), "5+"
        )

    error_code: int = field("int16")
    partition_errors: list[LeaderAndIsrPartitionError] = field(
        array(LeaderAndIsrPartitionError), "0-4"
    )
    topics: list[TopicError] = field(array(TopicError), "5+")


class StopReplicaRequest(Request, api_key=5, versions="0-4", flexible="2+"):
    class PartitionV0(Struct):
        topic_name: str = field("string", "0")
        partition_index: int = field("int32", "0")

    class TopicV1(Struct):
        name: str = field("string", "1-2")
        partition_indexes: list[int] = field("[]int32", "1-2")

    class TopicState(Struct):
        class PartitionState(Struct):
            partition_index: int = field("int32", "3+")
            leader_epoch: int = field("int32", "3+", default=-1)
            delete_partition: bool = field("bool", "3+")

        topic_name: str = field("string", "3+")
        partition_states: list[PartitionState] = field(array(PartitionState), "3+")

    controller_id: int = field("int32")
    is_kraft_controller: bool = field("bool", "4+")
    controller_epoch: int = field("int32")
    broker_epoch: int = field("int64", "1+", default=-1, ignorable=True)
    delete_partitions: bool = field("bool", "0-2")
    ungrouped_partitions: list[PartitionV0] = field(array(PartitionV0), "0")
    topics: list[TopicV1] = field(array(TopicV1), "1-2")
    topic_states: list[TopicState] = field(array(TopicState), "3+")


class StopReplicaResponse(Response, api_key=5, versions="0-4", flexible="2+"):
    class PartitionError(Struct):
        topic_name: str = field("string")
        partition_index: int = field("int32")
        error_code: int = field("int16")

    error_code: int = field("int16")
    partition_errors: list[PartitionError] = field(array(PartitionError))


class UpdateMetadataPartitionState(Struct):
    topic_name: str = field("string", "0-4", ignorable=True)
    partition_index: int = field("int32")
    controller_epoch: int = field("int32")
    leader: int = field("int32")
    leader_epoch: int = field("int32")
    isr: list[int] = field("[]int32")
    zk_version: int = field("int32")
    replicas: list[int] = field("[]int32")
    offline_replicas: list[int] = field("[]int32", "4+", ignorable=True)


class UpdateMetadataRequest(Request, api_key=6, versions="0-8", flexible="6+"):
    class TopicState(Struct):
        topic_name: str = field("string", "5+")
        topic_id: uuid.UUID = field("uuid", "7+", ignorable=True)
        partition_states: list[UpdateMetadataPartitionState] = field(
            array(UpdateMetadataPartitionState), "5+"
        )

    class Broker(Struct):
        class Endpoint(Struct):
            port: int = field("int32", "1+")
            host: str = field("string", "1+")
            listener: str = field("string", "3+", ignorable=True)
            security_protocol: int = field("int16", "1+")

        id: int = field("int32")
        v0_host: str = field("string", "0", ignorable=True)
        v0_port: int = field("int32", "0", ignorable=True)
        endpoints: list[Endpoint] = field(array(Endpoint), "1+", ignorable=True)
        rack: str | None = field("string", "2+", nullable="0+", ignorable=True)

    controller_id: int = field("int32")
    is_kraft_controller: bool = field("bool", "8+")
    type: int = field("int8", "8+", tag=0)
    controller_epoch: int = field("int32")
    broker_epoch: int = field("int64", "5+", default=-1, ignorable=True)
    ungrouped_partition_states: list[UpdateMetadataPartitionState] = field(
        array(UpdateMetadataPartitionState), "0-4"
    )
    topic_states: list[TopicState] = field(array(TopicState), "5+")
    live_brokers: list[Broker] = field(array(Broker))


class UpdateMetadataResponse(Response, api_key=6, versions="0-8", flexible="6+"):
    error_code: int = field("int16")


LEADER_AND_ISR = register(LeaderAndIsrRequest, LeaderAndIsrResponse)
STOP_REPLICA = register(StopReplicaRequest, StopReplicaResponse)
UPDATE_METADATA = register(UpdateMetadataRequest, UpdateMetadataResponse)


class ControlledShutdownRequest(Request, api_key=7, versions="1-3", flexible="3+"):
    """A stopping broker asks the controller to move its leaderships away (v0's request
    header has no client id: we serve v1-v3)."""

    broker_id: int = field("int32")
    broker_epoch: int = field("int64", "2+", default=-1, ignorable=True)


class ControlledShutdownResponse(Response, api_key=7, versions="1-3", flexible="3+"):
    class RemainingPartition(Struct):
        topic_name: str = field("string")
        partition_index: int = field("int32")

    error_code: int = field("int16")
    remaining_partitions: list[RemainingPartition] = field(array(RemainingPartition))


CONTROLLED_SHUTDOWN = register(ControlledShutdownRequest, ControlledShutdownResponse)
