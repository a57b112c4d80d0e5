"""Produce v3-v13: append record batches, validated by header and CRC, never decoded.

acks=0 gets no response (the no-op action); if one of its partitions failed, the client
cannot learn it from a response it does not read, so the connection is closed, as Kafka
does. acks=1 is answered once the records are appended (and flushed when the flush policy
says so). acks=-1 is too when the partition has one replica (its high watermark is its
end); with followers it waits in the produce purgatory until the high watermark passes the
records (REQUEST_TIMED_OUT after ``timeout_ms``; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
ISR shrank below ``min.insync.replicas``; NOT_LEADER_OR_FOLLOWER if the leadership moved
meanwhile). Any other acks value is INVALID_REQUIRED_ACKS. Transactional batches (attributes
bit 4), as Kafka: a request holding one needs a transactional id the principal may WRITE,
else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended;
control batches from a client are INVALID_RECORD (the broker writes markers itself). A
topic the principal may not WRITE is TOPIC_AUTHORIZATION_FAILED on each of its
partitions, nothing appended. From v10 (KIP-951), a partition answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader and epoch, and
the response the endpoints of those leaders on the request's listener, so the producer
goes there without a metadata round trip.

Transactions version 2 (KIP-890 part 2): from v12 a producer sends no AddPartitionsToTxn;
each partition this broker leads that gets a transactional batch first joins the batch's
producer id and epoch's transaction at its coordinator (here, or another broker's over
AddPartitionsToTxn v5), and is appended only then. The coordinator's refusals answer the
partition, as Kafka's AddPartitionsToTxnManager maps them: PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH (a batch of an epoch an end has bumped past), a coordinator that is
moving or busy (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS) NOT_ENOUGH_REPLICAS, which producers retry. v13 (KIP-516) names
topics by id, in the request and the answer; an id no topic has is UNKNOWN_TOPIC_ID.

``handle_pipelined`` answers a connection's pipelined Produce requests together
(``network.pipelining``): the same checks and answers, one storage job for the appends of
consecutive requests with the same acks, in the requests' order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol.api import ApiKey, spec_for
from ...protocol.errors import ErrorCode
from ...protocol.schema import item_type
from ...records.header import TRANSACTIONAL_MASK
from ...records.reader import iter_batches
from ..authz import TOPIC, TRANSACTIONAL_ID, Op, allowed
from ..context import CloseConnection, RequestContext
from ..services import WriteResult
from .leader_hints import point_to_leaders

_SPEC = spec_for(ApiKey.Produce)
assert _SPEC is not None
ProduceResponse: Any = _SPEC.response
TopicResponse: Any = item_type(ProduceResponse, "responses")
PartitionResponse: Any = item_type(TopicResponse, "partition_responses")
BatchError: Any = item_type(PartitionResponse, "record_errors")
LeaderIdAndEpoch: Any = item_type(PartitionResponse, "current_leader")
NodeEndpoint: Any = item_type(ProduceResponse, "node_endpoints")


async def handle(ctx: RequestContext, req: Any) -> Any:
    plan = await _plan(ctx, req)
    # the partitions that may be appended go to the broker together: one storage job
    written = await ctx.broker.produce_many(plan.todo, req.acks) if plan.todo else []
    return _finish(ctx, req, plan, written)


async def handle_pipelined(items: Sequence[tuple[RequestContext, Any]]) -> list[Any]:
    """Consecutive Produce requests of one connection (``network.pipelining``), each
    answered as ``handle`` would answer it alone: each is checked in order, then the
    partitions of a run of requests with the same acks are appended in one storage job,
    in the requests' order (so every append happens in the order it would have one by
    one), and each request gets its own response (or waits in the produce purgatory)."""
    plans = [await _plan(ctx, req) for ctx, req in items]
    results: list[Any] = []
    start = 0
    while start < len(items):
        acks = items[start][1].acks
        end = start + 1
        while end < len(items) and items[end][1].acks == acks:
            end += 1
        todo = [t for plan in plans[start:end] for t in plan.todo]
        broker = items[start][0].broker
        written = await broker.produce_many(todo, acks) if todo else []
        at = 0
        for (ctx, req), plan in zip(items[start:end], plans[start:end], strict=True):
            n = len(plan.todo)
            results.append(_finish(ctx, req, plan, written[at : at + n]))
            at += n
        start = end
    return results


@dataclass(slots=True)
class _Plan:
    """A request checked: its topics' names, each partition's answer where it is known
    without appending (None: to be appended), and the appends, in the request's order."""

    names: list[str | None]
    answers: list[list[WriteResult | None]]
    todo: list[tuple[str, int, Any]]


