"""Connection limits, idle reaping and the memory bound, over real sockets."""

from __future__ import annotations

import trio
import trio.testing

from trio_broker.apis.services import NewTopic
from trio_broker.network.mute import MuteState
from trio_broker.protocol.messages.metadata import MetadataRequest
from trio_broker.protocol.messages.produce import ProduceRequest
from trio_broker.records import Record, build_batch

from ..support.gates import Gate, gated_table
from ..support.wire import AsyncWireClient


def address(broker) -> str:  # type: ignore[no-untyped-def]
    host, port = broker.bound_listeners()["PLAINTEXT"]
    return f"{host}:{port}"


async def connect_from(broker, source_ip: str) -> AsyncWireClient:  # type: ignore[no-untyped-def]
    """A client whose connection comes from ``source_ip`` (any of 127.0.0.0/8)."""
    host, port = broker.bound_listeners()["PLAINTEXT"]
    sock = trio.socket.socket()
    await sock.bind((source_ip, 0))
    await sock.connect((host, port))
    return AsyncWireClient(trio.SocketStream(sock), "wire-test")


async def alive(client: AsyncWireClient) -> bool:
    try:
        with trio.fail_after(5):
            await client.request(MetadataRequest(topics=[]), 4)
        return True
    except (ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError):
        return False


async def test_per_ip_limit_refuses_at_accept_with_overrides(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker(
        {"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.2:4"}
    )
    first = [await connect_from(broker, "127.0.0.1") for _ in range(2)]
    refused = await connect_from(broker, "127.0.0.1")
    assert all([await alive(c) for c in first])
    assert await refused.closed_by_peer()
    assert broker.socket_server.counters.connections_rejected == 1
    others = [await connect_from(broker, "127.0.0.2") for _ in range(4)]  # its override
    assert all([await alive(c) for c in others])
    # A closed connection frees its slot.
    await first[0].aclose()
    await trio.testing.wait_all_tasks_blocked()
    assert await alive(await connect_from(broker, "127.0.0.1"))


async def test_over_max_connections_the_least_recently_used_is_closed(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"max.connections": "3"})
    a, b, c = [await AsyncWireClient.connect(address(broker)) for _ in range(3)]
    for client in (a, c, b):  # a is now the least recently used
        assert await alive(client)
    d = await AsyncWireClient.connect(address(broker))
    assert await alive(d)
    assert await a.closed_by_peer()
    assert all([await alive(x) for x in (b, c, d)])
    assert broker.socket_server.counters.connections_evicted == 1
    assert broker.metrics_snapshot()["connections"]["evicted"] == 1


async def test_lowering_max_connections_at_run_time_closes_the_excess(run_broker) -> None:  # type: ignore[no-untyped-def]
    from trio_broker.server.quotas import connection_limits_from

    broker = await run_broker()
    clients = [await AsyncWireClient.connect(address(broker)) for _ in range(5)]
    for client in clients:
        assert await alive(client)
    config = broker.config.with_updates({"max.connections": "2"})
    broker.socket_server.update_limits(connection_limits_from(config))
    assert [await c.closed_by_peer() for c in clients[:3]] == [True] * 3
    assert all([await alive(c) for c in clients[3:]])


async def test_creation_rate_holds_accepts_back(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"max.connection.creation.rate": "10"})
    start = trio.current_time()
    clients = [await AsyncWireClient.connect(address(broker)) for _ in range(15)]
    for client in clients:
        assert await alive(client)  # every one is served, the last five a second later
    assert trio.current_time() - start >= 0.9
    assert broker.socket_server.quotas.throttled_accepts >= 1


async def test_idle_connections_are_reaped(run_broker) -> None:  # type: ignore[no-untyped-def]
    broker = await run_broker({"connections.max.idle.ms": "300"})
    busy = await AsyncWireClient.connect(address(broker))
    idle = await AsyncWireClient.connect(address(broker))
    assert await alive(idle)
    busy_alive = []

    async def keep_busy(cancel: trio.CancelScope) -> None:
        with cancel:
            while True:  # a request every 100 ms is activity: never idle for 300 ms
                busy_alive.append(await alive(busy))
                await trio.sleep(0.1)

    async with trio.open_nursery() as nursery:
        scope = trio.CancelScope()
        nursery.start_soon(keep_busy, scope)
        with trio.fail_after(10):
            assert await idle.closed_by_peer()
        scope.cancel()
    assert broker.socket_server.counters.connections_reaped == 1
    assert len(busy_alive) >= 3 and all(busy_alive)


async def test_the_memory_bound_stops_reading_until_memory_frees(run_broker) -> None:  # type: ignore[no-untyped-def]
    gate = Gate()
    broker = await run_broker(
        {
            "socket.request.max.bytes": "10000",
            "queued.max.request.bytes": "10000",
            "num.io.threads": "8",
        },
        gated_table(0, gate),
    )
    await broker.create_topic(NewTopic("mem", 1))
    records = build_batch([Record(None, b"x" * 3900)])
    req = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="mem",
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
                ],
            )
        ],
    )
    clients = [await AsyncWireClient.connect(address(broker)) for _ in range(6)]
    for client in clients:
        await client.send(req, 7)
    await trio.testing.wait_all_tasks_blocked()
    pool = broker.socket_server.memory_pool
    # Requests reach handlers only while memory is left; the rest wait, muted, unread.
    assert gate.waiting == 3 and pool.used <= 10000 + 4100 and pool.waits >= 1
    waiting = [c for c in broker.socket_server.all_connections() if c.mute_state is MuteState.MUTED]
    assert len(waiting) == 3
    assert broker.metrics_snapshot()["memory_pool"]["used_bytes"] == pool.used
    gate.open()
    for client in clients:
        _, response = await client.receive()
        assert response.responses[0].partition_responses[0].error_code == 0
    await trio.testing.wait_all_tasks_blocked()
    assert pool.used == 0
