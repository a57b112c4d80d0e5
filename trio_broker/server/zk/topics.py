"""Topic administration in a ZooKeeper cluster: CreateTopics and DeleteTopics go through
ZooKeeper, and the controller carries them out.

Owns: ``ZkTopics``, which stands in for ``TopicAdmin``'s create and delete when
``zookeeper.connect`` is set, as a ZooKeeper-era Kafka broker does:

- create: the name and configs are checked as on one broker, the partitions' replicas are
  placed on the live brokers (``place_replicas``, Kafka's rack-unaware placement; a
  replication factor above the live brokers is INVALID_REPLICATION_FACTOR) or where the
  request's assignment says (checked: registered brokers, no repeats, equal sizes),
  and the config (``/config/topics/<t>``) and the assignment with a new topic id
  (``/brokers/topics/<t>``) are written; the controller elects leaders and tells the
  brokers (``ZkController``). The request waits until this broker's metadata has the
  topic, or its timeout, as Kafka's does.
- delete: the topic's nodes go; the controller stops and deletes the replicas.
- CreatePartitions is not served in a ZooKeeper cluster yet (INVALID_REQUEST).

A broker told to hold a partition of a topic it has never seen takes the topic's config
from ZooKeeper (``configs_of``).
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Mapping, Sequence

import trio

from ...apis.services import PartitionInfo, TopicInfo
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID
from ..control_plane import ControlPlane
from ..topic_admin import TopicAdmin, TopicError
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

    async def configs_of(self, name: str) -> dict[str, str]:
        found = await self.session.get(layout.topic_config_path(name))
        return layout.topic_config_of(found[0]) if found is not None else {}

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
        live = sorted(int(b) for b in await self.session.children(layout.BROKER_IDS))
        if not live:
            raise TopicError(ErrorCode.BROKER_NOT_AVAILABLE, "no broker is registered")
        if replicas is not None:
            placement = {p: list(ids) for p, ids in enumerate(replicas)}
            _check_assignment(placement, live)
        else:
            placement = place_replicas(num_partitions, replication_factor, live)
        if validate_only:
            return TopicInfo(name, ZERO_UUID, ())
        topic_id = uuid.uuid4()
        clean = {k: v for k, v in configs.items() if v is not None}
        await self.session.ensure_path(layout.CONFIG_TOPICS)
        config_path = layout.topic_config_path(name)
        if not await self.session.create(config_path, layout.topic_config_data(clean)):
            found = await self.session.get(config_path)  # left by an earlier topic
            await self.session.set(
                config_path, layout.topic_config_data(clean), found[1] if found else -1
            )
        data = layout.assignment_data(topic_id, placement)
        if not await self.session.create(layout.topic_path(name), data, makepath=True):
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        log.info("topic %s: %d partitions placed: %s", name, num_partitions, placement)
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
        log.info("topic %s deleted from ZooKeeper", name)
        await self._propagated(name, present=False)

    async def create_partitions(self, name: str, count: int, *, validate_only: bool) -> None:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "CreatePartitions is not served in a ZooKeeper cluster yet",
        )

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


def place_replicas(partitions: int, factor: int, brokers: list[int]) -> dict[int, list[int]]:
    """Kafka's rack-unaware placement: each partition's first replica round robin from a
    random broker, its followers at a shift (random, growing every full round) so that
    the followers of one broker's partitions spread over the others."""
    n = len(brokers)
    if factor < 1 or factor > n:
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {factor} is not between 1 and the {n} live brokers",
        )
    start = random.randrange(n)
    shift = random.randrange(n)
    placement: dict[int, list[int]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        ids = [brokers[first]]
        for j in range(factor - 1):
            ids.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        placement[p] = ids
    return placement


def _check_assignment(placement: Mapping[int, list[int]], live: list[int]) -> None:
    sizes = {len(ids) for ids in placement.values()}
    for p, ids in placement.items():
        problem = None
        if not ids or len(set(ids)) != len(ids):
            problem = f"partition {p}: replicas {ids} are empty or repeat a broker"
        elif unknown := [b for b in ids if b not in live]:
            problem = f"partition {p}: brokers {unknown} are not registered"
        elif len(sizes) > 1:
            problem = "every partition must have the same number of replicas"
        if problem is not None:
            raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
