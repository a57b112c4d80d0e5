"""Creating, growing and deleting a topic: the one path every caller takes, on one broker
and in a ZooKeeper cluster.

Owns: ``TopicCreation``, whose ``create_topic`` is CreateTopics', auto-creation's (Metadata,
``auto.create.topics.enable``), the coordinators' (their internal topics in a cluster, on
the first FindCoordinator) and the admin API's (``POST /v1/topics``), and whose
``create_partitions`` is CreatePartitions'. The steps are Kafka's (its ``AdminManager`` and
``AdminZkClient``):

1. the request is checked: the name (Kafka's ``Topic`` rules, INVALID_TOPIC_EXCEPTION), the
   partition count (INVALID_PARTITIONS) and the configs (the topic config table,
   INVALID_CONFIG with its message);
2. the topic is not there already (TOPIC_ALREADY_EXISTS);
3. the partition logs this broker would open must fit its open files limit, with the
   headroom ``log.descriptors`` keeps (POLICY_VIOLATION naming the limit and the counts;
   in a cluster its share of an even placement, or of the request's assignment), before
   anything is placed: this also bounds an absurd partition count; then the replicas are
   placed on the brokers (``placement.place_replicas``: a factor above them is
   INVALID_REPLICATION_FACTOR), or the request's assignment is checked (registered
   brokers, no repeats, one size: INVALID_REPLICA_ASSIGNMENT);
4. with ``validate_only`` that is all; otherwise the topic is written to its ``TopicStore``,
   all or nothing (``TopicAdmin``: a failure part-way removes what it made and is
   KAFKA_STORAGE_ERROR).

Growing takes steps 1-3 on the new partitions (``placement.new_partitions``); the
coordinators' topics are not grown (their partitioning is theirs). Deleting is refused
while ``delete.topic.enable`` is false (TOPIC_DELETION_DISABLED) and for the coordinators'
topics (INVALID_TOPIC_EXCEPTION), before the store is asked. The store is where topics
live: the broker's own catalog and logs on a broker on its own (``TopicAdmin``: one broker,
so a factor above 1 or an assignment naming another broker is refused by step 3), or
ZooKeeper's nodes in a cluster (``coordination.ZkTopics``, which the controller then places
and elects leaders for). The store's write is the last word on step 2: a topic created
meanwhile is TOPIC_ALREADY_EXISTS there too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from ...apis.services import NewTopic, TopicError, TopicInfo
from ...apis.topic_names import INTERNAL_TOPICS, topic_name_error
from ...log.descriptors import FileBudget
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID
from ..config import BrokerConfig, ConfigError, validate_topic_configs
from .placement import check_assignment, new_partitions, place_replicas

Placement = dict[int, list[int]]  # partition -> its replicas, the first the preferred leader
Brokers = Mapping[int, str | None]  # broker id -> its rack
# The new partitions of a topic, from its current placement and the brokers.
GrowthPlan = Callable[[Mapping[int, list[int]], Brokers], Placement]


class TopicStore(Protocol):
    """Where topics are written: ``TopicAdmin`` (one broker) or ``ZkTopics`` (a cluster)."""

    async def brokers(self) -> dict[int, str | None]:
        """The brokers replicas may go to, with their racks (BROKER_NOT_AVAILABLE: none)."""
        ...

    async def exists(self, name: str) -> bool: ...

    async def write(self, name: str, placement: Placement, configs: Mapping[str, str]) -> TopicInfo:
        """Create the topic (TOPIC_ALREADY_EXISTS if it was created meanwhile)."""
        ...

    async def grow(self, name: str, plan: GrowthPlan, *, validate_only: bool) -> None:
        """Add the partitions ``plan`` makes of the topic's placement, read and written as
        one change (UNKNOWN_TOPIC_OR_PARTITION: no such topic)."""
        ...

    async def delete(self, name: str) -> None:
        """Remove the topic (UNKNOWN_TOPIC_OR_PARTITION: no such topic)."""
        ...


class TopicCreation:
    def __init__(
        self,
        store: TopicStore,
        config: Callable[[], BrokerConfig],
        files: Callable[[], FileBudget] | None = None,
    ) -> None:
        # A broker joining a ZooKeeper cluster replaces its own store by ZooKeeper's.
        self.store = store
        self.config = config  # the running config (it changes at run time)
        # This broker's logs' descriptors against its open files limit (None: unchecked).
        self.files = files

    def _check_files(self, name: str, replicas_here: int) -> None:
        """Step 3's first half: the logs this broker would open fit its open files limit
        (POLICY_VIOLATION naming the limit and the counts), before anything is placed."""
        if self.files is None or replicas_here <= 0:
            return
        refusal = self.files().refusal(replicas_here)
        if refusal is not None:
            raise TopicError(ErrorCode.POLICY_VIOLATION, f"topic {name!r}: {refusal}")

    async def create_topic(self, topic: NewTopic, *, validate_only: bool = False) -> TopicInfo:
        configs = _checked(topic)
        if await self.store.exists(topic.name):
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
        brokers = await self.store.brokers()
        me = self.config().broker_id
        if topic.replicas is not None:
            self._check_files(topic.name, sum(me in ids for ids in topic.replicas))
            placement = {p: list(ids) for p, ids in enumerate(topic.replicas)}
            check_assignment(placement, brokers)
        else:
            share = _share(topic.num_partitions, topic.replication_factor, len(brokers))
            self._check_files(topic.name, share)
            placement = place_replicas(brokers, topic.num_partitions, topic.replication_factor)
        if validate_only:
            return TopicInfo(topic.name, ZERO_UUID, ())
        return await self.store.write(topic.name, placement, configs)

    async def create_partitions(
        self,
        name: str,
        count: int,
        *,
        validate_only: bool,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Grow ``name`` to ``count`` partitions, the new ones placed as the topic's others
        or on the brokers ``replicas`` names per new partition."""
        if name in INTERNAL_TOPICS:  # the coordinators' partitioning is theirs
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is an internal topic")

        def plan(existing: Mapping[int, list[int]], brokers: Brokers) -> Placement:
            added = count - len(existing)
            if replicas is not None:
                me = self.config().broker_id
                self._check_files(name, sum(me in ids for ids in replicas))
            elif existing:
                factor = len(next(iter(existing.values())))
                self._check_files(name, _share(added, factor, len(brokers)))
            return new_partitions(existing, count, brokers, replicas)

        await self.store.grow(name, plan, validate_only=validate_only)

    async def delete_topic(self, name: str) -> None:
        if not self.config()["delete.topic.enable"]:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        if name in INTERNAL_TOPICS:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is an internal topic")
        await self.store.delete(name)


def _share(partitions: int, factor: int, brokers: int) -> int:
    """The most replicas one broker gets of ``partitions`` of ``factor`` replicas placed
    evenly on ``brokers`` (Kafka's placement differs by at most one between brokers)."""
    if partitions <= 0 or brokers <= 0:
        return 0
    on_each = max(1, min(factor, brokers))
    return -(-partitions * on_each // brokers)


def _checked(topic: NewTopic) -> dict[str, str]:
    """Step 1: the name, the partition count and the configs; the configs set."""
    problem = topic_name_error(topic.name)
    if problem is not None:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if topic.replicas is None and topic.num_partitions < 1:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, "a topic needs at least 1 partition")
    if topic.replicas is not None and not topic.replicas:
        raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "the assignment is empty")
    try:
        validate_topic_configs(topic.configs)
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    return {k: v for k, v in topic.configs.items() if v is not None}
