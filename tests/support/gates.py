"""A handler that waits at a gate: holds requests in the handler pool on purpose.

Tests use it to fill the request channel and to keep a request in flight, then open the
gate and check that every held request is answered.
"""

from __future__ import annotations

from typing import Any

import trio

from trio_broker.apis.context import RequestContext
from trio_broker.apis.table import API_TABLE, ApiTable


class Gate:
    def __init__(self) -> None:
        self.opened = trio.Event()
        self.waiting = 0

    def open(self) -> None:
        self.opened.set()


def gated_table(api_key: int, gate: Gate, planes: tuple[str, ...] = ("data",)) -> ApiTable:
    entry = API_TABLE.get(api_key)
    assert entry is not None
    original = entry.handler

    async def gated(ctx: RequestContext, body: Any) -> Any:
        if ctx.plane in planes:
            gate.waiting += 1
            try:
                await gate.opened.wait()
            finally:
                gate.waiting -= 1
        return await original(ctx, body)

    return API_TABLE.with_handler(api_key, gated)
