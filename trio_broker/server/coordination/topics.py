"""Topic administration in a ZooKeeper cluster: CreateTopics, DeleteTopics and
CreatePartitions go through ZooKeeper, and the controller carries them out.

Owns: ``ZkTopics``, which stands in for ``TopicAdmin``'s create, delete and grow when
``zookeeper.connect`` is set, as a ZooKeeper-era Kafka broker does:

- create: the name and configs are checked as on one broker, the partitions' replicas are
  placed on the live brokers (``placement.place_replicas``: Kafka's rack-aware placement
  when every broker has a ``broker.rack``, rack-unaware when none has; a replication
  factor above the live brokers is INVALID_REPLICATION_FACTOR) or where the request's
  assignment says (checked: registered brokers, no repeats, equal sizes), and the config
  (``/config/topics/<t>``) and the assignment with a new topic id (``/brokers/topics/<t>``)
  are written; the controller elects leaders and tells the brokers (``ZkController``).
  The request waits until this broker's metadata has the topic, or its timeout, as
  Kafka's does.
- delete: the topic's nodes go; the controller stops and deletes the replicas.
- grow (CreatePartitions), as Kafka's ``AdminZkClient.addPartitions``: a count not above
  the current one is INVALID_PARTITIONS; the new partitions have the replication factor of
  partition 0 and are placed continuing from the existing assignment (the start index is
  partition 0's first replica's, the partition ids follow on), or where the request says
  (checked: one list per new partition, registered brokers, no repeats, partition 0's size:
  INVALID_REPLICA_ASSIGNMENT); the assignment node is rewritten with a version check (a
  concurrent change is read again and checked again). The controller's watch on the node
  gives the new partitions leaders; the request waits until this broker's metadata has them.

Some brokers with a rack and some without: placement is refused as Kafka refuses it
(UNKNOWN_SERVER_ERROR, with a message). A broker told to hold a partition of a topic it
has never seen takes the topic's config from ZooKeeper (``configs_of``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence

import trio
from kazoo.exceptions import BadVersionError, NoNodeError

from ...apis.services import PartitionInfo, TopicError, TopicInfo
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID
from ..replication import ControlPlane
from ..topics import TopicAdmin, check_racks, place_replicas
from . import layout
from .session import ZkSession

log = logging.getLogger("trio_broker.server")

PROPAGATION_TIMEOUT_S = 30.0


class ZkTopics:
    def __init__(self, session: ZkSession, local: TopicAdmin, control: ControlPlane) -> None:
        self.session = session
        self.local = local
        self.control = control
        local.remote_configs = self.configs_of
        # Tells every broker a topic's config node changed (``ZkTopicConfigs.announce``).
        self.announce: Callable[[str], Awaitable[None]] | None = None

    async def configs_of(self, name: str) -> dict[str, str]:
        found = await self.session.get(layout.topic_config_path(name))
        return layout.config_of(found[0]) if found is not None else {}

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str | None],
        *,
        validate_only: bool = False,
        replication_factor: int = 1,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> TopicInfo:
        # The checks of one broker: name, partition count, configs, not here already.
        await self.local.create_topic(name, num_partitions, configs, validate_only=True)
        if await self.session.get(layout.topic_path(name)) is not None:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        brokers = await self._brokers()
        if replicas is not None:
            placement = {p: list(ids) for p, ids in enumerate(replicas)}
            _check_assignment(placement, brokers)
        else:
            placement = place_replicas(brokers, num_partitions, replication_factor)
        if validate_only:
            return TopicInfo(name, ZERO_UUID, ())
        topic_id = uuid.uuid4()
        clean = {k: v for k, v in configs.items() if v is not None}
        await self.session.ensure_path(layout.CONFIG_TOPICS)
        config_path = layout.topic_config_path(name)
        if not await self.session.create(config_path, layout.config_data(clean)):
            found = await self.session.get(config_path)  # left by an earlier topic
            await self.session.set(
                config_path, layout.config_data(clean), found[1] if found else -1
            )
        data = layout.assignment_data(topic_id, placement)
        if not await self.session.create(layout.topic_path(name), data, makepath=True):
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        log.info("topic %s: %d partitions placed: %s", name, num_partitions, placement)
        if self.announce is not None:
            await self.announce(name)
        info = await self._propagated(name, present=True, partitions=num_partitions)
        if info is not None:
            return info
        return TopicInfo(
            name,
            topic_id,
            tuple(PartitionInfo(p, r[0], 0, tuple(r), tuple(r)) for p, r in placement.items()),
            configs=clean,
        )

    async def delete_topic(self, name: str) -> None:
        if not self.local.config()["delete.topic.enable"]:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        found = await self.session.get(layout.topic_path(name))
        if found is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        _, partitions = layout.assignment_of(found[0])
        for p in partitions:  # children first: ZooKeeper deletes leaves only
            await self.session.delete(layout.partition_state_path(name, p))
            await self.session.delete(f"{layout.topic_path(name)}/partitions/{p}")
        await self.session.delete(f"{layout.topic_path(name)}/partitions")
        await self.session.delete(layout.topic_path(name))
        await self.session.delete(layout.topic_config_path(name))
        if self.announce is not None:
            await self.announce(name)
        log.info("topic %s deleted from ZooKeeper", name)
        await self._propagated(name, present=False)

    async def create_partitions(
        self,
        name: str,
        count: int,
        *,
        validate_only: bool,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> None:
        local = self.local.topic(name)
        if local is not None and local.internal:  # the coordinators' partitioning
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is an internal topic")
        while True:
            brokers = await self._brokers()
            found = await self.session.get(layout.topic_path(name))
            if found is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            topic_id, existing = layout.assignment_of(found[0])
            added = new_partitions(existing, count, brokers, replicas)
            if validate_only:
                return
            # A reassignment under way stays as it is.
            adding, removing = layout.reassignment_of(found[0])
            data = layout.assignment_data(topic_id, {**existing, **added}, adding, removing)
            try:
                await self.session.set(layout.topic_path(name), data, found[1])
            except BadVersionError:
                continue  # changed meanwhile: read it again and check again
            except NoNodeError:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                ) from None
            break
        log.info("topic %s: %d partitions added: %s", name, len(added), added)
        await self._propagated(name, present=True, partitions=count)

    async def _brokers(self) -> dict[int, str | None]:
        """The registered brokers and their racks (``BROKER_NOT_AVAILABLE``: none)."""
        brokers: dict[int, str | None] = {}
        for child in await self.session.children(layout.BROKER_IDS):
            found = await self.session.get(layout.broker_path(int(child)))
            if found is not None:
                brokers[int(child)] = layout.Registration.decode(int(child), found[0]).rack
        if not brokers:
            raise TopicError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker is registered")
        return dict(sorted(brokers.items()))

    async def _propagated(
        self, name: str, *, present: bool, partitions: int = 0
    ) -> TopicInfo | None:
        """Wait until this broker's view of the cluster has the topic with a leader for
        each of its ``partitions`` (or no longer has it)."""

        def done() -> bool:
            info = self.local.topic(name)
            if not present:
                return info is None
            return (
                info is not None
                and len(info.partitions) == partitions
                and all(p.leader >= 0 for p in info.partitions)
            )

        with trio.move_on_after(PROPAGATION_TIMEOUT_S):
            while not done():
                await self.control.changed.wait()
        return self.local.topic(name)


def new_partitions(
    existing: Mapping[int, list[int]],
    count: int,
    brokers: Mapping[int, str | None],
    replicas: Sequence[Sequence[int]] | None,
    *,
    start: int | None = None,
) -> dict[int, list[int]]:
    """The replicas of the partitions that grow a topic from ``existing`` to ``count``,
    as Kafka's ``AdminZkClient.createNewPartitionsAssignment``; ``start`` overrides the
    start index (tests)."""
    check_racks(brokers)  # Kafka's getBrokerMetadatas refuses half-racked clusters first
    current = len(existing)
    if count < current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{count}.",
        )
    if count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    first = existing.get(0)
    if not first:
        raise TopicError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"the topic's partition 0 has no replicas: {existing}"
        )
    if replicas is not None:
        if len(replicas) != count - current:
            raise TopicError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {count - current} but "
                f"{len(replicas)} assignments provided.",
            )
        added = {current + i: list(ids) for i, ids in enumerate(replicas)}
        _check_assignment(added, brokers, factor=len(first))
        return added
    ids = list(brokers)
    if start is None:
        start = next((i for i, b in enumerate(ids) if b >= first[0]), 0)
    return place_replicas(
        brokers, count - current, len(first), start=start, first_partition=current
    )


def _check_assignment(
    placement: Mapping[int, list[int]],
    live: Mapping[int, object],
    *,
    factor: int | None = None,
) -> None:
    """Registered brokers, no repeats, and one size (``factor``, when given)."""
    sizes = {len(ids) for ids in placement.values()} | ({factor} if factor else set())
    for p, ids in placement.items():
        problem = None
        if not ids or len(set(ids)) != len(ids):
            problem = f"partition {p}: replicas {ids} are empty or repeat a broker"
        elif unknown := [b for b in ids if b not in live]:
            problem = f"partition {p}: brokers {unknown} are not registered"
        elif len(sizes) > 1:
            problem = "every partition must have the same number of replicas" + (
                f" as partition 0 ({factor})" if factor else ""
            )
        if problem is not None:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
