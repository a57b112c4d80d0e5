"""The Quart-Trio app class of the admin API, with one fix to its HTTP connection.

Owns: ``AdminQuart``. quart-trio runs each request as two tasks in one nursery, one
reading ASGI messages and one handling the request, and cancels the nursery as soon as
the reader sees ``http.disconnect``. Hypercorn reports that disconnect for every finished
HTTP/1.1 response, from inside the handler task's own last ``send``, before it has
re-armed the keep-alive idle timer; the cancellation lands there, so a kept-alive
connection is never timed out and holds a graceful shutdown for its whole timeout.
Here a disconnect cancels the handler only when no response has started (the client
left early); otherwise the handler finishes its ``send`` and ends the nursery itself.
"""

from __future__ import annotations

from typing import Any

import trio
from quart.asgi import ASGIHTTPConnection
from quart_trio import QuartTrio
from quart_trio.asgi import TrioASGIHTTPConnection


class _HTTPConnection(TrioASGIHTTPConnection):
    _responding = False

    async def handle_messages(  # type: ignore[override]
        self, nursery: trio.Nursery, request: Any, receive: Any
    ) -> None:
        await ASGIHTTPConnection.handle_messages(self, request, receive)
        if not self._responding:
            nursery.cancel_scope.cancel()

    async def handle_request(  # type: ignore[override]
        self, nursery: trio.Nursery, request: Any, send: Any
    ) -> None:
        async def responding(message: Any) -> None:
            self._responding = True
            await send(message)

        await super().handle_request(nursery, request, responding)


class AdminQuart(QuartTrio):
    asgi_http_class = _HTTPConnection
