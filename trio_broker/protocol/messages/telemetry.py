"""GetTelemetrySubscriptions (71) and PushTelemetry (72): KIP-714's client metrics, v0
(Kafka 4's only version, flexible)."""

from __future__ import annotations

import uuid

from ..api import register
from ..schema import Request, Response, array, field


class GetTelemetrySubscriptionsRequest(Request, api_key=71, versions="0", flexible="0+"):
    client_instance_id: uuid.UUID = field("uuid")


class GetTelemetrySubscriptionsResponse(Response, api_key=71, versions="0", flexible="0+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")
    client_instance_id: uuid.UUID = field("uuid")
    subscription_id: int = field("int32")
    accepted_compression_types: list[int] = field(array("int8"))
    push_interval_ms: int = field("int32")
    telemetry_max_bytes: int = field("int32")
    delta_temporality: bool = field("bool")
    requested_metrics: list[str] = field(array("string"))


class PushTelemetryRequest(Request, api_key=72, versions="0", flexible="0+"):
    client_instance_id: uuid.UUID = field("uuid")
    subscription_id: int = field("int32")
    terminating: bool = field("bool")
    compression_type: int = field("int8")
    metrics: bytes = field("bytes")


class PushTelemetryResponse(Response, api_key=72, versions="0", flexible="0+"):
    throttle_time_ms: int = field("int32")
    error_code: int = field("int16")


GET_TELEMETRY_SUBSCRIPTIONS = register(
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse
)
PUSH_TELEMETRY = register(PushTelemetryRequest, PushTelemetryResponse)
