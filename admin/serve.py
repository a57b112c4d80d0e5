"""Serving the admin app with Hypercorn inside the caller's ``trio.run``.

Owns: ``serve_admin``, which binds the admin socket itself (so port 0 works and the bound
address is known before anything else starts; ``AdminBindError`` naming the address when
the bind fails), hands that socket to ``hypercorn.trio.serve`` and reports
``http://host:port`` through ``task_status``; the server runs until ``shutdown_trigger``
returns, then lets requests in flight finish within ``GRACEFUL_TIMEOUT_S``. Hypercorn
logs through ``trio_broker.admin.http`` (its "Running on" line is dropped: the broker logs
one start-up line with every address).
Must not: start a thread, a process or an event loop of its own.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable
from functools import partial

import hypercorn.trio
import trio
from hypercorn.config import Config, Sockets
from quart_trio import QuartTrio

GRACEFUL_TIMEOUT_S = 1.0

_http_log = logging.getLogger("trio_broker.admin.http")


class _DropStartupBanner(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Running on")


_http_log.addFilter(_DropStartupBanner())


class AdminBindError(OSError):
    """The admin API's address cannot be bound: the message names it, in one line."""


class _BoundConfig(Config):
    """A Hypercorn config that serves one socket bound beforehand."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._bound = sock

    def create_sockets(self) -> Sockets:
        return Sockets(secure_sockets=[], insecure_sockets=[self._bound], quic_sockets=[])


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def bind_admin_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (empty host: all interfaces; 0: any port).

    ``AdminBindError`` naming the address when it cannot be bound (in use, not local ...).
    """
    try:
        infos = await trio.socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, type_, proto, _, address = infos[0]
        sock = socket.socket(family, type_, proto)
    except OSError as exc:
        raise _bind_error(host, port, exc) from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise _bind_error(host, port, exc) from exc
    except BaseException:
        sock.close()
        raise
    return sock


def _bind_error(host: str, port: int, exc: OSError) -> AdminBindError:
    host = host or "0.0.0.0"
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    reason = (exc.strerror or str(exc)).lower()
    return AdminBindError(f"admin API (admin.listeners) cannot bind {address}: {reason}")


async def serve_admin(
    app: QuartTrio,
    host: str,
    port: int,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on ``host:port`` until ``shutdown_trigger`` returns.

    ``started`` with the URL once the socket accepts connections.
    """
    sock = await bind_admin_socket(host, port)
    url = url_of(sock)
    try:
        config = _BoundConfig(sock)
        config.errorlog = _http_log
        config.accesslog = None
        config.graceful_timeout = GRACEFUL_TIMEOUT_S
        config.include_server_header = False
        async with trio.open_nursery() as nursery:
            await nursery.start(
                partial(hypercorn.trio.serve, app, config, shutdown_trigger=shutdown_trigger)
            )
            task_status.started(url)
    finally:
        sock.close()
