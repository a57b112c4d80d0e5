"""Kafka's request metrics, per request type: counts, errors, bytes and the time split.

Owns: ``RequestTypeMetrics`` (one request type's figures: RequestsPerSec per version,
ErrorsPerSec per error code, requests that ended in a closed connection, RequestBytes,
handler time per plane, and the distributions RequestQueueTimeMs, LocalTimeMs,
RemoteTimeMs, ThrottleTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs, TotalTimeMs) and
``RequestMetrics``, the two observers the request path calls:

- ``completed(request)``: a request has ended (one of the socket server's ``request_observers``).
  Its stamps (``RequestTimes``) are split as Kafka's RequestChannel does; a request whose
  connection closed before its response went out (``send_complete_ns == 0``) is counted,
  with its bytes, as closed (an error) and adds no times.
- ``response(request, body, version)``: a response body was encoded (the request handler's
  ``response_observers``); its error codes are counted with a compiled accessor.

Fetch is split into FetchConsumer and FetchFollower by the request's replica id, as Kafka
does. Times are recorded in integer microseconds into the slot of the request's own
send-complete stamp, so recording reads no clock. Must not: format output (``snapshot``).
"""

from __future__ import annotations

from typing import Any

from ...network.request import Request
from ...protocol.api import ApiKey
from .error_codes import ErrorCounter, error_counter
from .window import Window, WindowedHistogram, WindowedSum

PHASES = (
    "queue",
    "local",
    "remote",
    "throttle",
    "response_queue",
    "response_send",
    "total",
)
"""The time split, in Kafka's order; each becomes ``<phase>_time_ms`` in the snapshot."""

FETCH = int(ApiKey.Fetch)
_UNCOMPILED: Any = object()


class RequestTypeMetrics:
    """The figures of one request type (an api name, or FetchConsumer / FetchFollower)."""

    __slots__ = (
        "_error_counters",
        "bytes",
        "closed",
        "count",
        "errors",
        "handler",
        "local",
        "name",
        "queue",
        "remote",
        "response_queue",
        "response_send",
        "throttle",
        "total",
        "versions",
        "window",
    )

    def __init__(self, name: str, window: Window) -> None:
        self.name = name
        self.window = window
        self.count = 0
        self.closed = 0
        self.bytes = 0
        self.versions: dict[int, int] = {}
        self.errors: dict[int, int] = {}  # error code -> occurrences in responses
        self.handler: dict[str, WindowedSum] = {}  # plane -> handler (local) time, us
        self.queue = WindowedHistogram(window)
        self.local = WindowedHistogram(window)
        self.remote = WindowedHistogram(window)
        self.throttle = WindowedHistogram(window)
        self.response_queue = WindowedHistogram(window)
        self.response_send = WindowedHistogram(window)
        self.total = WindowedHistogram(window)
        self._error_counters: dict[int, ErrorCounter | None] = {}

    def phase(self, name: str) -> WindowedHistogram:
        hist: WindowedHistogram = getattr(self, name)
        return hist

    @property
    def error_count(self) -> int:
        """Responses' non-NONE error codes plus requests that ended in a closed connection."""
        return sum(n for code, n in self.errors.items() if code != 0) + self.closed

    @property
    def handler_time_us(self) -> int:
        return sum(s.total for s in self.handler.values())

    def record(self, request: Request) -> None:
        self.count += 1
        version = request.header.api_version
        versions = self.versions
        versions[version] = versions.get(version, 0) + 1
        self.bytes += request.size
        t = request.times
        end = t.send_complete_ns
        if not end:
            self.closed += 1
            return
        epoch = end // self.window.slot_ns
        start = t.start_ns
        self.total.record((end - start) // 1000, epoch)
        self.throttle.record(t.throttle_ms * 1000, epoch)
        dequeue = t.dequeue_ns
        complete = t.response_complete_ns
        taken = t.response_dequeue_ns
        if not (dequeue and complete and taken):
            return  # did not pass every stage (cannot happen on the normal path)
        local_end = t.api_local_complete_ns or complete
        local = (local_end - dequeue) // 1000
        self.queue.record((dequeue - start) // 1000, epoch)
        self.local.record(local, epoch)
        self.remote.record((complete - local_end) // 1000, epoch)
        self.response_queue.record((taken - complete) // 1000, epoch)
        self.response_send.record((end - taken) // 1000, epoch)
        handler = self.handler.get(request.plane)
        if handler is None:
            handler = self.handler[request.plane] = WindowedSum(self.window)
        handler.add(local if local > 0 else 0, epoch)

    def count_errors(self, body: Any, version: int) -> None:
        counter = self._error_counters.get(version, _UNCOMPILED)
        if counter is _UNCOMPILED:
            counter = self._error_counters[version] = error_counter(type(body), version)
        if counter is not None:
            counter(body, self.errors)


def replica_id_of(body: Any) -> int:
    """The replica id of a Fetch request body (v15+ moved it into ``replica_state``)."""
    replica_id = getattr(body, "replica_id", -1)
    if replica_id is None or replica_id < 0:
        state = getattr(body, "replica_state", None)
        replica_id = getattr(state, "replica_id", -1) if state is not None else -1
    return replica_id if isinstance(replica_id, int) else -1


class RequestMetrics:
    """Every request type's figures, and the observers the request path calls."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self.by_name: dict[str, RequestTypeMetrics] = {}
        self._by_key: dict[int, RequestTypeMetrics] = {}

    def type_of(self, request: Request) -> RequestTypeMetrics:
        key = request.spec.key
        rt = self._by_key.get(key)
        if rt is None or key == FETCH:
            name = request.spec.name
            if key == FETCH:
                follower = request.body is not None and replica_id_of(request.body) >= 0
                name = "FetchFollower" if follower else "FetchConsumer"
            rt = self.by_name.get(name)
            if rt is None:
                rt = RequestTypeMetrics(name, self.window)
                self.by_name[name] = rt
            if key != FETCH:
                self._by_key[key] = rt
        return rt

    def completed(self, request: Request) -> None:
        """Observer: ``request`` has ended (response sent, none needed, or closed)."""
        self.type_of(request).record(request)

    def response(self, request: Request, body: Any, version: int) -> None:
        """Observer: the response ``body`` to ``request`` was encoded at ``version``."""
        self.type_of(request).count_errors(body, version)
