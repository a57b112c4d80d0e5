"""A flood of connections beyond ``max.connections`` leaves existing clients served.

Over the limit the broker closes connections to make room: first those that have not
sent a request yet (the flood), so clients already at work keep theirs.
"""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.protocol.messages.metadata import MetadataRequest

from ..support.wire import AsyncWireClient

LIMIT = 8
FLOOD = 150


async def test_a_connection_flood_leaves_working_clients_served(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"max.connections": str(LIMIT), "num.network.threads": "1"})
    host, port = broker.bound_listeners()["PLAINTEXT"]
    address = f"{host}:{port}"
    workers = [await AsyncWireClient.connect(address, client_id=f"w{i}") for i in range(3)]
    answered = [0] * len(workers)
    failures: list[BaseException] = []
    flood_done = trio.Event()

    async def work(i: int) -> None:
        # A request now and then, not constantly: the flood comes between two of them.
        try:
            while not flood_done.is_set():
                assert (await workers[i].request(MetadataRequest(topics=[]), 4)).brokers
                answered[i] += 1
                await trio.sleep(0.2)
        except Exception as exc:  # surfaced below: a worker lost its connection
            failures.append(exc)

    flood: list[trio.SocketStream] = []

    async def open_flood() -> None:
        for _ in range(FLOOD):
            flood.append(await trio.open_tcp_stream(host, port))
        flood_done.set()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i in range(len(workers)):
                nursery.start_soon(work, i)
            nursery.start_soon(open_flood)

    assert not failures, failures
    assert all(n >= 1 for n in answered), answered
    await trio.testing.wait_all_tasks_blocked()
    server = broker.socket_server
    assert len(server.all_connections()) <= LIMIT
    assert server.counters.connections_evicted >= FLOOD - LIMIT
    # The workers are still connected, on the same connections, and still served.
    kept = {c.client_id for c in server.all_connections() if c.requests}
    assert kept == {"w0", "w1", "w2"}
    for w in workers:
        assert (await w.request(MetadataRequest(topics=[]), 4)).brokers
    for s in flood:
        await s.aclose()
    for w in workers:
        await w.aclose()
