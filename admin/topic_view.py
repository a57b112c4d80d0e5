"""What the admin API's topic routes need of the broker: the ``TopicView`` protocol.

Owns: ``TopicView`` (list, describe, create and delete topics through the broker's own
paths: the one creation path that CreateTopics takes, and DeleteTopics' deletion), the
plain frozen records it hands out (``TopicRecord``, ``PartitionRecord``) and takes
(``TopicRequest``), ``TopicRefused`` (a refusal in Kafka's terms: the error's name, e.g.
``TOPIC_ALREADY_EXISTS``, and the broker's message) and the limits that are part of the
HTTP contract (``MAX_PARTITIONS`` and the integer ranges of Kafka's CreateTopics fields).
Imports nothing of the broker, so the routes can be read and tested against any object of
this shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

INT16_MAX = 2**15 - 1  # CreateTopics' replication_factor is an int16 on the wire
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # its partition count and broker ids, int32
MAX_PARTITIONS = 1000
"""At most this many partitions per topic created through the admin API (one request's
work: a partition is a log created on disk); CreateTopics has no such limit."""


class TopicRefused(Exception):
    """The broker refused a topic operation, as Kafka would: ``error`` is the Kafka error's
    name (``TOPIC_ALREADY_EXISTS``, ``INVALID_CONFIG`` ...), ``message`` the broker's."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    partition: int
    leader: int  # -1: none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: str  # the UUID, in its canonical text form
    internal: bool
    replication_factor: int  # partition 0's replica count (0: no partition known)
    configs: Mapping[str, str]  # the topic's overrides only
    partitions: tuple[PartitionRecord, ...]


@dataclass(frozen=True, slots=True)
class TopicRequest:
    """A topic to create, as the HTTP body gave it: ``None`` (or -1, as in CreateTopics)
    for the broker's ``num.partitions`` / ``default.replication.factor``; ``assignment``
    names each partition's brokers instead (then neither may be given)."""

    name: str
    partitions: int | None = None
    replication_factor: int | None = None
    configs: Mapping[str, str] | None = None
    assignment: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """What a ``validate_only`` creation would create: nothing was."""

    name: str
    partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    assignment: tuple[tuple[int, ...], ...] | None  # None: the broker would place them


class TopicView(Protocol):
    def topics(self) -> Sequence[TopicRecord]:
        """Every topic the broker knows, by name."""
        ...

    def topic(self, name: str) -> TopicRecord:
        """One topic; ``TopicRefused`` (UNKNOWN_TOPIC_OR_PARTITION) if there is none."""
        ...

    async def create_topic(self, request: TopicRequest) -> TopicRecord:
        """Create it through the broker's one creation path; ``TopicRefused`` with the
        error CreateTopics would answer for the same request."""
        ...

    async def validate_topic(self, request: TopicRequest) -> TopicPlan:
        """The same checks with ``validate_only``: nothing is created."""
        ...

    async def delete_topic(self, name: str) -> TopicRecord:
        """Delete it as DeleteTopics does and return what it was; ``TopicRefused``
        (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED, INVALID_TOPIC_EXCEPTION for
        an internal topic ...) otherwise."""
        ...
