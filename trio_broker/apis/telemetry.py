"""GetTelemetrySubscriptions (71) and PushTelemetry (72): KIP-714's client metrics.

Owns: the two handlers. Each turns its request into a call on the broker's
``TelemetryView`` with what the broker knows of the client (its client id, the software
name and version its ApiVersions gave, its address and port) and answers with the view's
outcome; Kafka's rules (subscriptions, throttling, the push errors) are the view's
(``server.telemetry``). Neither needs an ACL, as in Kafka.
"""

from __future__ import annotations

from ..protocol.messages.telemetry import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
    PushTelemetryRequest,
    PushTelemetryResponse,
)
from .context import RequestContext
from .telemetry_services import ClientInfo


def client_of(ctx: RequestContext) -> ClientInfo:
    name, version = ctx.client_software
    return ClientInfo(
        client_id=ctx.client_id or "",
        software_name=name or "",
        software_version=version or "",
        address=ctx.client_host,
        port=ctx.client_port,
        connection_id=ctx.connection_id,
    )


async def get_subscriptions(
    ctx: RequestContext, req: GetTelemetrySubscriptionsRequest
) -> GetTelemetrySubscriptionsResponse:
    got = ctx.broker.telemetry.get_subscriptions(client_of(ctx), req.client_instance_id)
    return GetTelemetrySubscriptionsResponse(
        throttle_time_ms=ctx.throttle_time_ms,
        error_code=got.error_code,
        client_instance_id=got.client_instance_id,
        subscription_id=got.subscription_id,
        accepted_compression_types=got.accepted_compression_types,
        push_interval_ms=got.push_interval_ms,
        telemetry_max_bytes=got.telemetry_max_bytes,
        delta_temporality=got.delta_temporality,
        requested_metrics=got.requested_metrics,
    )


async def push(ctx: RequestContext, req: PushTelemetryRequest) -> PushTelemetryResponse:
    code, _message = ctx.broker.telemetry.push(client_of(ctx), req)
    return PushTelemetryResponse(throttle_time_ms=ctx.throttle_time_ms, error_code=code)
