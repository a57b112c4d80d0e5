"""Topics in a ZooKeeper cluster: where CreateTopics, DeleteTopics and CreatePartitions write,
and the controller carries them out.

Owns: ``ZkTopics``, the ``TopicStore`` that stands in for the broker's own
(``TopicAdmin``) when ``zookeeper.connect`` is set, as a ZooKeeper-era Kafka broker does.
The checks and the placement are the one creation path's (``topics.TopicCreation``); here:

- the brokers replicas may go to: the registered ones, with their racks;
- write: the config (``/config/topics/<t>``) and the assignment with a new topic id
  (``/brokers/topics/<t>``); the controller elects leaders and tells the brokers
  (``ZkController``). The request waits until this broker's metadata has the topic, or its
  timeout, as Kafka's does.
- grow (CreatePartitions), as Kafka's ``AdminZkClient.addPartitions``: the new partitions
  are added to the assignment node with a version check (a concurrent change is read
  again and planned again). The controller's watch on the node gives the new partitions
  leaders; the request waits until this broker's metadata has them.
- delete: the topic's nodes go; the controller stops and deletes the replicas.

A broker told to hold a partition of a topic it has never seen takes the topic's config
from ZooKeeper (``configs_of``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping

import trio
from kazoo.exceptions import BadVersionError, NoNodeError

from ...apis.services import PartitionInfo, TopicError, TopicInfo
from ...protocol.errors import ErrorCode
from ..replication import ControlPlane
from ..topics import GrowthPlan, TopicAdmin
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

    async def brokers(self) -> dict[int, str | None]:
        """The registered brokers and their racks (``BROKER_NOT_AVAILABLE``: none)."""
        brokers: dict[int, str | None] = {}
        for child in await self.session.children(layout.BROKER_IDS):
            found = await self.session.get(layout.broker_path(int(child)))
            if found is not None:
                brokers[int(child)] = layout.Registration.decode(int(child), found[0]).rack
        if not brokers:
            raise TopicError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker is registered")
        return dict(sorted(brokers.items()))

    async def exists(self, name: str) -> bool:
        return await self.session.get(layout.topic_path(name)) is not None

    async def write(
        self, name: str, placement: dict[int, list[int]], configs: Mapping[str, str]
    ) -> TopicInfo:
        topic_id = uuid.uuid4()
        await self.session.ensure_path(layout.CONFIG_TOPICS)
        config_path = layout.topic_config_path(name)
        if not await self.session.create(config_path, layout.config_data(configs)):
            found = await self.session.get(config_path)  # left by an earlier topic
            try:
                await self.session.set(
                    config_path, layout.config_data(configs), found[1] if found else -1
                )
            except BadVersionError:  # another broker creates it at this moment
                raise TopicError(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} is being created"
                ) from None
        data = layout.assignment_data(topic_id, placement)
        if not await self.session.create(layout.topic_path(name), data, makepath=True):
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        log.info("topic %s: %d partitions placed: %s", name, len(placement), placement)
        if self.announce is not None:
            await self.announce(name)
        info = await self._propagated(name, present=True, partitions=len(placement))
        if info is not None:
            return info
        return TopicInfo(
            name,
            topic_id,
            tuple(PartitionInfo(p, r[0], 0, tuple(r), tuple(r)) for p, r in placement.items()),
            configs=dict(configs),
        )

    async def delete(self, name: str) -> None:
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

    async def grow(self, name: str, plan: GrowthPlan, *, validate_only: bool) -> None:
        while True:
            brokers = await self.brokers()
            found = await self.session.get(layout.topic_path(name))
            if found is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            topic_id, existing = layout.assignment_of(found[0])
            added = plan(existing, brokers)
            if validate_only:
                return
            # A reassignment under way stays as it is.
            adding, removing = layout.reassignment_of(found[0])
            data = layout.assignment_data(topic_id, {**existing, **added}, adding, removing)
            try:
                await self.session.set(layout.topic_path(name), data, found[1])
            except BadVersionError:
                continue  # changed meanwhile: read it again and plan again
            except NoNodeError:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                ) from None
            break
        log.info("topic %s: %d partitions added: %s", name, len(added), added)
        await self._propagated(name, present=True, partitions=len(existing) + len(added))

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
