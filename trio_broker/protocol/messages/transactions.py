"""The transaction APIs: a producer's requests to its transaction coordinator,
AddPartitionsToTxn (24, v4+ also the brokers' batched form), AddOffsetsToTxn (25) and
EndTxn (26), and to its group coordinator TxnOffsetCommit (28); the introspection of
``kafka-transactions.sh``: DescribeProducers (61), DescribeTransactions (65) and
ListTransactions (66)."""

from __future__ import annotations

from ..api import register
from ..schema import Request, Response, Struct, array, field


class AddPartitionsToTxnTopic(Struct):
    name: str = field("string")
    partitions: list[int] = field("[]int32")


class AddPartitionsToTxnRequest(Request, api_key=24, versions="0-5", flexible="3+"):
    class Transaction(Struct):
        transactional_id: str = field("string", "4+")
        producer_id: int = field("int64", "4+")
        producer_epoch: int = field("int16", "4+")
        verify_only: bool = field("bool", "4+", default=False)
        topics: list[AddPartitionsToTxnTopic] = field(array(AddPartitionsToTxnTopic), "4+")

    transactions: list[Transaction] = field(array(Transaction), "4+")
    v3_and_below_transactional_id: str = field("string", "0-3")
    v3_and_below_producer_id: int = field("int64", "0-3")
    v3_and_below_producer_epoch: int = field("int16", "0-3")
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = field(
        array(AddPartitionsToTxnTopic), "0-3"
    )


class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = field("int32")
    partition_error_code: int = field("int16")


class AddPartitionsToTxnTopicResult(Struct):
    name: str = field("string")
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = field(
        array(AddPartitionsToTxnPartitionResult)
    )


class AddPartitionsToTxnResponse(Response, api_key=24, versions="0-5", flexible="3+"):
    class Result(Struct):
        transactional_id: str = field("string", "4+")
        topic_results: list[AddPartitionsToTxnTopicResult] = field(
            array(AddPartitionsToTxnTopicResult), "4+"
        )

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16", "4+", default=0, ignorable=True)
    results_by_transaction: list[Result] = field(array(Result), "4+")
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = field(
        array(AddPartitionsToTxnTopicResult), "0-3"
    )


class AddOffsetsToTxnRequest(Request, api_key=25, versions="0-4", flexible="3+"):
    transactional_id: str = field("string")
    producer_id: int = field("int64")
    producer_epoch: int = field("int16")
    group_id: str = field("string")


class AddOffsetsToTxnResponse(Response, api_key=25, versions="0-4", flexible="3+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")


class EndTxnRequest(Request, api_key=26, versions="0-5", flexible="3+"):
    transactional_id: str = field("string")
    producer_id: int = field("int64")
    producer_epoch: int = field("int16")
    committed: bool = field("bool")


class EndTxnResponse(Response, api_key=26, versions="0-5", flexible="3+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    # v5 (KIP-890 part 2): the producer id and the (bumped) epoch to go on with
    producer_id: int = field("int64", "5+", default=-1, ignorable=True)
    producer_epoch: int = field("int16", "5+", default=-1, ignorable=True)


class TxnOffsetCommitRequest(Request, api_key=28, versions="0-5", flexible="3+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            committed_offset: int = field("int64")
            committed_leader_epoch: int = field("int32", "2+", default=-1, ignorable=True)
            committed_metadata: str | None = field("string", nullable="0+")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    transactional_id: str = field("string")
    group_id: str = field("string")
    producer_id: int = field("int64")
    producer_epoch: int = field("int16")
    generation_id: int = field("int32", "3+", default=-1)
    member_id: str = field("string", "3+", default="")
    group_instance_id: str | None = field("string", "3+", nullable="3+", default=None)
    topics: list[Topic] = field(array(Topic))


class TxnOffsetCommitResponse(Response, api_key=28, versions="0-5", flexible="3+"):
    class Topic(Struct):
        class Partition(Struct):
            partition_index: int = field("int32")
            error_code: int = field("int16")

        name: str = field("string")
        partitions: list[Partition] = field(array(Partition))

    throttle_time_ms: int = field("int32")
    topics: list[Topic] = field(array(Topic))


ADD_PARTITIONS_TO_TXN = register(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse)
ADD_OFFSETS_TO_TXN = register(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse)
END_TXN = register(EndTxnRequest, EndTxnResponse)
TXN_OFFSET_COMMIT = register(TxnOffsetCommitRequest, TxnOffsetCommitResponse)


class DescribeTransactionsRequest(Request, api_key=65, versions="0", flexible="0+"):
    transactional_ids: list[str] = field("[]string")


class DescribeTransactionsResponse(Response, api_key=65, versions="0", flexible="0+"):
    class TransactionState(Struct):
        class TopicData(Struct):
            topic: str = field("string")
            partitions: list[int] = field("[]int32")

        error_code: int = field("int16")
        transactional_id: str = field("string")
        transaction_state: str = field("string")
        transaction_timeout_ms: int = field("int32")
        transaction_start_time_ms: int = field("int64")
        producer_id: int = field("int64")
        producer_epoch: int = field("int16")
        topics: list[TopicData] = field(array(TopicData))

    throttle_time_ms: int = field("int32")
    transaction_states: list[TransactionState] = field(array(TransactionState))


class ListTransactionsRequest(Request, api_key=66, versions="0-2", flexible="0+"):
    state_filters: list[str] = field("[]string")
    producer_id_filters: list[int] = field("[]int64")
    duration_filter: int = field("int64", "1+", default=-1)
    # KIP-1152: a regular expression the ids must match (None or empty: every id)
    transactional_id_pattern: str | None = field("string", "2+", nullable="2+", default=None)


class ListTransactionsResponse(Response, api_key=66, versions="0-2", flexible="0+"):
    class TransactionState(Struct):
        transactional_id: str = field("string")
        producer_id: int = field("int64")
        transaction_state: str = field("string")

    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    unknown_state_filters: list[str] = field("[]string")
    transaction_states: list[TransactionState] = field(array(TransactionState))


class DescribeProducersRequest(Request, api_key=61, versions="0", flexible="0+"):
    class TopicRequest(Struct):
        name: str = field("string")
        partition_indexes: list[int] = field("[]int32")

    topics: list[TopicRequest] = field(array(TopicRequest))


class DescribeProducersResponse(Response, api_key=61, versions="0", flexible="0+"):
    class TopicResponse(Struct):
        class PartitionResponse(Struct):
            class ProducerState(Struct):
                producer_id: int = field("int64")
                producer_epoch: int = field("int32")
                last_sequence: int = field("int32", default=-1)
                last_timestamp: int = field("int64", default=-1)
                coordinator_epoch: int = field("int32")
                current_txn_start_offset: int = field("int64", default=-1)

            partition_index: int = field("int32")
            error_code: int = field("int16")
            error_message: str | None = field("string", nullable="0+", default=None)
            active_producers: list[ProducerState] = field(array(ProducerState))

        name: str = field("string")
        partitions: list[PartitionResponse] = field(array(PartitionResponse))

    throttle_time_ms: int = field("int32")
    topics: list[TopicResponse] = field(array(TopicResponse))


DESCRIBE_TRANSACTIONS = register(DescribeTransactionsRequest, DescribeTransactionsResponse)
LIST_TRANSACTIONS = register(ListTransactionsRequest, ListTransactionsResponse)
DESCRIBE_PRODUCERS = register(DescribeProducersRequest, DescribeProducersResponse)
