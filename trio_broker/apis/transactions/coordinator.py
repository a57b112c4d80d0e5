"""A transactional producer's requests to its coordinator: AddPartitionsToTxn v0-5,
AddOffsetsToTxn v0-4 and EndTxn v0-5, and to the group coordinator TxnOffsetCommit v0-5
(offsets that count once the transaction commits); DescribeProducers v0,
DescribeTransactions v0 and ListTransactions v0-2 (v2: a regular expression the whole
transactional id must match, KIP-1152; Python's ``re`` reads it, which agrees with Java's
patterns but for a few constructs, ``\\Q...\\E`` quoting and ``\\p{...}`` classes among
them, refused as INVALID_REGULAR_EXPRESSION), as ``kafka-transactions.sh`` asks.
(InitProducerId with a transactional id is in
``init_producer_id``, FindCoordinator's TRANSACTION key in ``groups.membership``).

Authorization as Kafka's: WRITE on the TRANSACTIONAL_ID (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); AddPartitionsToTxn also WRITE on each topic
(TOPIC_AUTHORIZATION_FAILED), an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, and
if any partition fails the others OPERATION_NOT_ATTEMPTED; AddOffsetsToTxn READ on the
group (GROUP_AUTHORIZATION_FAILED); TxnOffsetCommit WRITE on the TRANSACTIONAL_ID, READ on
the group and on each topic. AddPartitionsToTxn v4+ is the brokers' batched form
(CLUSTER_ACTION), whose ``verify_only`` asks which partitions a transaction holds.
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for versions before 2, which do not know it.
Transaction version 2 (KIP-890 part 2): EndTxn v5 bumps the producer's epoch at each end
and answers the producer id and epoch to go on with; TxnOffsetCommit v5 comes without
AddOffsetsToTxn, so the group's offsets partition joins the transaction here first.
No trio.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...protocol.errors import ErrorCode
from ...protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ...security.acl import ResourceType
from ..authz import GROUP, TOPIC, Op, allowed, cluster_allowed
from ..context import RequestContext
from ..group_services import OffsetCommitEntry, coordinator_of, unknown_topic_partition
from ..txn_services import ActiveProducer

TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
TopicPartition = tuple[str, int]


def fenced_for(version: int, fenced_from: int, code: int) -> int:
    """PRODUCER_FENCED as an older version says it (INVALID_PRODUCER_EPOCH)."""
    if code == ErrorCode.PRODUCER_FENCED and version < fenced_from:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    return int(code)


# TxnOffsetCommit v5's refusals of the offsets partition while the transaction coordinator
# moves or is busy: COORDINATOR_LOAD_IN_PROGRESS, which producers retry at the same group
# coordinator (NOT_COORDINATOR would send them looking for another).
_RETRY_JOIN: dict[int, int] = {
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


def may_write_txn(ctx: RequestContext, transactional_id: str) -> bool:
    return allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, transactional_id)


def _results(answers: dict[TopicPartition, int]) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in answers.items():
        by_topic.setdefault(topic, []).append(
            AddPartitionsToTxnPartitionResult(
                partition_index=partition, partition_error_code=int(code)
            )
        )
    return [
        AddPartitionsToTxnTopicResult(name=t, results_by_partition=r) for t, r in by_topic.items()
    ]


def _partitions(topics: Sequence[AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    return [(t.name, p) for t in topics for p in t.partitions]


async def _add(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    wanted: list[TopicPartition],
) -> dict[TopicPartition, int]:
    """One transaction's partitions added (or each one's reason not to be)."""
    if not may_write_txn(ctx, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    refused: dict[TopicPartition, int] = {}
    for topic, partition in wanted:
        if not allowed(ctx, Op.WRITE, TOPIC, topic):
            refused[(topic, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            continue
        info = ctx.broker.topic(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            refused[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if refused:
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    code = await ctx.broker.transactions.add_partitions(
        transactional_id, producer_id, epoch, wanted
    )
    return dict.fromkeys(wanted, fenced_for(ctx.api_version, 2, code))


async def add_partitions_to_txn(
    ctx: RequestContext, req: AddPartitionsToTxnRequest
) -> AddPartitionsToTxnResponse:
    v = ctx.api_version
    if v <= 3:
        wanted = _partitions(req.v3_and_below_topics)
        answers = await _add(
            ctx,
            req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            wanted,
        )
        return AddPartitionsToTxnResponse(
            throttle_time_ms=ctx.throttle_time_ms, results_by_topic_v3_and_below=_results(answers)
        )
    if not cluster_allowed(ctx, Op.CLUSTER_ACTION):
        return AddPartitionsToTxnResponse(
            throttle_time_ms=ctx.throttle_time_ms,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        )
    results = []
    for t in req.transactions:
        wanted = _partitions(t.topics)
        if t.verify_only:
            answers = ctx.broker.transactions.verify_partitions(
                t.transactional_id, t.producer_id, t.producer_epoch, wanted
            )
        else:
            answers = await _add(ctx, t.transactional_id, t.producer_id, t.producer_epoch, wanted)
        results.append(
            AddPartitionsToTxnResponse.Result(
                transactional_id=t.transactional_id, topic_results=_results(answers)
            )
        )
    return AddPartitionsToTxnResponse(
        throttle_time_ms=ctx.throttle_time_ms, results_by_transaction=results
    )


async def add_offsets_to_txn(
    ctx: RequestContext, req: AddOffsetsToTxnRequest
) -> AddOffsetsToTxnResponse:
    if not may_write_txn(ctx, req.transactional_id):
        code: int = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not allowed(ctx, Op.READ, GROUP, req.group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        code = await ctx.broker.transactions.add_offsets(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
        )
    return AddOffsetsToTxnResponse(
        throttle_time_ms=ctx.throttle_time_ms, error_code=fenced_for(ctx.api_version, 2, code)
    )


async def end_txn(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    pid, epoch = -1, -1
    if not may_write_txn(ctx, req.transactional_id):
        code: int = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        code, pid, epoch = await ctx.broker.transactions.end_txn(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            req.committed,
            bump=ctx.api_version >= 5,
        )
    return EndTxnResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=fenced_for(ctx.api_version, 2, code),
        producer_id=pid if code == ErrorCode.NONE else -1,
        producer_epoch=epoch if code == ErrorCode.NONE else -1,
    )


async def txn_offset_commit(
    ctx: RequestContext, req: TxnOffsetCommitRequest
) -> TxnOffsetCommitResponse:
    errors: dict[TopicPartition, int] = {}
    entries: list[OffsetCommitEntry] = []
    if not may_write_txn(ctx, req.transactional_id):
        refused: int | None = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not allowed(ctx, Op.READ, GROUP, req.group_id):
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        refused = None
    for t in req.topics:
        may_read = refused is None and allowed(ctx, Op.READ, TOPIC, t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if refused is not None:
                errors[tp] = refused
            elif not may_read:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif unknown_topic_partition(ctx, *tp):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                entries.append(
                    OffsetCommitEntry(
                        t.name,
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.committed_metadata,
                    )
                )
    if entries and ctx.api_version >= 5:
        # KIP-890 part 2: no AddOffsetsToTxn came; the group's offsets partition joins the
        # transaction first (a coordinator moving or busy: retriable for this request).
        code = await ctx.broker.transactions.add_offsets_for_leader(
            req.transactional_id, req.producer_id, req.producer_epoch, req.group_id
        )
        if code:
            code = _RETRY_JOIN.get(code, code)
            errors.update({(e.topic, e.partition): code for e in entries})
            entries = []
    if entries:
        written = await coordinator_of(ctx).commit_offsets(
            req.group_id,
            req.generation_id,
            req.member_id,
            req.group_instance_id,
            -1,
            entries,
            producer=(req.producer_id, req.producer_epoch),
        )
        errors.update(written)
    by_topic: dict[str, list[TxnOffsetCommitResponse.Topic.Partition]] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitResponse.Topic.Partition(
                partition_index=partition, error_code=fenced_for(ctx.api_version, 2, code)
            )
        )
    return TxnOffsetCommitResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        topics=[TxnOffsetCommitResponse.Topic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


# ---------------------------------------------------------------- introspection
# As Kafka: DescribeTransactions needs DESCRIBE on each TRANSACTIONAL_ID (and lists only
# the topics the principal may DESCRIBE); ListTransactions lists the ids it may DESCRIBE;
# DescribeProducers needs READ on each topic.


async def describe_transactions(
    ctx: RequestContext, req: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    State = DescribeTransactionsResponse.TransactionState
    states = []
    for txn_id in req.transactional_ids:
        if not allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, txn_id):
            code, found = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), None
        else:
            code, found = ctx.broker.transactions.describe(txn_id)
        if found is None:
            states.append(State(error_code=code, transactional_id=txn_id))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in found.partitions:
            if allowed(ctx, Op.DESCRIBE, TOPIC, topic, log_denied=False):
                by_topic.setdefault(topic, []).append(partition)
        states.append(
            State(
                error_code=code,
                transactional_id=txn_id,
                transaction_state=found.state,
                transaction_timeout_ms=found.timeout_ms,
                transaction_start_time_ms=found.start_ms,
                producer_id=found.producer_id,
                producer_epoch=found.producer_epoch,
                topics=[State.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()],
            )
        )
    return DescribeTransactionsResponse(
        throttle_time_ms=ctx.throttle_time_ms, transaction_states=states
    )


async def list_transactions(
    ctx: RequestContext, req: ListTransactionsRequest
) -> ListTransactionsResponse:
    duration = req.duration_filter if ctx.api_version >= 1 else -1
    pattern = req.transactional_id_pattern if ctx.api_version >= 2 else None
    code, unknown, found = ctx.broker.transactions.listing(
        req.state_filters, req.producer_id_filters, duration, pattern
    )
    State = ListTransactionsResponse.TransactionState
    return ListTransactionsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=code,
        unknown_state_filters=unknown,
        transaction_states=[
            State(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state,
            )
            for t in found
            if allowed(ctx, Op.DESCRIBE, TRANSACTIONAL_ID, t.transactional_id, log_denied=False)
        ],
    )


async def describe_producers(
    ctx: RequestContext, req: DescribeProducersRequest
) -> DescribeProducersResponse:
    Topic = DescribeProducersResponse.TopicResponse
    Partition = Topic.PartitionResponse
    topics = []
    for t in req.topics:
        partitions = []
        may_read = allowed(ctx, Op.READ, TOPIC, t.name)
        for index in t.partition_indexes:
            active: list[ActiveProducer] = []
            if not may_read:
                code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif unknown_topic_partition(ctx, t.name, index):
                code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                code, active = await ctx.broker.describe_producers(t.name, index)
            partitions.append(
                Partition(
                    partition_index=index,
                    error_code=code,
                    active_producers=[
                        Partition.ProducerState(
                            producer_id=a.producer_id,
                            producer_epoch=a.producer_epoch,
                            last_sequence=a.last_sequence,
                            last_timestamp=a.last_timestamp,
                            coordinator_epoch=a.coordinator_epoch,
                            current_txn_start_offset=a.txn_start_offset,
                        )
                        for a in active
                    ],
                )
            )
        topics.append(Topic(name=t.name, partitions=partitions))
    return DescribeProducersResponse(throttle_time_ms=ctx.throttle_time_ms, topics=topics)
