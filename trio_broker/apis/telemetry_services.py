"""The contract between the KIP-714 handlers and the broker's client telemetry.

Owns: ``ClientInfo`` (what the broker knows of the client sending a telemetry request),
``Subscribed`` (GetTelemetrySubscriptions' answer as plain data) and ``TelemetryView``,
the narrow view the handlers of GetTelemetrySubscriptions, PushTelemetry and the
``CLIENT_METRICS`` config resource (DescribeConfigs, IncrementalAlterConfigs, AlterConfigs,
ListConfigResources) work
through. Must not: hold state or import the server (``server.telemetry`` implements it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..protocol.messages.telemetry import PushTelemetryRequest

CLIENT_METRICS = 16  # the config resource type (Kafka's ConfigResource.Type)
CLIENT_METRICS_CONFIG = 7  # DescribeConfigsResponse.ConfigSource
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class ClientInfo:
    client_id: str
    software_name: str
    software_version: str
    address: str
    port: int
    connection_id: str = ""  # the connection the request came on


@dataclass(slots=True)
class Subscribed:
    error_code: int
    error_message: str | None = None
    client_instance_id: uuid.UUID = ZERO_UUID
    subscription_id: int = 0
    accepted_compression_types: list[int] = field(default_factory=list)
    push_interval_ms: int = 0
    telemetry_max_bytes: int = 0
    delta_temporality: bool = True
    requested_metrics: list[str] = field(default_factory=list)


class TelemetryView(Protocol):
    def get_subscriptions(self, client: ClientInfo, instance_id: uuid.UUID) -> Subscribed:
        """GetTelemetrySubscriptions: a zero ``instance_id`` is given a new one."""

    def push(self, client: ClientInfo, request: PushTelemetryRequest) -> tuple[int, str | None]:
        """PushTelemetry (as Kafka's ``processPushTelemetryRequest``, handed the request):
        the error code and message (NONE, None: kept)."""

    def subscription_names(self) -> Sequence[str]:
        """Every subscription's name (ListConfigResources), sorted."""

    def subscription_configs(self, name: str) -> Mapping[str, tuple[str, bool]]:
        """DescribeConfigs: key -> (value, set explicitly), every key (an unknown
        subscription's: the defaults, as Kafka answers)."""

    async def alter_subscription(
        self,
        name: str,
        ops: Sequence[tuple[str, int, str | None]],
        *,
        validate_only: bool,
        replace: bool = False,
    ) -> None:
        """IncrementalAlterConfigs (``replace``: AlterConfigs, SET of every key given,
        the rest removed). All keys removed deletes the subscription. Raises
        ``services.TopicError`` with Kafka's code."""
