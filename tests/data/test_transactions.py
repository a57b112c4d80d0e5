"""Transactions as a partition leader sees them: transactional batches over the wire,
markers through WriteTxnMarkers (and ``write_txn_markers``), and what consumers see.

No transaction coordinator is involved: the batches are kafka-python's (an independent
encoder) sent in Produce with a transactional id, the markers written as a coordinator
would. The offsets of the partition ``tx`` in ``layout``:

    0 a   1 A1  2 A2 (producer A)  3 B1 (producer B)  4 abort A  5 commit B
    6 b   7 C1 (producer C, left open)  8 c

read_committed sees a, B1, b and stops at 7 (C's first offset, the last stable offset);
read_uncommitted sees every data record.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import trio
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from trio_broker.apis.services import TxnMarker
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.offsets import ListOffsetsRequest
from trio_broker.protocol.messages.txn_markers import WriteTxnMarkersRequest
from trio_broker.records.builder import Record, build_batch
from trio_broker.records.reader import iter_batches, iter_records

from ..records.kafka_oracle import kp_batch
from ..support.brokers import BrokerThread
from ..support.wire import AsyncWireClient
from .test_wire_data_path import address, fetch_req, make_topic, produce_req

A, B, C = 1001, 1002, 1003
Marker = WriteTxnMarkersRequest.WritableTxnMarker
MarkerTopic = Marker.WritableTxnMarkerTopic
TS = 1_700_000_000_000


def txn_batch(pid: int, seq: int, *values: bytes, epoch: int = 0) -> bytes:
    return kp_batch(
        [(TS, None, v, []) for v in values],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
    )


def plain(*values: bytes) -> bytes:
    return build_batch([Record(None, v) for v in values], timestamp_ms=TS)


async def produce(c: AsyncWireClient, records: bytes, txn_id: str | None = "tx-1") -> Any:
    req = produce_req("tx", records)
    req.transactional_id = txn_id
    (p,) = (await c.request(req, 9)).responses[0].partition_responses
    return p


async def markers(
    c: AsyncWireClient,
    *wanted: tuple[int, bool],
    topic: str = "tx",
    coordinator_epoch: int = 0,
    producer_epoch: int = 0,
) -> list[int]:
    """Write (producer id, commit) markers on partition 0 through WriteTxnMarkers."""
    req = WriteTxnMarkersRequest(
        markers=[
            Marker(
                producer_id=pid,
                producer_epoch=producer_epoch,
                transaction_result=commit,
                topics=[MarkerTopic(name=topic, partition_indexes=[0])],
                coordinator_epoch=coordinator_epoch,
            )
            for pid, commit in wanted
        ]
    )
    resp = await c.request(req, 1)
    return [m.topics[0].partitions[0].error_code for m in resp.markers]


async def layout(c: AsyncWireClient) -> None:
    await make_topic(c, "tx")
    assert (await produce(c, plain(b"a"), None)).base_offset == 0
    assert (await produce(c, txn_batch(A, 0, b"A1", b"A2"))).base_offset == 1
    assert (await produce(c, txn_batch(B, 0, b"B1"))).base_offset == 3
    assert await markers(c, (A, False), (B, True)) == [0, 0]
    assert (await produce(c, plain(b"b"), None)).base_offset == 6
    assert (await produce(c, txn_batch(C, 0, b"C1"))).base_offset == 7
    assert (await produce(c, plain(b"c"), None)).base_offset == 8


def values_of(records: Any) -> list[bytes]:
    data = records if isinstance(records, (bytes, memoryview)) else b""
    return [
        r.value or b"" for h, b in iter_batches(data) if not h.is_control for r in iter_records(b)
    ]


def committed_fetch(offset: int, **kw: Any) -> FetchRequest:
    req = fetch_req("tx", offset, **kw)
    req.isolation_level = 1
    return req


def confluent_values(bootstrap: str, isolation: str) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "txn-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition("tx", 0, 0)])
    out = []
    try:
        while True:
            m = c.poll(10)
            assert m is not None, "no end of partition within 10 s"
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF
                return out
            out.append(m.value())
    finally:
        c.close()


def kafka_python_values(bootstrap: str, expected: int) -> tuple[list[bytes], int]:
    """read_committed values polled until ``expected`` came (10 s deadline), then what a
    last short poll adds, and the consumer's position."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        group_id=None,
    )
    tp = KpTopicPartition("tx", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    out: list[bytes] = []
    deadline = time.monotonic() + 10
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                out += [r.value for r in records]
        for records in consumer.poll(timeout_ms=500).values():
            out += [r.value for r in records]
        return out, consumer.position(tp)
    finally:
        consumer.close()


async def test_consumers_see_only_committed_records(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await layout(c)
    bootstrap = address(broker)
    committed = await trio.to_thread.run_sync(confluent_values, bootstrap, "read_committed")
    assert committed == [b"a", b"B1", b"b"]
    everything = await trio.to_thread.run_sync(confluent_values, bootstrap, "read_uncommitted")
    assert everything == [b"a", b"A1", b"A2", b"B1", b"b", b"C1", b"c"]
    kp, position = await trio.to_thread.run_sync(kafka_python_values, bootstrap, 3)
    assert kp == [b"a", b"B1", b"b"] and position == 7

    # C commits: the last stable offset moves past its marker (9) to the log end.
    assert await markers(c, (C, True)) == [0]
    committed = await trio.to_thread.run_sync(confluent_values, bootstrap, "read_committed")
    assert committed == [b"a", b"B1", b"b", b"C1", b"c"]
    kp, position = await trio.to_thread.run_sync(kafka_python_values, bootstrap, 5)
    assert kp == [b"a", b"B1", b"b", b"C1", b"c"] and position == 10


async def test_fetch_and_list_offsets_under_read_committed(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await layout(c)
    resp = await c.request(committed_fetch(0), 4)
    (p,) = resp.responses[0].partitions
    assert (p.high_watermark, p.last_stable_offset) == (9, 7)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(A, 1)]
    assert values_of(p.records) == [b"a", b"A1", b"A2", b"B1", b"b"]  # the client drops A's
    # Past the aborted transaction: nothing to list.
    (p,) = (await c.request(committed_fetch(5), 11)).responses[0].partitions
    assert p.aborted_transactions == [] and values_of(p.records) == [b"b"]
    # read_uncommitted: everything, no list.
    (p,) = (await c.request(fetch_req("tx", 0), 11)).responses[0].partitions
    assert p.last_stable_offset == 7 and p.aborted_transactions is None
    assert values_of(p.records)[-2:] == [b"C1", b"c"]

    async def latest(isolation: int) -> int:
        part = ListOffsetsRequest.Topic.Partition(partition_index=0, timestamp=-1)
        req = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=isolation,
            topics=[ListOffsetsRequest.Topic(name="tx", partitions=[part])],
        )
        return (await c.request(req, 7)).topics[0].partitions[0].offset  # type: ignore[no-any-return]

    assert await latest(1) == 7
    assert await latest(0) == 9


async def test_a_parked_read_committed_fetch_wakes_when_a_marker_moves_the_lso(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await layout(c)
    waiter = await AsyncWireClient.connect(address(broker))
    fetches = broker.purgatories["fetch"]
    before = fetches.size
    began = trio.current_time()
    await waiter.send(committed_fetch(7, wait=20_000), 11)
    with trio.fail_after(10):
        while fetches.size == before:  # parked at the last stable offset
            await trio.sleep(0.005)
    assert await markers(c, (C, True)) == [0]
    with trio.fail_after(10):
        _, resp = await waiter.receive()
    assert trio.current_time() - began < 10
    (p,) = resp.responses[0].partitions
    assert p.last_stable_offset == 10
    assert values_of(p.records) == [b"C1", b"c"] and p.aborted_transactions == []


async def test_marker_rules_and_the_observer_hook(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "tx")
    seen: list[tuple[str, int, int, bool]] = []
    broker.replica_manager.marker_observers.append(lambda *a: seen.append(a))
    assert (await produce(c, txn_batch(A, 0, b"A1"))).error_code == 0
    write = broker.write_txn_markers
    done = await write([TxnMarker(A, 0, 5, True, [("tx", 0), ("tx", 7), ("nope", 0)])])
    assert done == [
        {
            ("tx", 0): ErrorCode.NONE,
            ("tx", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
    ]
    assert seen == [("tx", 0, A, True)]
    # An older coordinator epoch is fenced; an older producer epoch is refused.
    fenced = await write([TxnMarker(A, 0, 4, False, [("tx", 0)])])
    assert fenced == [{("tx", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}]
    # A marker of a newer producer epoch fences the older epoch's data.
    assert await write([TxnMarker(A, 3, 5, False, [("tx", 0)])]) == [{("tx", 0): 0}]
    assert (await produce(c, txn_batch(A, 1, b"late"))).error_code == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )
    old = await write([TxnMarker(A, 2, 6, False, [("tx", 0)])])
    assert old == [{("tx", 0): ErrorCode.INVALID_PRODUCER_EPOCH}]
    assert await markers(c, (A, True), coordinator_epoch=4, producer_epoch=3) == [
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    ]
    assert len(seen) == 2


async def test_produce_rules_for_transactional_and_control_batches(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "tx")
    refused = await produce(c, txn_batch(A, 0, b"x"), None)
    assert refused.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    control = build_batch(
        [Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
        producer_id=A,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
        timestamp_ms=TS,
    )
    assert (await produce(c, control)).error_code == ErrorCode.INVALID_RECORD
    # A transactional id with plain batches is fine, as Kafka's.
    assert (await produce(c, plain(b"ok"))).error_code == 0
    assert broker.replica_manager.partition("tx", 0).log_end_offset == 1


async def test_write_txn_markers_is_listed_and_needs_cluster_action(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(
        {
            "authorizer.class.name": "acl",
            "allow.everyone.if.no.acl.found": "false",
        }
    )
    c = await AsyncWireClient.connect(address(broker))
    resp = await c.request(
        ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3
    )
    versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert versions[27] == (0, 1)
    assert await markers(c, (A, True)) == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]


def test_a_restart_keeps_lso_aborted_index_and_open_transactions(tmp_path: Path) -> None:
    settings = {"listeners": "PLAINTEXT://127.0.0.1:0"}

    async def before(bootstrap: str) -> None:
        await layout(await AsyncWireClient.connect(bootstrap))

    async def after(bootstrap: str) -> None:
        c = await AsyncWireClient.connect(bootstrap)
        (p,) = (await c.request(committed_fetch(0), 11)).responses[0].partitions
        assert (p.high_watermark, p.last_stable_offset) == (9, 7)
        assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(A, 1)]
        assert await markers(c, (C, True)) == [0]  # C's transaction was still open
        (p,) = (await c.request(committed_fetch(0), 11)).responses[0].partitions
        assert p.last_stable_offset == 10

    for check in (before, after):
        b = BrokerThread(tmp_path / "data", settings).start()
        try:
            trio.run(check, b.bootstrap)
        finally:
            b.stop()


async def test_aborted_list_across_segments_and_a_session_sees_the_lso_move(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await layout(c)
    plog = broker.replica_manager.partition("tx", 0)
    plog.roll(int(time.time() * 1000))  # C's abort marker lands in a segment of its own
    assert plog.segment_base_offsets[-1] == 9  # (old timestamps rolled the others already)

    # A fetch session at the last stable offset: an incremental fetch has no news for the
    # partition until a marker moves the LSO.
    first = committed_fetch(7)
    first.session_id, first.session_epoch = 0, 0
    resp = await c.request(first, 11)
    session = resp.session_id
    assert session != 0 and resp.responses[0].partitions[0].last_stable_offset == 7

    def incremental(epoch: int) -> FetchRequest:
        req = committed_fetch(7)
        req.session_id, req.session_epoch, req.topics = session, epoch, []
        return req

    assert (await c.request(incremental(1), 11)).responses == []
    assert await markers(c, (C, False)) == [0]
    (t,) = (await c.request(incremental(2), 11)).responses
    assert t.partitions[0].last_stable_offset == 10
    assert [(a.producer_id, a.first_offset) for a in t.partitions[0].aborted_transactions] == [
        (C, 7)
    ]

    (p,) = (await c.request(committed_fetch(0), 11)).responses[0].partitions
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(A, 1), (C, 7)]
    (p,) = (await c.request(committed_fetch(5), 11)).responses[0].partitions
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(C, 7)]
    committed = await trio.to_thread.run_sync(confluent_values, address(broker), "read_committed")
    assert committed == [b"a", b"B1", b"b", b"c"]
