"""A client that trickles a request a byte at a time holds no processor and is closed.

``connections.max.idle.ms`` cannot catch it (every byte is activity); the trio-broker
extension ``request.read.timeout.ms`` bounds how long one request may take to arrive once
its first byte has come.
"""

from __future__ import annotations

import logging

import trio
import trio.testing

from trio_broker.protocol.header import encode_request
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.primitives import join_parts

from ..support.wire import AsyncWireClient


async def test_a_byte_a_second_client_is_closed_and_others_are_served(run_broker, caplog) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(
        {
            "num.network.threads": "1",  # the slow and the healthy client share a processor
            "request.read.timeout.ms": "1500",
            "connections.max.idle.ms": "60000",
        }
    )
    host, port = broker.bound_listeners()["PLAINTEXT"]
    address = f"{host}:{port}"
    healthy = await AsyncWireClient.connect(address, client_id="healthy")
    slow = await AsyncWireClient.connect(address, client_id="slow")
    slow_port = slow.stream.socket.getsockname()[1]
    frame = join_parts(encode_request(4, 1, "slow", MetadataRequest(topics=[])))
    trickled = [0]  # bytes of the slow client's request sent so far
    served: list[int] = []  # trickled[0] at each answer to the healthy client
    closed_at: list[float] = []

    async def trickle() -> None:
        try:
            for b in frame:
                await slow.send_raw(bytes([b]))
                trickled[0] += 1
                await trio.sleep(0.25)  # faster than idle, far too slow for one request
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def watch_close() -> None:
        assert await slow.closed_by_peer()
        closed_at.append(trio.current_time())

    start = trio.current_time()
    with caplog.at_level(logging.WARNING, logger="trio_broker.network"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trickle)
            nursery.start_soon(watch_close)
            with trio.fail_after(10):
                while not closed_at:  # meanwhile the other client is answered
                    assert (await healthy.request(MetadataRequest(topics=[]), 4)).brokers
                    served.append(trickled[0])
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
        await trio.testing.wait_all_tasks_blocked()

    assert closed_at[0] - start >= 1.4, closed_at[0] - start  # not before the timeout
    # The healthy client, on the same processor, was answered while the slow client's
    # request was half-sent (how fast it was answered is bench/'s to say).
    assert any(0 < n < len(frame) for n in served), (served, len(frame))
    counters = broker.socket_server.counters
    assert counters.request_read_timeouts == 1 and counters.connections_reaped == 0
    assert broker.metrics_snapshot()["connections"]["read_timeouts"] == 1
    lines = [r.getMessage() for r in caplog.records if f":{slow_port}" in r.getMessage()]
    assert len(lines) == 1 and "request.read.timeout.ms" in lines[0], lines
    assert [c.client_id for c in broker.socket_server.all_connections()] == ["healthy"]
    await healthy.aclose()


async def test_a_request_that_arrives_in_time_is_served_even_if_split(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"request.read.timeout.ms": "2000"})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    client = await AsyncWireClient.connect(f"{host}:{port}")
    corr, frame = client.frame(MetadataRequest(topics=[]), 4)
    for i in range(0, len(frame), 3):  # in pieces, a little apart, but within the bound
        await client.send_raw(frame[i : i + 3])
        await trio.sleep(0.02)
    got, response = await client.receive()
    assert got == corr and response.brokers
    # The clock restarts with each request: a second one, just as slow, is served too.
    await trio.sleep(1.5)
    assert (await client.request(MetadataRequest(topics=[]), 4)).brokers
    assert broker.socket_server.counters.request_read_timeouts == 0
    await client.aclose()


async def test_a_large_request_trickling_in_is_closed_too(run_broker) -> None:  # type: ignore[no-untyped-def]
    """Large frames are read straight into their own buffer: the same bound applies."""
    broker = await run_broker({"request.read.timeout.ms": "1000"})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    slow = await AsyncWireClient.connect(f"{host}:{port}", client_id="big")
    await slow.send_raw((300_000).to_bytes(4, "big") + b"\x00" * 1000)
    start = trio.current_time()

    async def trickle() -> None:
        try:
            while True:
                await slow.send_raw(b"\x00" * 100)
                await trio.sleep(0.1)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trickle)
        with trio.fail_after(10):
            assert await slow.closed_by_peer()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - start >= 0.9  # not before the timeout
    assert broker.socket_server.counters.request_read_timeouts == 1
