"""Transaction version 2 (KIP-890 part 2) at the wire, as a Kafka 4 producer speaks it: no
AddPartitionsToTxn or AddOffsetsToTxn, Produce v12/v13 and TxnOffsetCommit v5 add their
partitions to the transaction, and each EndTxn v5 bumps the producer's epoch. No client
in this environment speaks it (librdkafka, kafka-python and aiokafka end transactions as
version 1), so the producer here is a wire client; what the transactions leave behind is
read by a real read_committed consumer (confluent-kafka). ApiVersions announces the
version as Kafka 4 does: transaction.version 2 finalized."""

from __future__ import annotations

from typing import Any

import trio
from confluent_kafka import Consumer

from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.group_offsets import OffsetFetchRequest
from trio_broker.protocol.messages.produce import InitProducerIdRequest, ProduceRequest
from trio_broker.protocol.messages.transactions import (
    DescribeTransactionsRequest,
    EndTxnRequest,
    TxnOffsetCommitRequest,
)
from trio_broker.records.builder import Record, build_batch

from ..support.wire import AsyncWireClient
from .test_wire_data_path import address, make_topic

TXN = "tv2-app"
Topic = ProduceRequest.TopicProduceData


def txn_batch(pid: int, epoch: int, sequence: int, value: bytes) -> bytes:
    return build_batch(
        [Record(key=None, value=value)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )


def produce(records: bytes, *, name: str = "tv2", topic_id: Any = None) -> ProduceRequest:
    return ProduceRequest(
        transactional_id=TXN,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            Topic(
                name=name,
                topic_id=topic_id,
                partition_data=[Topic.PartitionProduceData(index=0, records=records)],
            )
        ],
    )


def end(pid: int, epoch: int, commit: bool) -> EndTxnRequest:
    return EndTxnRequest(
        transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=commit
    )


def read_committed(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "tv2-reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(100):
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) >= expected and msg is None:
                break
    finally:
        consumer.close()
    return got


async def test_a_version_2_producer_commits_and_aborts_without_adding_partitions(
    run_broker,  # type: ignore[no-untyped-def]
) -> None:
    broker = await run_broker({"group.initial.rebalance.delay.ms": "0"})
    c = await AsyncWireClient.connect(address(broker))

    versions = await c.request(ApiVersionsRequest(), 4)
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in versions.finalized_features
    ] == [("transaction.version", 2, 2), ("group.version", 1, 1)]
    assert versions.finalized_features_epoch >= 0
    assert {(f.name, f.min_version, f.max_version) for f in versions.supported_features} == {
        ("group.version", 0, 1),  # level 1: KIP-848's consumer groups
        ("transaction.version", 0, 2),
    }
    v3 = await c.request(ApiVersionsRequest(), 3)  # KAFKA-17011: no minimum of 0 at v3
    assert [(f.name, f.min_version) for f in v3.supported_features] == [
        ("group.version", 1),
        ("transaction.version", 1),
    ]

    topic_id = await make_topic(c, "tv2")
    started = await c.request(
        InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000), 5
    )
    pid, epoch = started.producer_id, started.producer_epoch
    assert started.error_code == 0

    # Produce v12: the partition joins the transaction without AddPartitionsToTxn
    answer = await c.request(produce(txn_batch(pid, epoch, 0, b"committed")), 12)
    assert answer.responses[0].partition_responses[0].error_code == 0
    # TxnOffsetCommit v5: the group's offsets partition joins without AddOffsetsToTxn
    T = TxnOffsetCommitRequest.Topic
    committed = await c.request(
        TxnOffsetCommitRequest(
            transactional_id=TXN,
            group_id="tv2-group",
            producer_id=pid,
            producer_epoch=epoch,
            topics=[T(name="tv2", partitions=[T.Partition(partition_index=0, committed_offset=1)])],
        ),
        5,
    )
    assert committed.topics[0].partitions[0].error_code == 0
    (described,) = (
        await c.request(DescribeTransactionsRequest(transactional_ids=[TXN]), 0)
    ).transaction_states
    assert described.transaction_state == "Ongoing"
    assert {t.topic for t in described.topics} == {"tv2", "__consumer_offsets"}

    # EndTxn v5: the epoch is bumped, and a retry from before the bump gets the same answer
    for _ in range(2):
        ended = await c.request(end(pid, epoch, True), 5)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, pid, epoch + 1)
    # a late batch of the old epoch is fenced, not written
    late = await c.request(produce(txn_batch(pid, epoch, 1, b"late")), 12)
    assert late.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_PRODUCER_EPOCH

    # the next transaction: the new epoch from sequence 0, Produce v13 (by topic id), aborted
    epoch += 1
    answer = await c.request(
        produce(txn_batch(pid, epoch, 0, b"aborted"), name="", topic_id=topic_id), 13
    )
    (topic_answer,) = answer.responses
    assert topic_answer.topic_id == topic_id and topic_answer.partition_responses[0].error_code == 0
    ended = await c.request(end(pid, epoch, False), 5)
    assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)
    epoch += 1
    # an abort with nothing added bumps the epoch too; a commit with nothing added is refused
    ended = await c.request(end(pid, epoch, False), 5)
    assert (ended.error_code, ended.producer_epoch) == (0, epoch + 1)
    epoch += 1
    refused = await c.request(end(pid, epoch, True), 5)
    assert (refused.error_code, refused.producer_id) == (ErrorCode.INVALID_TXN_STATE, -1)

    # the committed offset counts, and a read_committed consumer sees the committed record
    G = OffsetFetchRequest.Group
    (group,) = (
        await c.request(OffsetFetchRequest(groups=[G(group_id="tv2-group", topics=None)]), 9)
    ).groups
    assert [(t.name, p.committed_offset) for t in group.topics for p in t.partitions] == [
        ("tv2", 1)
    ]
    await c.aclose()
    host, port = broker.bound_listeners()["PLAINTEXT"]
    got = await trio.to_thread.run_sync(read_committed, f"{host}:{port}", "tv2", 1)
    assert got == [b"committed"]
