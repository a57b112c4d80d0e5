"""A handler's delayed response: a purgatory operation that answers a parked request.

Owns: ``DelayedResponse``, built by ``Broker.defer`` from what the handler gave (a cheap
readiness check and an async function that builds the response, told whether the wait ran
out). When the purgatory completes it, the response goes to the request's connection like
any other, stamped so that the wait shows as remote time in the metrics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...network.request import Request
from ..common import DelayedOperation
from .request_handler import RequestHandler


class DelayedResponse(DelayedOperation):
    def __init__(
        self,
        deadline: float,
        request: Request,
        handler: RequestHandler,
        ready: Callable[[], bool],
        build: Callable[[bool], Awaitable[Any]],
    ) -> None:
        super().__init__(deadline)
        self.request = request
        self._handler = handler
        self._ready = ready
        self._build = build

    def ready(self) -> bool:
        return self._ready()

    async def complete(self) -> None:
        try:
            response = await self._build(self.expired)
        except Exception:
            self._handler.fail(self.request, "building a delayed response")
            return
        self._handler.complete(self.request, response)

    def __repr__(self) -> str:
        return f"<DelayedResponse {self.request!r}>"
