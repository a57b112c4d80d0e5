"""The narrow view of the broker that API handlers work through.

Owns: the ``BrokerView`` protocol and the plain records it hands out (``BrokerEndpoint``,
``TopicInfo``, ``PartitionInfo``). The server implements the protocol; handlers depend on
nothing else of it, so they can be read (and tested) without the network or trio.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False
    configs: Mapping[str, str] = field(default_factory=dict)


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and a message for the client."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class BrokerView(Protocol):
    broker_id: int
    cluster_id: str

    @property
    def controller_id(self) -> int: ...

    def config_value(self, key: str) -> Any: ...

    def endpoints(self, listener: str) -> Sequence[BrokerEndpoint]:
        """Every broker's endpoint on ``listener`` (the one the request came in on)."""
        ...

    def api_versions(self, plane: str) -> Sequence[tuple[int, int, int]]:
        """(api key, min version, max version) of every API served on ``plane``."""
        ...

    def topic(self, name: str) -> TopicInfo | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None: ...

    def topics(self) -> Sequence[TopicInfo]: ...

    async def create_topic(
        self, name: str, num_partitions: int, configs: Mapping[str, str | None]
    ) -> TopicInfo:
        """Create a topic (raises ``TopicError``)."""
        ...
