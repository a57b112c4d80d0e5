"""The request path over real sockets: ordering, muting, backpressure, the control plane."""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.network.mute import MuteState
from trio_broker.protocol.messages.api_versions import ApiVersionsRequest
from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient

METADATA = 3


def addr(broker, listener: str = "PLAINTEXT") -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()[listener]
    return f"{host}:{port}"


async def test_pipelined_requests_are_answered_in_order(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"num.io.threads": "8"})
    client = await AsyncWireClient.connect(addr(broker))
    frames = []
    expected = []
    for i in range(60):
        if i % 3 == 0:
            corr, data = client.frame(ApiVersionsRequest(), i % 4)
        else:
            corr, data = client.frame(MetadataRequest(topics=[]), 1 + i % 12)
        frames.append(data)
        expected.append(corr)
    await client.send_raw(b"".join(frames))  # all 60 in one write
    got = [(await client.receive())[0] for _ in expected]
    assert got == expected
    await client.aclose()


async def test_a_connection_is_muted_while_its_request_is_in_flight(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker({"num.io.threads": "4"}, gated_table(METADATA, gate))
    client = await AsyncWireClient.connect(addr(broker))
    _, first = client.frame(MetadataRequest(topics=[]), 5)
    _, second = client.frame(MetadataRequest(topics=[]), 5)
    await client.send_raw(first + second)
    await trio.testing.wait_all_tasks_blocked()
    # Four idle handlers, yet only the first request was read: the second waits unread.
    assert gate.waiting == 1
    (conn,) = broker.socket_server.all_connections()
    assert conn.mute_state is MuteState.MUTED_AND_RESPONSE_PENDING
    assert conn.framer.buffered == len(second)
    gate.open()
    assert (await client.receive())[0] == 1
    assert (await client.receive())[0] == 2
    await trio.testing.wait_all_tasks_blocked()
    assert conn.mute_state is MuteState.NOT_MUTED
    await client.aclose()


async def test_a_full_request_channel_pushes_back_and_loses_nothing(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker(
        {"num.io.threads": "1", "queued.max.requests": "2"}, gated_table(METADATA, gate)
    )
    clients = [await AsyncWireClient.connect(addr(broker)) for _ in range(6)]
    for c in clients:
        await c.send(MetadataRequest(topics=[]), 4)
    await trio.testing.wait_all_tasks_blocked()
    channel = broker.socket_server.data_requests
    assert gate.waiting == 2  # the only io thread's two handlers hold one request each
    assert channel.size == channel.capacity == 2  # the channel is full
    # The other two connections have parsed a request and wait to enqueue it.
    conns = broker.socket_server.all_connections()
    assert len(conns) == 6
    assert all(c.mute_state is MuteState.MUTED_AND_RESPONSE_PENDING for c in conns)
    gate.open()
    for c in clients:
        corr, response = await c.receive()
        assert corr == 1
        assert response.brokers[0].node_id == 0
        await c.aclose()


async def test_the_control_plane_answers_while_the_data_plane_is_full(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "control.plane.listener.name": "CONTROLLER",
            "num.io.threads": "1",
            "queued.max.requests": "1",
        },
        gated_table(METADATA, gate, planes=("data",)),
    )
    data_clients = [await AsyncWireClient.connect(addr(broker)) for _ in range(4)]
    for c in data_clients:
        await c.send(MetadataRequest(topics=[]), 4)
    await trio.testing.wait_all_tasks_blocked()
    assert broker.socket_server.data_requests.size == 1  # full
    control = await AsyncWireClient.connect(addr(broker, "CONTROLLER"))
    with trio.fail_after(2):
        response = await control.request(MetadataRequest(topics=[]), 4)
    assert response.brokers[0].port == broker.bound_listeners()["CONTROLLER"][1]
    assert broker.control_pool is not None and broker.control_pool.size == 1
    gate.open()
    for c in data_clients:
        assert (await c.receive())[0] == 1
        await c.aclose()
    await control.aclose()
