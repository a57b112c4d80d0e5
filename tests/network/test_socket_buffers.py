"""``socket.receive.buffer.bytes`` and ``socket.send.buffer.bytes``: the SO_RCVBUF and
SO_SNDBUF of accepted client sockets (set on the listening sockets, which accepted sockets
inherit), or the OS's own when -1."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing


def _buffer_after_setting(option: int, value: int) -> int:
    """What the kernel reports for an accepted socket whose listening socket was given
    ``option`` ``value`` (Linux doubles it and caps it at net.core.rmem_max / wmem_max),
    or none when ``value`` is -1 (an accepted socket's autotuned send buffer starts larger
    than a fresh socket's)."""
    with socket.socket() as listener:
        if value > 0:
            listener.setsockopt(socket.SOL_SOCKET, option, value)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()):
            accepted, _ = listener.accept()
            with accepted:
                return accepted.getsockopt(socket.SOL_SOCKET, option)


OPTIONS = {
    "socket.receive.buffer.bytes": socket.SO_RCVBUF,
    "socket.send.buffer.bytes": socket.SO_SNDBUF,
}


@pytest.mark.parametrize("key", sorted(OPTIONS))
@pytest.mark.parametrize("value", [-1, 100_000])
async def test_accepted_sockets_get_the_configured_buffer(  # type: ignore[no-untyped-def]
    run_broker, key: str, value: int
) -> None:
    option = OPTIONS[key]
    settings = {} if value == -1 else {key: str(value)}
    broker = await run_broker(settings)
    host, port = broker.bound_listeners()["PLAINTEXT"]
    client = await trio.open_tcp_stream(host, port)
    async with client:
        while not broker.socket_server.all_connections():
            await trio.testing.wait_all_tasks_blocked()
        (conn,) = broker.socket_server.all_connections()
        got = conn.stream.socket.getsockopt(socket.SOL_SOCKET, option)
    assert got == _buffer_after_setting(option, value)


def test_the_defaults_are_the_os_buffers() -> None:
    from trio_broker.server.config.broker_config import load_config

    config = load_config(None, [])
    assert config["socket.receive.buffer.bytes"] == config["socket.send.buffer.bytes"] == -1
