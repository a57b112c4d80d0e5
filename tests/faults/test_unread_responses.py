"""A client that pipelines requests and never reads the responses cannot grow the broker.

A connection is muted while its response is pending: the broker reads the next request
only once the previous response has been written to the socket, and writing blocks when
the client does not read. So it holds one response, one request's memory and one receive
buffer for that client, however many requests the client pushes; others go on.
"""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.apis.services import NewTopic
from trio_broker.network.mute import MuteState
from trio_broker.protocol.messages.fetch import FetchRequest
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.records import Record, build_batch

from ..support.wire import AsyncWireClient

RECEIVE_BUFFER = 65536  # the connection's read size (network.connection._RECEIVE_SIZE)


def fetch(max_bytes: int = 1 << 20) -> FetchRequest:
    part = FetchRequest.Topic.Partition(partition=0, fetch_offset=0, partition_max_bytes=max_bytes)
    return FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        topics=[FetchRequest.Topic(topic="big", partitions=[part])],
    )


async def test_a_client_that_never_reads_holds_one_response(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(
        {
            "num.network.threads": "1",
            "socket.request.max.bytes": "1000000",
            "queued.max.request.bytes": "1000000",
        }
    )
    host, port = broker.bound_listeners()["PLAINTEXT"]
    address = f"{host}:{port}"
    await broker.create_topic(NewTopic("big", 1))
    writer = await AsyncWireClient.connect(address, client_id="writer")
    records = build_batch([Record(None, b"x" * 2000) for _ in range(200)])  # ~400 KB
    produce = ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="big",
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    resp = await writer.request(produce, 7)
    assert resp.responses[0].partition_responses[0].error_code == 0

    hog = await AsyncWireClient.connect(address, client_id="hog")
    _, one = hog.frame(fetch(), 4)
    pushed = 0

    async def push_forever(task_status=trio.TASK_STATUS_IGNORED) -> None:  # type: ignore[no-untyped-def]
        nonlocal pushed
        task_status.started()
        burst = one * 1000
        while True:  # blocks once the kernel's buffers are full; never reads
            await hog.send_raw(burst)
            pushed += 1000

    async with trio.open_nursery() as nursery:
        await nursery.start(push_forever)
        await trio.testing.wait_all_tasks_blocked()
        (conn,) = [c for c in broker.socket_server.all_connections() if c.client_id == "hog"]
        read_before = (conn.requests, conn.bytes_in)
        # Each answer is 400 KB: the socket is full after one or two, and there it stops.
        assert conn.mute_state is MuteState.MUTED_AND_RESPONSE_PENDING
        assert conn.requests <= 3, conn.requests
        assert pushed >= 1000 and conn.requests < pushed
        assert conn.framer.buffered <= RECEIVE_BUFFER
        snap = broker.metrics_snapshot()
        processors = snap["pools"]["network"]["PLAINTEXT"]["processors"]
        assert sum(p["response_queue_size"] for p in processors) <= 1
        assert snap["memory_pool"]["used_bytes"] <= len(one)
        assert snap["request_queue"]["data"]["size"] == 0

        # Meanwhile other clients are served, on the same processor, big answers included.
        other = await AsyncWireClient.connect(address, client_id="other")
        for _ in range(5):
            with trio.fail_after(5):
                got = await other.request(fetch(), 4)
            assert len(got.responses[0].partitions[0].records) > 300_000
            assert (await other.request(MetadataRequest(topics=[]), 4)).brokers

        # Time passing changes nothing: the hog's connection reads no more.
        await trio.sleep(0.3)
        await trio.testing.wait_all_tasks_blocked()
        assert (conn.requests, conn.bytes_in) == read_before
        nursery.cancel_scope.cancel()

    await hog.aclose()
    with trio.fail_after(5):
        while not conn.closed:
            await trio.sleep(0.01)
    await trio.testing.wait_all_tasks_blocked()
    assert broker.socket_server.memory_pool.used == 0
    await other.aclose()
    await writer.aclose()
