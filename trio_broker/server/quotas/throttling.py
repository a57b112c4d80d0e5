"""Throttling clients over their quotas, KIP-219 style: answer at once, then mute.

Owns: ``Throttler``. For each completed request it records the client's usage with the
``QuotaManager`` (Produce request bytes, consumer Fetch response bytes, and the handler
time of every request that is not exempt) and, when the client is over a quota, tells the
request path to throttle: the response goes out at once carrying ``throttle_time_ms``,
then the connection stays muted (MUTED_AND_THROTTLED) until the throttle time has passed,
when an EndThrottling action unmutes it. The end of each throttle is a delayed operation in
the "throttle" purgatory, so no task waits per throttled client and shutdown ends them all.
Exempt, as in Kafka: the control plane, ApiVersions and the SASL handshake.
"""

from __future__ import annotations

import trio

from ...network.request import EndThrottling, Request, StartThrottling
from ...protocol.api import ApiKey
from ..common import DelayedOperation, Purgatory
from .manager import FETCH, PRODUCE, REQUEST, QuotaManager

EXEMPT = frozenset({ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate})


def principal_name(principal: str) -> str:
    """``User:alice`` -> ``alice`` (the name Kafka's user quotas match)."""
    return principal.split(":", 1)[1] if ":" in principal else principal


class _ThrottleEnd(DelayedOperation):
    def __init__(self, deadline: float, request: Request) -> None:
        super().__init__(deadline)
        self.request = request

    def ready(self) -> bool:
        return False  # only time ends a throttle

    async def complete(self) -> None:
        self.request.sink.deliver(EndThrottling(self.request))


class Throttler:
    def __init__(self, quotas: QuotaManager, purgatory: Purgatory) -> None:
        self.quotas = quotas
        self.purgatory = purgatory

    def throttle_ms(self, request: Request, response_size: int) -> int:
        """Record this request's usage; the throttle time it earns (0: none)."""
        key = request.spec.key
        if request.plane == "control" or key in EXEMPT:
            return 0
        quotas = self.quotas
        user = principal_name(request.principal)
        client = request.header.client_id or ""
        ms = 0
        if key == ApiKey.Produce:
            ms = quotas.record(PRODUCE, user, client, request.size)
        elif key == ApiKey.Fetch and getattr(request.body, "replica_id", -1) < 0:
            ms = quotas.record(FETCH, user, client, response_size)
        times = request.times
        local_ns = (times.api_local_complete_ns or times.response_complete_ns) - times.dequeue_ns
        if times.dequeue_ns and local_ns > 0:
            # handler time as a percentage of one thread: percent-seconds per second
            ms = max(ms, quotas.record(REQUEST, user, client, local_ns / 1e7))
        return ms

    def start(self, request: Request, throttle_ms: int) -> None:
        """Mute the connection after its response until ``throttle_ms`` has passed."""
        request.times.throttle_ms = throttle_ms
        request.sink.deliver(StartThrottling(request, throttle_ms))
        deadline = trio.current_time() + throttle_ms / 1000
        self.purgatory.park(_ThrottleEnd(deadline, request), ())

    def record_network_time(self, request: Request) -> None:
        """Charge the time the network layer spent sending the response (Kafka records
        network thread time without throttling the request that used it)."""
        if request.plane == "control" or request.spec.key in EXEMPT:
            return
        times = request.times
        if times.send_complete_ns and times.response_dequeue_ns:
            sent_ns = times.send_complete_ns - times.response_dequeue_ns
            self.quotas.record_quietly(
                REQUEST,
                principal_name(request.principal),
                request.header.client_id or "",
                sent_ns / 1e7,
            )
