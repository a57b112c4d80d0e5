"""FindCoordinator's question: which broker coordinates this group, or this transactional id?

Owns: ``CoordinatorLocator``, one per coordinator (groups: ``__consumer_offsets``;
transactions: ``__transaction_state``, ``InternalTopicSpec``). A broker on its own
coordinates every key itself. In a ZooKeeper cluster, as Kafka: the key's partition of the
internal topic is led by its coordinator. The topic is created on the first question (its
partition count and replication factor from the spec's broker keys, Kafka's internal
configs); until enough brokers are live for that factor, or while the partition has no
leader, the answer is COORDINATOR_NOT_AVAILABLE, which clients retry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ...apis.services import NewTopic, TopicError, TopicInfo
from ...protocol.errors import ErrorCode
from ..config import BrokerConfig
from ..replication import ClusterState
from .storage import InternalTopicSpec

CreateTopic = Callable[[NewTopic], Awaitable[TopicInfo]]


class Broker(Protocol):
    """What the locator reads of the broker."""

    broker_id: int
    config: BrokerConfig
    cluster: ClusterState


class Coordinator(Protocol):
    """What the locator asks of the coordinator."""

    @property
    def active(self) -> bool: ...

    def partition_for(self, key: str) -> int: ...


class CoordinatorLocator:
    def __init__(
        self,
        broker: Broker,
        create_topic: CreateTopic | None,
        spec: InternalTopicSpec,
        coordinator: Coordinator,
    ) -> None:
        self.broker = broker
        self._create_topic = create_topic  # ZooKeeper's; None on a broker on its own
        self.spec = spec
        self.coordinator = coordinator

    async def locate(self, key: str) -> tuple[int, int, str | None]:
        """(coordinator's broker id, error code, message)."""
        broker, spec = self.broker, self.spec
        if not self.coordinator.active:
            return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not running"
        if self._create_topic is None:
            return broker.broker_id, ErrorCode.NONE, None
        partitions = broker.cluster.cache.partitions.get(spec.name)
        if not partitions:
            config = broker.config
            try:
                await self._create_topic(
                    NewTopic(
                        spec.name,
                        config[spec.partitions_key],
                        spec.configs(config),
                        replication_factor=config[spec.replication_key],
                    )
                )
            except TopicError as exc:
                if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{spec.name}: {exc}"
            partitions = broker.cluster.cache.partitions.get(spec.name, {})
        info = partitions.get(self.coordinator.partition_for(key))
        if info is None or info.leader < 0:
            return (
                -1,
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                f"its {spec.name} partition has no leader",
            )
        return info.leader, ErrorCode.NONE, None
