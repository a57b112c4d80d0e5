"""Produce v3-v11: append record batches, validated by header and CRC, never decoded.

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
"""

from __future__ import annotations

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
    acks = req.acks
    # Every partition's answer, in the request's order; the ones that may be appended
    # go to the broker together (one storage job for the whole request).
    answers: list[list[WriteResult | None]] = []
    todo: list[tuple[str, int, Any]] = []
    txn_refused = _has_transactional_records(req) and not (
        req.transactional_id is not None
        and allowed(ctx, Op.WRITE, TRANSACTIONAL_ID, req.transactional_id)
    )
    for topic in req.topic_data:
        may_write = allowed(ctx, Op.WRITE, TOPIC, topic.name)
        row: list[WriteResult | None] = []
        for data in topic.partition_data:
            if txn_refused:
                row.append(WriteResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            elif not may_write:
                row.append(WriteResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif acks not in (-1, 0, 1):
                row.append(
                    WriteResult(
                        ErrorCode.INVALID_REQUIRED_ACKS,
                        error_message=f"acks={acks} is not -1, 0 or 1",
                    )
                )
            else:
                row.append(None)
                todo.append((topic.name, data.index, data.records))
        answers.append(row)
    written = iter(await ctx.broker.produce_many(todo, acks) if todo else [])
    results = [
        [answer if answer is not None else next(written) for answer in row] for row in answers
    ]
    if acks == -1:
        waiting = [
            (topic.name, data.index, r)
            for topic, row in zip(req.topic_data, results, strict=True)
            for data, r in zip(topic.partition_data, row, strict=True)
            if r.error_code == ErrorCode.NONE and r.required_offset >= 0
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
            return _respond(ctx, req, results, acks)

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
    return _respond(ctx, req, results, acks)


def _has_transactional_records(req: Any) -> bool:
    """Whether a batch of the request has the transactional bit (headers only)."""
    return any(
        header.attributes & TRANSACTIONAL_MASK
        for topic in req.topic_data
        for data in topic.partition_data
        if data.records is not None
        for header, _ in iter_batches(data.records)
    )


def _respond(ctx: RequestContext, req: Any, results: list[list[WriteResult]], acks: int) -> Any:
    failed = False
    topics = []
    for topic, row in zip(req.topic_data, results, strict=True):
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
        topics.append(TopicResponse(name=topic.name, partition_responses=partitions))
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