async def _plan(ctx: RequestContext, req: Any) -> _Plan:
    acks = req.acks
    # Every partition's answer, in the request's order; the ones that may be appended
    # are in ``todo``.
    answers: list[list[WriteResult | None]] = []
    todo: list[tuple[str, int, Any]] = []
    names = [_name_of(ctx, topic) for topic in req.topic_data]  # v13: by id (None: unknown)
    txn_refused = _has_transactional_records(req) and not (
        req.transactional_id is not None
        and allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, req.transactional_id)
    )
    may_write = [name is not None and allowed(ctx, Op.WRITE, TOPIC, name) for name in names]
    joined: dict[tuple[str, int], int] = {}
    if ctx.api_version >= 12 and req.transactional_id is not None and not txn_refused:
        joined = await _join_transaction(ctx, req, names, may_write)
    for topic, name, may in zip(req.topic_data, names, may_write, strict=True):
        row: list[WriteResult | None] = []
        for data in topic.partition_data:
            if name is None:
                row.append(WriteResult(ErrorCode.UNKNOWN_TOPIC_ID))
            elif txn_refused:
                row.append(WriteResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            elif not may:
                row.append(WriteResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif acks not in (-1, 0, 1):
                row.append(
                    WriteResult(
                        ErrorCode.INVALID_REQUIRED_ACKS,
                        error_message=f"acks={acks} is not -1, 0 or 1",
                    )
                )
            elif joined.get((name, data.index)):
                row.append(WriteResult(joined[(name, data.index)]))
            else:
                row.append(None)
                todo.append((name, data.index, data.records))
        answers.append(row)
    return _Plan(names, answers, todo)


def _finish(ctx: RequestContext, req: Any, plan: _Plan, written: Sequence[WriteResult]) -> Any:
    """The request's response from its plan and its appends' results (or its wait)."""
    acks, names = req.acks, plan.names
    appended = iter(written)
    results = [
        [answer if answer is not None else next(appended) for answer in row] for row in plan.answers
    ]
    if acks == -1:
        waiting = [
            (name, data.index, r)
            for topic, name, row in zip(req.topic_data, names, results, strict=True)
            for data, r in zip(topic.partition_data, row, strict=True)
            if name is not None and r.error_code == ErrorCode.NONE and r.required_offset >= 0
        ]
        broker = ctx.broker

        def settled() -> bool:
            return all(
                broker.replication_status(t, p, r.required_offset) is not None
                for t, p, r in waiting
            )

        def answer() -> Any:
            # Each record's fate as replication knows it now: a leadership lost since the
            # append (NOT_LEADER_OR_FOLLOWER) is an error even when it is known at once,
            # never an acknowledgement of records the ISR may not have.
            for t, p, r in waiting:
                status = broker.replication_status(t, p, r.required_offset)
                if status is None:
                    status = ErrorCode.REQUEST_TIMED_OUT
                if status != ErrorCode.NONE:
                    r.error_code, r.base_offset = status, -1
            return _respond(ctx, req, names, results, acks)

        if waiting and not settled():
            # Parked in the produce purgatory until the ISR has the records (Kafka's
            # DelayedProduce), or REQUEST_TIMED_OUT after the request's timeout.
            async def complete(expired: bool) -> Any:
                return answer()

            return broker.defer(
                ctx,
                keys=[(t, p) for t, p, _ in waiting],
                timeout_ms=req.timeout_ms,
                ready=settled,
                complete=complete,
                purgatory="produce",
            )
        return answer()
    return _respond(ctx, req, names, results, acks)


def _name_of(ctx: RequestContext, topic: Any) -> str | None:
    """A request topic's name: its own before v13, its id's from v13 (None: no topic)."""
    if ctx.api_version < 13:
        return str(topic.name)
    info = ctx.broker.topic_by_id(topic.topic_id)
    return info.name if info is not None else None


# What a leader answers for the coordinator's refusals of a partition (Kafka's
# AddPartitionsToTxnManager): a retriable NOT_ENOUGH_REPLICAS while the coordinator moves.
_JOIN_ERRORS: dict[int, int] = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
}


async def _join_transaction(
    ctx: RequestContext, req: Any, names: list[str | None], may_write: list[bool]
) -> dict[tuple[str, int], int]:
    """KIP-890 part 2: the partitions this broker leads that get a transactional batch
    join the batch's producer's transaction; each one's error (0: joined)."""
    broker = ctx.broker
    wanted: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for topic, name, may in zip(req.topic_data, names, may_write, strict=True):
        info = broker.topic(name) if name is not None and may else None
        if info is None:
            continue
        led = {p.index for p in info.partitions if p.leader == broker.broker_id}
        for data in topic.partition_data:
            producer = _transactional_producer(data.records)
            if producer is not None and data.index in led:
                wanted.setdefault(producer, []).append((info.name, data.index))
    joined: dict[tuple[str, int], int] = {}
    for (producer_id, epoch), partitions in wanted.items():
        added = await broker.transactions.add_partitions_for_leader(
            req.transactional_id, producer_id, epoch, partitions
        )
        joined.update({tp: int(_JOIN_ERRORS.get(code, code)) for tp, code in added.items()})
    return joined


def _transactional_producer(records: Any) -> tuple[int, int] | None:
    """The producer id and epoch of the first transactional batch (headers only)."""
    if records is None:
        return None
    for header, _ in iter_batches(records):
        if header.attributes & TRANSACTIONAL_MASK:
            return header.producer_id, header.producer_epoch
    return None


def _has_transactional_records(req: Any) -> bool:
    """Whether a batch of the request has the transactional bit (headers only)."""
    return any(
        header.attributes & TRANSACTIONAL_MASK
        for topic in req.topic_data
        for data in topic.partition_data
        if data.records is not None
        for header, _ in iter_batches(data.records)
    )


def _respond(
    ctx: RequestContext,
    req: Any,
    names: list[str | None],
    results: list[list[WriteResult]],
    acks: int,
) -> Any:
    failed = False
    topics = []
    for topic, name, row in zip(req.topic_data, names, results, strict=True):
        partitions = []
        for data, result in zip(topic.partition_data, row, strict=True):
            failed = failed or result.error_code != ErrorCode.NONE
            partitions.append(
                PartitionResponse(
                    index=data.index,
                    error_code=result.error_code,
                    base_offset=result.base_offset,
                    log_append_time_ms=result.log_append_time_ms,
                    log_start_offset=result.log_start_offset,
                    record_errors=[
                        BatchError(batch_index=i, batch_index_error_message=m)
                        for i, m in result.record_errors
                    ],
                    error_message=result.error_message,
                )
            )
        topics.append(
            TopicResponse(
                name=name or "",
                topic_id=topic.topic_id if ctx.api_version >= 13 else None,
                partition_responses=partitions,
            )
        )
    if acks == 0:
        return CloseConnection("a produce with acks=0 failed") if failed else None
    endpoints = (
        point_to_leaders(
            ctx,
            ((t.name, p.index, p) for t in topics for p in t.partition_responses),
            LeaderIdAndEpoch,
            NodeEndpoint,
        )
        if ctx.api_version >= 10 and failed
        else []
    )
    return ProduceResponse(
        responses=topics, throttle_time_ms=ctx.throttle_time_ms, node_endpoints=endpoints
    )
