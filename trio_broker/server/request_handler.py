"""Runs one request through the API table and turns the outcome into a response action.

Owns: ``RequestHandler.handle`` (what each handler task calls) and ``complete`` (also
called by the purgatory when a delayed operation finishes). Responses are encoded here, on
the handler side, as Kafka's handlers serialize their responses; the processor only writes
bytes; ``response_observers`` (the metrics' error-code counter) sees each encoded response body.
A handler that raises is a broker bug: it is logged with the request and the
connection is closed (the client retries), never left hanging.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ..apis.context import CloseConnection, Deferred, RequestContext
from ..apis.services import BrokerView
from ..apis.table import ApiTable
from ..network.request import CloseConnectionResponse, NoOpResponse, Request, SendResponse
from ..protocol.header import encode_response
from ..protocol.primitives import parts_length
from .throttling import Throttler

log = logging.getLogger("trio_broker.server")


class RequestHandler:
    def __init__(self, table: ApiTable, broker: BrokerView) -> None:
        self.table = table
        self.broker = broker
        # Observers of every encoded response: (request, response body, version).
        self.response_observers: list[Callable[[Request, Any, int], None]] = []
        # Client quotas (set by the broker): usage recorded, over-quota clients throttled.
        self.throttler: Throttler | None = None

    def context_for(self, request: Request) -> RequestContext:
        header = request.header
        return RequestContext(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            client_host=request.client_host,
            listener=request.listener,
            security_protocol=request.security_protocol,
            principal=request.principal,
            plane=request.plane,
            broker=self.broker,
        )

    async def handle(self, request: Request) -> None:
        request.times.dequeue_ns = time.monotonic_ns()
        entry = self.table.get(request.spec.key)
        if entry is None:  # the network layer only lets in keys of the table
            self._close(request, "no handler")
            return
        ctx = self.context_for(request)
        ctx.extras["request"] = request
        request.context["ctx"] = ctx
        try:
            result = await entry.handler(ctx, request.body)
        except Exception:
            log.exception("handler failed on %r from %s", request, request.client_host)
            self._close(request, "handler error")
            return
        request.times.api_local_complete_ns = time.monotonic_ns()
        if isinstance(result, Deferred):
            return
        self.complete(request, result)

    def complete(self, request: Request, response: Any) -> None:
        """Send ``response`` (a response body, or None for no response) to the client."""
        sink = request.sink
        throttler = self.throttler
        if response is None:
            throttle_ms = throttler.throttle_ms(request, 0) if throttler is not None else 0
            if throttle_ms and throttler is not None:
                throttler.start(request, throttle_ms)
            sink.deliver(NoOpResponse(request))
            return
        if isinstance(response, CloseConnection):
            self._close(request, response.reason)
            return
        ctx: RequestContext = request.context["ctx"]
        try:
            parts = encode_response(
                request.spec, ctx.response_version, ctx.correlation_id, response
            )
            size = parts_length(parts)
            throttle_ms = throttler.throttle_ms(request, size) if throttler is not None else 0
            if throttle_ms and hasattr(response, "throttle_time_ms"):
                # KIP-219: the response tells the client how long it is throttled.
                response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)
                parts = encode_response(
                    request.spec, ctx.response_version, ctx.correlation_id, response
                )
                size = parts_length(parts)
        except Exception:
            log.exception("cannot encode the response to %r", request)
            self._close(request, "response encoding error")
            return
        for observer in self.response_observers:
            observer(request, response, ctx.response_version)
        if throttle_ms and throttler is not None:
            throttler.start(request, throttle_ms)
        sink.deliver(SendResponse(request, parts, size))

    def fail(self, request: Request, reason: str) -> None:
        """Give up on a request: its connection is closed (the client retries)."""
        self._close(request, reason)

    def _close(self, request: Request, reason: str) -> None:
        request.sink.deliver(CloseConnectionResponse(request, reason))
