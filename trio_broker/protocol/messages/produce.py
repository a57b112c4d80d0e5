"""Produce (0) and InitProducerId (22): appending record batches, and producer ids."""

from __future__ import annotations

import uuid

from ..api import register
from ..primitives import RecordsValue
from ..schema import Request, Response, Struct, array, field


class ProduceRequest(Request, api_key=0, versions="3-13", flexible="9+"):
    class TopicProduceData(Struct):
        class PartitionProduceData(Struct):
            index: int = field("int32")
            records: RecordsValue = field("records", nullable="0+")

        name: str = field("string", "0-12", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "13+", ignorable=True)  # KIP-516
        partition_data: list[PartitionProduceData] = field(array(PartitionProduceData))

    transactional_id: str | None = field("string", "3+", nullable="3+", default=None)
    acks: int = field("int16")
    timeout_ms: int = field("int32")
    topic_data: list[TopicProduceData] = field(array(TopicProduceData))


class ProduceResponse(Response, api_key=0, versions="3-13", flexible="9+"):
    class TopicProduceResponse(Struct):
        class PartitionProduceResponse(Struct):
            class BatchIndexAndErrorMessage(Struct):
                batch_index: int = field("int32", "8+")
                batch_index_error_message: str | None = field(
                    "string", "8+", nullable="8+", default=None
                )

            class LeaderIdAndEpoch(Struct):
                leader_id: int = field("int32", "10+", default=-1)
                leader_epoch: int = field("int32", "10+", default=-1)

            index: int = field("int32")
            error_code: int = field("int16")
            base_offset: int = field("int64")
            log_append_time_ms: int = field("int64", "2+", default=-1, ignorable=True)
            log_start_offset: int = field("int64", "5+", default=-1, ignorable=True)
            record_errors: list[BatchIndexAndErrorMessage] = field(
                array(BatchIndexAndErrorMessage), "8+", ignorable=True
            )
            error_message: str | None = field(
                "string", "8+", nullable="8+", default=None, ignorable=True
            )
            current_leader: LeaderIdAndEpoch = field(LeaderIdAndEpoch, "10+", tag=0)

        name: str = field("string", "0-12", ignorable=True)
        topic_id: uuid.UUID = field("uuid", "13+", ignorable=True)
        partition_responses: list[PartitionProduceResponse] = field(array(PartitionProduceResponse))

    class NodeEndpoint(Struct):
        node_id: int = field("int32", "10+")
        host: str = field("string", "10+")
        port: int = field("int32", "10+")
        rack: str | None = field("string", "10+", nullable="10+", default=None)

    responses: list[TopicProduceResponse] = field(array(TopicProduceResponse))
    throttle_time_ms: int = field("int32", "1+", ignorable=True)
    node_endpoints: list[NodeEndpoint] = field(array(NodeEndpoint), "10+", tag=0)


class InitProducerIdRequest(Request, api_key=22, versions="0-5", flexible="2+"):
    transactional_id: str | None = field("string", nullable="0+")
    transaction_timeout_ms: int = field("int32")
    producer_id: int = field("int64", "3+", default=-1)
    producer_epoch: int = field("int16", "3+", default=-1)


class InitProducerIdResponse(Response, api_key=22, versions="0-5", flexible="2+"):
    throttle_time_ms: int = field("int32", ignorable=True)
    error_code: int = field("int16")
    producer_id: int = field("int64", default=-1)
    producer_epoch: int = field("int16")


PRODUCE = register(ProduceRequest, ProduceResponse)
INIT_PRODUCER_ID = register(InitProducerIdRequest, InitProducerIdResponse)
