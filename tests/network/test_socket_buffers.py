"""``socket.receive.buffer.bytes``: the SO_RCVBUF of accepted client sockets (set on the
listening sockets, which accepted sockets inherit), or the OS's own when -1."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing


def _rcvbuf_after_setting(value: int) -> int:
    """What the kernel reports for a socket given SO_RCVBUF ``value`` (Linux doubles it
    and caps it at net.core.rmem_max), or for a fresh one when ``value`` is -1."""
    with socket.socket() as sock:
        if value > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, value)
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


@pytest.mark.parametrize("value", [-1, 100_000])
async def test_accepted_sockets_get_the_configured_receive_buffer(  # type: ignore[no-untyped-def]
    run_broker, value: int
) -> None:
    settings = {} if value == -1 else {"socket.receive.buffer.bytes": str(value)}
    broker = await run_broker(settings)
    host, port = broker.bound_listeners()["PLAINTEXT"]
    client = await trio.open_tcp_stream(host, port)
    async with client:
        while not broker.socket_server.all_connections():
            await trio.testing.wait_all_tasks_blocked()
        (conn,) = broker.socket_server.all_connections()
        got = conn.stream.socket.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    assert got == _rcvbuf_after_setting(value)


def test_the_default_is_the_os_receive_buffer() -> None:
    from trio_broker.server.config import load_config

    assert load_config(None, [])["socket.receive.buffer.bytes"] == -1
