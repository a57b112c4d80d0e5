"""The request handler pool (Kafka's KafkaRequestHandlerPool) on Trio tasks.

Owns: ``HandlerPool``, N tasks that take requests from one plane's request channel and
run them; ``resize`` grows the pool at once and shrinks it by letting each removed handler
finish its current request (an idle one stops at once); and the busy/idle accounting each
handler keeps (the basis of RequestHandlerAvgIdlePercent). A request whose handling
raises past ``handle``'s own guard closes its connection only; the handler goes on. The
pool ends when its request channel is closed and drained: the shutdown idiom, no poison
pills.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Awaitable, Callable

import trio

from ...network.request import CloseConnectionResponse, Request

log = logging.getLogger("trio_broker.server")


class Handler:
    """One handler task's state."""

    __slots__ = (
        "busy_ns",
        "current",
        "ended_ns",
        "id",
        "idle_scope",
        "started_ns",
        "stop_requested",
    )

    def __init__(self, handler_id: int) -> None:
        self.id = handler_id
        self.busy_ns = 0
        self.started_ns = time.monotonic_ns()
        self.ended_ns = 0  # when the handler left its pool (idle ratios across resizes)
        self.current: Request | None = None
        self.stop_requested = False
        self.idle_scope: trio.CancelScope | None = None

    def idle_ratio(self, now_ns: int | None = None) -> float:
        elapsed = (now_ns or time.monotonic_ns()) - self.started_ns
        if elapsed <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - self.busy_ns / elapsed))


class HandlerPool:
    def __init__(
        self,
        name: str,
        requests: trio.MemoryReceiveChannel[Request],
        handle: Callable[[Request], Awaitable[None]],
        size: int,
    ) -> None:
        self.name = name
        self._rx = requests
        self._handle = handle
        self._initial_size = size
        self.handlers: list[Handler] = []
        self._ids = itertools.count()
        self._nursery: trio.Nursery | None = None

    @property
    def size(self) -> int:
        return sum(1 for h in self.handlers if not h.stop_requested)

    @property
    def busy(self) -> int:
        return sum(1 for h in self.handlers if h.current is not None)

    async def run(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for _ in range(self._initial_size):
                self._start_handler()
            task_status.started()

    def resize(self, size: int) -> None:
        if size < 1:
            raise ValueError("a handler pool needs at least one handler")
        active = [h for h in self.handlers if not h.stop_requested]
        for _ in range(size - len(active)):
            self._start_handler()
        if len(active) > size:
            # Stop idle handlers first; busy ones finish their request, then stop.
            victims = sorted(active, key=lambda h: h.current is not None)[: len(active) - size]
            for h in victims:
                h.stop_requested = True
                if h.current is None and h.idle_scope is not None:
                    h.idle_scope.cancel()

    def _start_handler(self) -> None:
        assert self._nursery is not None
        h = Handler(next(self._ids))
        self.handlers.append(h)
        self._nursery.start_soon(self._run_handler, h, name=f"{self.name} handler {h.id}")

    async def _run_handler(self, h: Handler) -> None:
        rx = self._rx
        try:
            while not h.stop_requested:
                request: Request | None = None
                try:
                    # Drain what is queued before sleeping: a request already waiting is
                    # taken without a checkpoint (``receive`` would yield to the scheduler
                    # once per request); only an empty channel parks the handler.
                    request = rx.receive_nowait()
                except trio.WouldBlock:
                    with trio.CancelScope() as h.idle_scope:
                        try:
                            request = await rx.receive()
                        except trio.EndOfChannel:
                            return
                    h.idle_scope = None
                except trio.EndOfChannel:
                    return
                if request is None:
                    continue
                start = time.monotonic_ns()
                h.current = request
                try:
                    await self._handle(request)
                except Exception:
                    # ``handle`` answers its own failures; this is the last guard, so that
                    # a bug there costs one connection, never the pool or the broker.
                    log.exception("handler %s failed on %r", h.id, request)
                    request.sink.deliver(CloseConnectionResponse(request, "broker error"))
                finally:
                    h.current = None
                    h.busy_ns += time.monotonic_ns() - start
        finally:
            h.ended_ns = time.monotonic_ns()
            self.handlers.remove(h)
