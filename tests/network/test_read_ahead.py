"""Receiving the next request while a large one is in flight (network.read_ahead): the
bytes come in, nothing is parsed before the response, and memory bounds still hold."""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.apis.services import NewTopic
from trio_broker.network.mute import MuteState
from trio_broker.network.read_ahead import DIRECT_READ, READ_AHEAD_MIN
from trio_broker.protocol.header import encode_request
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.protocol.primitives import join_parts
from trio_broker.records.builder import Record, build_batch

from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient

PRODUCE = 0


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


def produce(topic: str, value_size: int) -> ProduceRequest:
    records = build_batch([Record(None, b"v" * value_size)])
    data = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
    return ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[data])],
    )


async def test_the_next_request_is_received_not_processed_while_one_is_in_flight(  # type: ignore[no-untyped-def]
    run_broker,
) -> None:
    gate = Gate()
    broker = await run_broker({"num.io.threads": "4"}, gated_table(PRODUCE, gate))
    await broker.create_topic(NewTopic("ahead", 1))
    client = await AsyncWireClient.connect(address(broker))
    # a large first request, then one read into its own buffer, then one through the framer
    sizes = [READ_AHEAD_MIN + 1000, DIRECT_READ + 5000, READ_AHEAD_MIN + 2000]
    frames = [client.frame(produce("ahead", n), 9) for n in sizes]
    async with trio.open_nursery() as nursery:  # the client may block writing the third
        nursery.start_soon(client.send_raw, b"".join(data for _, data in frames))
        await trio.testing.wait_all_tasks_blocked()
        (conn,) = broker.socket_server.all_connections()
        assert gate.waiting == 1  # only the first request reached a handler
        assert conn.mute_state is MuteState.MUTED_AND_RESPONSE_PENDING
        # the second frame is all in, in its own buffer; the third is left in the socket
        assert conn.partial is not None
        buffer, have = conn.partial
        assert have == len(buffer) == len(frames[1][1]) - 4
        assert conn.reserved == len(buffer)
        gate.open()
        offsets = []
        for corr, _ in frames:
            got, response = await client.receive()
            assert got == corr
            part = response.responses[0].partition_responses[0]
            assert part.error_code == 0
            offsets.append(part.base_offset)
    assert offsets == [0, 1, 2]
    await client.aclose()


async def test_reading_ahead_never_waits_for_memory(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    # the first request alone uses the pool up (a reservation is granted while any
    # memory is left, as Kafka's pool does)
    request = produce("ahead", READ_AHEAD_MIN * 2)
    limit = len(join_parts(encode_request(9, 1, "wire-test", request))) - 4
    broker = await run_broker(
        {
            "num.io.threads": "4",
            "queued.max.request.bytes": str(limit),
            "socket.request.max.bytes": str(limit),
        },
        gated_table(PRODUCE, gate),
    )
    await broker.create_topic(NewTopic("ahead", 1))
    client = await AsyncWireClient.connect(address(broker))
    frames = [client.frame(request, 9) for _ in range(2)]
    pool = broker.socket_server.memory_pool
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.send_raw, b"".join(data for _, data in frames))
        await trio.testing.wait_all_tasks_blocked()
        (conn,) = broker.socket_server.all_connections()
        assert gate.waiting == 1
        # the second frame does not fit beside the first: nothing reserved, nothing read
        # into its own buffer, and the connection waits for its response, not for memory
        assert conn.partial is None and conn.reserved == 0
        assert pool.used == len(frames[0][1]) - 4
        assert conn.mute_state is MuteState.MUTED_AND_RESPONSE_PENDING
        gate.open()
        for corr, _ in frames:
            got, response = await client.receive()
            assert got == corr
            assert response.responses[0].partition_responses[0].error_code == 0
    await trio.testing.wait_all_tasks_blocked()
    assert pool.used == 0
    await client.aclose()
