"""FindCoordinator's question for groups: which broker coordinates this group?

Owns: ``GroupLocator``. A broker on its own coordinates every group itself. In a
ZooKeeper cluster, as Kafka: the group's partition of ``__consumer_offsets``
(``partition_for``) is led by its coordinator. The topic is created on the first
question (``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
replicas, Kafka's internal configs); until enough brokers are live for that factor, or
while the partition has no leader, the answer is COORDINATOR_NOT_AVAILABLE, which clients
retry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..apis.services import TopicError
from ..protocol.errors import ErrorCode
from .cluster_state import ClusterState
from .config import BrokerConfig
from .groups import GroupCoordinator
from .groups.storage import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS

CreateTopic = Callable[..., Awaitable[Any]]


class Broker(Protocol):
    """What the locator reads of the broker."""

    broker_id: int
    config: BrokerConfig
    group_coordinator: GroupCoordinator
    cluster: ClusterState


class GroupLocator:
    def __init__(self, broker: Broker, create_topic: CreateTopic | None) -> None:
        self.broker = broker
        self._create_topic = create_topic  # ZooKeeper's; None on a broker on its own

    async def locate(self, group_id: str) -> tuple[int, int, str | None]:
        """(coordinator's broker id, error code, message)."""
        broker = self.broker
        coordinator = broker.group_coordinator
        if not coordinator.active:
            return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not running"
        if self._create_topic is None:
            return broker.broker_id, ErrorCode.NONE, None
        partitions = broker.cluster.cache.partitions.get(OFFSETS_TOPIC)
        if not partitions:
            config = broker.config
            try:
                await self._create_topic(
                    OFFSETS_TOPIC,
                    config["offsets.topic.num.partitions"],
                    OFFSETS_TOPIC_CONFIGS,
                    replication_factor=config["offsets.topic.replication.factor"],
                )
            except TopicError as exc:
                if exc.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{OFFSETS_TOPIC}: {exc}"
            partitions = broker.cluster.cache.partitions.get(OFFSETS_TOPIC, {})
        info = partitions.get(coordinator.partition_for(group_id))
        if info is None or info.leader < 0:
            return -1, ErrorCode.COORDINATOR_NOT_AVAILABLE, "its offsets partition has no leader"
        return info.leader, ErrorCode.NONE, None
