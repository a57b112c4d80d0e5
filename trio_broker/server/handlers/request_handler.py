"""Runs one request through the API table and turns the outcome into a response action.

Owns: ``RequestHandler.handle`` (what each handler task calls) and ``complete`` (also
called by the purgatory when a delayed operation finishes). Responses are encoded here, on
the handler side, as Kafka's handlers serialize their responses; the processor only writes
bytes; ``response_observers`` (the metrics' error-code counter) sees each encoded response body.

Per-request isolation (Kafka's ``KafkaApis.handle`` catch-all and ``handleError``): an
exception while handling or completing one request (in its API handler, a delayed
response, the throttler, a response observer, encoding the response) is a broker bug that
costs that request only. It is logged once, with its traceback, counted in ``failures``,
and the request is answered with UNKNOWN_SERVER_ERROR in every error code of its response
(``protocol.error_response``); where the response has no place for an error code, or the
error response cannot be built, the connection is closed (the client retries). Never
left hanging, and no other request or connection notices.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable
from typing import Any

from ...apis.context import CloseConnection, Deferred, RequestContext
from ...apis.services import BrokerView
from ...apis.table import ApiTable
from ...network.request import (
    CloseConnectionResponse,
    EndThrottling,
    NoOpResponse,
    Request,
    SendResponse,
)
from ...protocol.api import ApiKey, ApiSpec
from ...protocol.error_response import error_response
from ...protocol.errors import ErrorCode, Unavailable
from ...protocol.header import encode_response
from ...protocol.messages.api_versions import ApiVersionsResponse
from ...protocol.primitives import Parts, join_parts, parts_length
from ..quotas import Throttler

log = logging.getLogger("trio_broker.server")


_CORRELATION = struct.Struct(">i")
_API_VERSIONS = int(ApiKey.ApiVersions)
_BODIES_CACHED = 16


class _ApiVersionsFrames:
    """Encoded ApiVersions responses, by everything in them but the correlation id.

    The answer is the same on every request of a plane (the key list comes from one
    cached list), yet encoding its ~50 entries was a tenth of an ApiVersions request's
    CPU. An entry is keyed by the identities of the ``api_keys`` list and of the feature
    lists (built once each too) and holds them, so an identity cannot be reused while the
    entry lives; a response with any other content is encoded afresh and cached under its
    own key.
    """

    def __init__(self) -> None:
        self._frames: dict[tuple[Any, ...], tuple[tuple[Any, ...], bytes]] = {}

    def parts(
        self, spec: ApiSpec, version: int, correlation_id: int, response: ApiVersionsResponse
    ) -> Parts:
        lists = (response.api_keys, response.supported_features, response.finalized_features)
        key = (
            version,
            response.error_code,
            response.throttle_time_ms,
            response.finalized_features_epoch,
            response.zk_migration_ready,
            *map(id, lists),
        )
        hit = self._frames.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], lists, strict=True)):
            parts = encode_response(spec, version, correlation_id, response)
            if len(self._frames) >= _BODIES_CACHED:
                self._frames.clear()
            self._frames[key] = (lists, bytes(join_parts(parts)))
            return parts
        frame = bytearray(hit[1])
        # ApiVersions responses keep header v0 at every version: the id follows the size
        _CORRELATION.pack_into(frame, 4, correlation_id)
        return [frame]


class RequestHandler:
    def __init__(self, table: ApiTable, broker: BrokerView) -> None:
        self.table = table
        self.broker = broker
        # Observers of every encoded response: (request, response body, version).
        self.response_observers: list[Callable[[Request, Any, int], None]] = []
        # Client quotas (set by the broker): usage recorded, over-quota clients throttled.
        self.throttler: Throttler | None = None
        # Requests that met a broker error, by api name (answered UNKNOWN_SERVER_ERROR,
        # which the metrics count in errors_by_code, or closed: counted as closed).
        self.failures: dict[str, int] = {}
        self._api_versions_frames = _ApiVersionsFrames()

    def context_for(self, request: Request) -> RequestContext:
        header = request.header
        return RequestContext(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            client_host=request.client_host,
            client_port=request.client_port,
            connection_id=request.connection_id,
            client_software=request.client_software,
            listener=request.listener,
            security_protocol=request.security_protocol,
            principal=request.principal,
            plane=request.plane,
            broker=self.broker,
        )

    async def handle(self, request: Request) -> None:
        if request.followers:
            await self._handle_group([request, *request.followers])
            return
        request.times.dequeue_ns = time.monotonic_ns()
        try:
            entry = self.table.get(request.spec.key)
            if entry is None:  # the network layer only lets in keys of the table
                self._close(request, "no handler")
                return
            ctx = self.context_for(request)
            ctx.extras["request"] = request
            request.context["ctx"] = ctx
            result = await entry.handler(ctx, request.body)
        except Exception as exc:
            unavailable = _unavailable(exc)
            if unavailable is None:
                self.fail(request, "handling")
            else:  # not the broker's failure: a retriable answer
                log.warning("%r from %s: %s", request, request.client_host, unavailable)
                self._answer_error(request, unavailable.error_code, str(unavailable))
            return
        request.times.api_local_complete_ns = time.monotonic_ns()
        if isinstance(result, Deferred):
            return
        self.complete(request, result)

    async def _handle_group(self, group: list[Request]) -> None:
        """Pipelined requests of one connection (``network.pipelining``), in order: through
        their API's ``pipelined`` handler together, else one by one. The group's handler
        time is shared out evenly in the requests' time stamps, in order (each one's queue
        time then holds the part of the group handled before it), since they were
        handled as one piece of work."""
        entry = self.table.get(group[0].spec.key)
        pipelined = entry.pipelined if entry is not None else None
        if pipelined is None:  # a replaced handler, fault rules: each passes it alone
            for request in group:
                request.followers = None
                await self.handle(request)
            return
        start = time.monotonic_ns()
        items = []
        for request in group:
            ctx = self.context_for(request)
            ctx.extras["request"] = request
            request.context["ctx"] = ctx
            items.append((ctx, request.body))
        try:
            results = await pipelined(items)
        except Exception as exc:
            unavailable = _unavailable(exc)
            for request in group:
                request.times.dequeue_ns = start
                if unavailable is None:
                    self.fail(request, "handling")
                else:
                    self._answer_error(request, unavailable.error_code, str(unavailable))
            return
        share = (time.monotonic_ns() - start) // len(group)
        for i, (request, result) in enumerate(zip(group, results, strict=True)):
            request.times.dequeue_ns = start + i * share
            request.times.api_local_complete_ns = start + (i + 1) * share
            if not isinstance(result, Deferred):
                self.complete(request, result)

    def complete(self, request: Request, response: Any) -> None:
        """Send ``response`` (a response body, or None for no response) to the client.
        Never raises: a failure on the way answers the request with an error instead."""
        throttling = [False]
        try:
            self._complete(request, response, throttling)
        except Exception:
            if throttling[0]:  # its connection would wait for an end that never comes
                request.sink.deliver(EndThrottling(request))
            self.fail(request, "completing the response")

    def _complete(self, request: Request, response: Any, throttling: list[bool]) -> None:
        sink = request.sink
        throttler = self.throttler
        if response is None:
            throttle_ms = throttler.throttle_ms(request, 0) if throttler is not None else 0
            if throttle_ms and throttler is not None:
                throttling[0] = True
                throttler.start(request, throttle_ms)
            sink.deliver(NoOpResponse(request))
            return
        if isinstance(response, CloseConnection):
            self._close(request, response.reason)
            return
        ctx: RequestContext = request.context["ctx"]
        if request.spec.key == _API_VERSIONS and isinstance(response, ApiVersionsResponse):
            parts = self._api_versions_frames.parts(
                request.spec, ctx.response_version, ctx.correlation_id, response
            )
        else:
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
        for observer in self.response_observers:
            observer(request, response, ctx.response_version)
        if throttle_ms and throttler is not None:
            throttling[0] = True
            throttler.start(request, throttle_ms)
        sink.deliver(SendResponse(request, parts, size))

    def fail(self, request: Request, where: str) -> None:
        """The broker failed on ``request`` (call it inside the ``except``): log it once
        with its traceback, count it, and answer UNKNOWN_SERVER_ERROR, or close the
        connection when the response cannot carry it."""
        name = request.spec.name
        log.exception("broker error %s %r from %s", where, request, request.client_host)
        self.failures[name] = self.failures.get(name, 0) + 1
        try:
            self._answer_error(request)
        except Exception:
            log.debug("no error response for %r", request, exc_info=True)
            self._close(request, "broker error")

    def _answer_error(
        self,
        request: Request,
        code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR,
        message: str = "The server experienced an unexpected error when processing the request.",
    ) -> None:
        ctx: RequestContext | None = request.context.get("ctx")
        version = ctx.response_version if ctx is not None else request.header.api_version
        if request.body is None:
            self._close(request, "broker error")
            return
        response = error_response(request.spec, version, request.body, code, message)
        if response is None:  # no error code to carry it: the client sees a disconnect
            self._close(request, "broker error")
            return
        parts = encode_response(request.spec, version, request.header.correlation_id, response)
        for observer in self.response_observers:  # so that the metrics count the error
            try:
                observer(request, response, version)
            except Exception:
                log.debug("a response observer failed on an error response", exc_info=True)
        request.sink.deliver(SendResponse(request, parts, parts_length(parts)))

    def _close(self, request: Request, reason: str) -> None:
        request.sink.deliver(CloseConnectionResponse(request, reason))


def _unavailable(exc: Exception) -> Unavailable | None:
    """``exc`` if it is ``Unavailable``, or the first of a group that holds nothing else
    (concurrent parts of one request that all found ZooKeeper gone); else None."""
    if isinstance(exc, Unavailable):
        return exc
    if isinstance(exc, ExceptionGroup):
        found, rest = exc.split(Unavailable)
        if found is not None and rest is None:
            leaf: BaseException = found
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            return leaf if isinstance(leaf, Unavailable) else None
    return None
