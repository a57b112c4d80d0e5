"""Produce and Fetch at the wire, every version, and their error cases."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_broker.apis.services import NewTopic
from trio_broker.protocol.errors import ErrorCode
from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.offsets import DeleteRecordsRequest, ListOffsetsRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.records.builder import Record, build_batch
from trio_broker.records.header import TimestampType
from trio_broker.records.reader import iter_batches, iter_records

from ..support.brokers import settled
from ..support.wire import AsyncWireClient

TopicData = ProduceRequest.TopicProduceData
PartitionData = TopicData.PartitionProduceData
FetchTopic = FetchRequest.Topic
FetchPartition = FetchTopic.Partition


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


async def make_topic(client: AsyncWireClient, name: str) -> object:
    req = MetadataRequest(topics=[MetadataRequest.Topic(name=name)], allow_auto_topic_creation=True)
    (t,) = (await client.request(req, 12)).topics
    assert t.error_code == 0
    return t.topic_id


def produce_req(
    topic: str, records: bytes | None, acks: int = 1, partition: int = 0
) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            TopicData(name=topic, partition_data=[PartitionData(index=partition, records=records)])
        ],
    )


def batch(*values: bytes, ts: int = 1_700_000_000_000) -> bytes:
    return build_batch([Record(key=None, value=v) for v in values], timestamp_ms=ts)


def fetch_req(
    topic: str,
    offset: int,
    topic_id: object = None,
    *,
    max_bytes: int = 1 << 20,
    partition_max: int = 1 << 20,
    wait: int = 0,
    min_bytes: int = 1,
) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=wait,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[
            FetchTopic(
                topic=topic,
                topic_id=topic_id,
                partitions=[
                    FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=partition_max
                    )
                ],
            )
        ],
    )


def values_of(records: memoryview | bytes) -> list[bytes]:
    return [r.value for _, b in iter_batches(records) for r in iter_records(b)]  # type: ignore[misc]


@pytest.mark.parametrize("version", range(3, 12))
async def test_produce_every_version(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    for i in range(3):
        resp = await c.request(produce_req("t", batch(b"a%d" % i, b"b%d" % i)), version)
        (p,) = resp.responses[0].partition_responses
        assert (p.error_code, p.base_offset) == (0, 2 * i)


async def test_a_produce_holds_exactly_one_batch_per_partition(run_broker) -> None:  # type: ignore[no-untyped-def]
    """As Kafka's ProduceRequest.validateRecords (v3+): two batches for one partition, or
    none, are INVALID_RECORD for that partition, and nothing of them is appended."""
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    for records in (batch(b"a") + batch(b"b"), b""):
        resp = await c.request(produce_req("t", records), 9)
        (p,) = resp.responses[0].partition_responses
        assert p.error_code == ErrorCode.INVALID_RECORD, records
    resp = await c.request(produce_req("t", batch(b"c")), 9)
    assert resp.responses[0].partition_responses[0].base_offset == 0  # nothing went in before


@pytest.mark.parametrize("version", range(1, 12))
async def test_list_offsets_every_version(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    for i in range(4):
        await c.request(produce_req("t", batch(b"v%d" % i, ts=1_000 + i)), 9)
    delete = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.Topic(
                name="t",
                partitions=[DeleteRecordsRequest.Topic.Partition(partition_index=0, offset=1)],
            )
        ],
        timeout_ms=5000,
    )
    assert (await c.request(delete, 2)).topics[0].partitions[0].low_watermark == 1

    async def ask(timestamp: int) -> tuple[int, int, int]:
        part = ListOffsetsRequest.Topic.Partition(partition_index=0, timestamp=timestamp)
        req = ListOffsetsRequest(
            replica_id=-1,
            topics=[ListOffsetsRequest.Topic(name="t", partitions=[part])],
            timeout_ms=1,  # v10+: no remote storage to wait for
        )
        (p,) = (await c.request(req, version)).topics[0].partitions
        return p.error_code, p.offset, p.timestamp

    assert await ask(-2) == (0, 1, -1)
    assert await ask(-1) == (0, 4, -1)
    assert await ask(1_002) == (0, 2, 1_002)
    unsupported = (ErrorCode.UNSUPPORTED_VERSION, -1, -1)  # a special timestamp too new
    assert await ask(-3) == ((0, 3, 1_003) if version >= 7 else unsupported)
    # the local log start: no tiered storage, so the log start
    assert await ask(-4) == ((0, 1, -1) if version >= 8 else unsupported)
    # the last tiered offset, and the earliest pending upload (KIP-1023): none
    assert await ask(-5) == ((0, -1, -1) if version >= 9 else unsupported)
    assert await ask(-6) == ((0, -1, -1) if version >= 11 else unsupported)
    assert (await ask(-7))[0] == ErrorCode.INVALID_REQUEST  # no such special timestamp


@pytest.mark.parametrize("version", range(4, 14))
async def test_fetch_every_version(run_broker, version: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    topic_id = await make_topic(c, "t")
    await c.request(produce_req("t", batch(b"x", b"y")), 7)
    await c.request(produce_req("t", batch(b"z")), 7)
    resp = await c.request(fetch_req("t", 1, topic_id), version)
    (t,) = resp.responses
    (p,) = t.partitions
    assert p.error_code == 0 and p.high_watermark == 3
    if version >= 13:
        assert t.topic_id == topic_id
    else:
        assert t.topic == "t"
    # Whole batches: the one holding offset 1 starts at offset 0.
    assert values_of(p.records) == [b"x", b"y", b"z"]


async def test_acks_0_gets_no_response_and_a_failure_closes(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    await c.send(produce_req("t", batch(b"quiet"), acks=0), 7)
    c._pending.clear()  # no response is coming for it
    # The next request's answer is the next thing on the wire.
    resp = await c.request(fetch_req("t", 0), 11)
    assert values_of(resp.responses[0].partitions[0].records) == [b"quiet"]
    await c.send(produce_req("nope", batch(b"lost"), acks=0), 7)
    assert await c.closed_by_peer()


@pytest.mark.parametrize(
    ("records", "acks", "topic", "code"),
    [
        (batch(b"v"), 2, "t", ErrorCode.INVALID_REQUIRED_ACKS),
        (batch(b"v"), 1, "missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (batch(b"v")[:-3], 1, "t", ErrorCode.CORRUPT_MESSAGE),
        (batch(b"v")[:30] + b"\xff" + batch(b"v")[31:], 1, "t", ErrorCode.CORRUPT_MESSAGE),
        (batch(b"v" * 5000), 1, "small", ErrorCode.MESSAGE_TOO_LARGE),
    ],
    ids=["bad-acks", "unknown-topic", "torn-batch", "bad-crc", "too-large"],
)
async def test_produce_errors(run_broker, records: bytes, acks: int, topic: str, code: int) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    await broker.create_topic(NewTopic("small", 1, {"max.message.bytes": "1024"}))
    resp = await c.request(produce_req(topic, records, acks=acks), 8)
    (p,) = resp.responses[0].partition_responses
    assert p.error_code == code
    assert p.error_message  # v8+: says why
    # Nothing was stored.
    assert (await c.request(fetch_req("t", 0), 11)).responses[0].partitions[0].high_watermark == 0


async def test_fetch_out_of_range_and_limits(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "t")
    for i in range(5):
        await c.request(produce_req("t", batch(b"%d" % i * 300)), 8)
    (p,) = (await c.request(fetch_req("t", 99), 11)).responses[0].partitions
    assert p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and p.high_watermark == 5
    # partition_max_bytes below one batch: still one whole batch (no stuck consumer)
    (p,) = (await c.request(fetch_req("t", 0, partition_max=10), 11)).responses[0].partitions
    assert values_of(p.records) == [b"0" * 300]
    # max_bytes for two and a bit batches: two whole batches
    size = len(batch(b"0" * 300))
    (p,) = (await c.request(fetch_req("t", 0, max_bytes=2 * size + 50), 11)).responses[0].partitions
    assert len(values_of(p.records)) == 2


async def test_a_parked_fetch_completes_when_data_arrives(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    consumer = await AsyncWireClient.connect(address(broker))
    producer = await AsyncWireClient.connect(address(broker))
    await make_topic(producer, "t")
    await consumer.send(fetch_req("t", 0, wait=30_000), 11)
    await settled(broker)
    assert broker.fetch_purgatory.size == 1
    await producer.request(produce_req("t", batch(b"wake")), 8)
    _, resp = await consumer.receive()
    assert values_of(resp.responses[0].partitions[0].records) == [b"wake"]
    assert broker.fetch_purgatory.size == 0
    assert broker.fetch_purgatory.expired_count == 0  # woken by the data, not by max.wait


async def test_log_append_time(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker()
    await broker.create_topic(NewTopic("lat", 1, {"message.timestamp.type": "LogAppendTime"}))
    c = await AsyncWireClient.connect(address(broker))
    resp = await c.request(produce_req("lat", batch(b"v", ts=1000)), 8)
    (p,) = resp.responses[0].partition_responses
    assert p.log_append_time_ms > 1_700_000_000_000
    (f,) = (await c.request(fetch_req("lat", 0), 11)).responses[0].partitions
    ((header, _),) = list(iter_batches(f.records))
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == p.log_append_time_ms


async def test_large_frames_arrive_whole_even_in_pieces(run_broker) -> None:  # type: ignore[no-untyped-def]
    """Frames past 128 KiB are read straight into their own buffer; pieces and pauses
    in between must not matter."""
    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await make_topic(c, "big")
    values = [bytes([i]) * 100_000 for i in range(3)]  # one 300 KB batch
    _, frame = c.frame(produce_req("big", build_batch([Record(None, v) for v in values])), 8)
    for start in range(0, len(frame), 70_001):  # odd-sized pieces, the client waiting between
        await c.send_raw(frame[start : start + 70_001])
        await trio.testing.wait_all_tasks_blocked()
    _, resp = await c.receive()
    assert resp.responses[0].partition_responses[0].error_code == 0
    (f,) = (await c.request(fetch_req("big", 0, partition_max=1 << 21), 11)).responses[0].partitions
    assert values_of(f.records) == values


async def test_a_large_frame_cut_short_is_a_truncated_frame(run_broker) -> None:  # type: ignore[no-untyped-def]
    import struct

    broker = await run_broker()
    c = await AsyncWireClient.connect(address(broker))
    await c.send_raw(struct.pack(">i", 200_000) + b"\0" * 150_000)
    await c.stream.send_eof()
    assert await c.closed_by_peer()
    await trio.testing.wait_all_tasks_blocked()
    assert broker.socket_server.counters.bad_requests == {"TruncatedFrame": 1}
