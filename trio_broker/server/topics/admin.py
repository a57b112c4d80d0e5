"""Topics: what the broker holds, and the topic store of a broker on its own.

Owns: ``TopicAdmin``, the broker's topic service: the ``TopicStore`` that the one creation
path (``creation.TopicCreation``) writes new topics and new partitions to on a broker on
its own, DeleteTopics, topic config changes, and the partitions LeaderAndIsr makes this
broker hold. One lock orders every change; the catalog (``topics.json``) and the partition
logs change together on a worker thread, all or nothing: the logs first, then the catalog
(what Metadata lists), and a failure part-way removes the logs it made (KAFKA_STORAGE_ERROR
when the disk or the descriptors failed). What a deleted topic leaves elsewhere (parked
fetches, metrics, cluster state, committed offsets) is forgotten by the ``on_deleted``
callbacks the broker registers. Topic lookups answer with leaders as the control plane set
them, and include topics this broker holds no partition of, as the controller described
them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace

import trio

from ...apis.services import TopicError, TopicInfo
from ...apis.topic_names import INTERNAL_TOPICS
from ...log.descriptors import FileBudget, open_files_limit
from ...log.errors import LogError
from ...protocol.errors import ErrorCode
from ...protocol.schema import ZERO_UUID
from ..config import BrokerConfig, plan_topic_change
from ..replication import ClusterState, ReplicaManager
from .catalog import TopicCatalog
from .creation import GrowthPlan

log = logging.getLogger("trio_broker.server")


async def _no_configs(name: str) -> dict[str, str]:
    return {}


class TopicAdmin:
    def __init__(
        self,
        catalog: TopicCatalog,
        cluster: ClusterState,
        replica_manager: ReplicaManager,
        config: Callable[[], BrokerConfig],
    ) -> None:
        self.catalog = catalog
        self.cluster = cluster
        self.replica_manager = replica_manager
        self.config = config  # the running config (it changes at run time)
        self._lock = trio.Lock()
        # Called with a deleted topic, after its logs are gone.
        self.on_deleted: list[Callable[[TopicInfo], None]] = []
        # A new topic's config when a controller makes this broker a replica of it.
        self.remote_configs: Callable[[str], Awaitable[dict[str, str]]] = _no_configs
        # Topics' config overrides as the cluster has them (ZooKeeper's, in a cluster):
        # for the topics this broker holds no partition of.
        self.remote_topic_configs: Mapping[str, Mapping[str, str]] = {}

    def topic(self, name: str) -> TopicInfo | None:
        info = self.catalog.get(name)
        if info is not None:
            return self._cluster_view(info) if self._known(name) else None
        return self._cached_topic(name)

    def _known(self, name: str) -> bool:
        """Whether a topic this broker holds is the cluster's: in a cluster, once the
        controller has described the cluster, only the topics it described are (as Kafka's
        Metadata answers from the controller's description alone). A topic deleted while
        this broker was down or cut off is held here still, since the StopReplica that
        would have removed it went to the live replicas only; it is not shown."""
        cache = self.cluster.cache
        return not cache.from_controller or name in cache.partitions

    def held(self, name: str) -> TopicInfo | None:
        """The topic's entry in this broker's catalog (None: no partition of it here)."""
        return self.catalog.get(name)

    def overrides(self, name: str) -> Mapping[str, str] | None:
        """The topic's config overrides (None: no such topic here)."""
        info = self.catalog.get(name)
        if info is not None:
            return info.configs
        return self.remote_topic_configs.get(name)

    async def current_overrides(self, name: str) -> Mapping[str, str]:
        """The overrides a change starts from (UNKNOWN_TOPIC_OR_PARTITION: no such topic)."""
        info = self.catalog.get(name)
        if info is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        return info.configs

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        info = self.catalog.get_by_id(topic_id)
        if info is not None:
            return self._cluster_view(info)
        cache = self.cluster.cache
        name = next((t for t, i in cache.topic_ids.items() if i == topic_id), None)
        return None if name is None else self._cached_topic(name)

    def topics(self) -> Sequence[TopicInfo]:
        local = [self._cluster_view(t) for t in self.catalog.all() if self._known(t.name)]
        names = {t.name for t in local}
        remote = [
            info
            for name in sorted(self.cluster.cache.partitions)
            if name not in names and (info := self._cached_topic(name)) is not None
        ]
        return local + remote

    def _cluster_view(self, info: TopicInfo) -> TopicInfo:
        """A local topic with leaders as the control plane set them."""
        if not self.cluster.leadership and not self.cluster.cache.from_controller:
            return self._offline_marked(info)
        # The controller's partitions when it described the topic (this broker may hold
        # only some of them), else the local ones.
        known = self.cluster.cache.partitions_of(info.name)
        indexes = sorted(known) if known else [p.index for p in info.partitions]
        parts = tuple(self.cluster.partition_info(info.name, i) for i in indexes)
        return replace(info, partitions=parts)

    def _offline_marked(self, info: TopicInfo) -> TopicInfo:
        """On a broker on its own, a partition whose log dir failed has no leader and its
        replica is offline (Kafka's answer: LEADER_NOT_AVAILABLE, offline_replicas)."""
        logs = self.replica_manager.logs
        offline = logs.offline_partitions() if logs is not None else frozenset()
        if not offline or not any((info.name, p.index) in offline for p in info.partitions):
            return info
        parts = tuple(
            replace(p, leader=-1, isr=(), offline=p.replicas)
            if (info.name, p.index) in offline
            else p
            for p in info.partitions
        )
        return replace(info, partitions=parts)

    def _cached_topic(self, name: str) -> TopicInfo | None:
        """A topic this broker holds no partition of, as the controller described it."""
        cache = self.cluster.cache
        parts = cache.partitions_of(name)
        if not parts:
            return None
        topic_id = cache.topic_ids.get(name, ZERO_UUID)
        configs = dict(self.remote_topic_configs.get(name, {}))
        partitions = tuple(parts[i] for i in sorted(parts))
        return TopicInfo(name, topic_id, partitions, name in INTERNAL_TOPICS, configs)

    # -- the TopicStore of a broker on its own (topics.creation checks and places)

    async def brokers(self) -> dict[int, str | None]:
        """This broker alone, with its rack."""
        return {self.cluster.broker_id: self.config()["broker.rack"]}

    async def exists(self, name: str) -> bool:
        return self.catalog.get(name) is not None

    def file_budget(self) -> FileBudget:
        """This broker's partition logs' file descriptors against its open files limit."""
        logs = self.replica_manager.logs
        return logs.file_budget() if logs is not None else FileBudget(open_files_limit(), 0)

    async def write(
        self, name: str, placement: dict[int, list[int]], configs: Mapping[str, str]
    ) -> TopicInfo:
        async with self._lock:
            if self.catalog.get(name) is not None:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            info = self.catalog.new_topic(name, len(placement), configs)
            await self._all_or_nothing(info, range(len(placement)), self.catalog.add)
        log.info("created topic %s with %d partitions", name, len(placement))
        return info

    async def _all_or_nothing(
        self, info: TopicInfo, new: Sequence[int], store: Callable[[TopicInfo], object]
    ) -> None:
        """Create the logs of ``info``'s partitions ``new``, then ``store`` it in the
        catalog (Metadata lists it from then on: never a partition without its log). A
        failure part-way removes the logs it made (their descriptors and folders) and
        stores nothing; a failure of the disk is KAFKA_STORAGE_ERROR."""
        replicas = self.replica_manager

        def make() -> None:
            try:
                replicas.create_logs(info)
                store(info)
            except BaseException:
                for index in new:
                    replicas.delete_partition_log(info.name, index)
                raise

        try:
            await trio.to_thread.run_sync(make)
        except (LogError, OSError) as exc:
            log.error("topic %s: cannot create its partitions %s: %s", info.name, new, exc)
            raise TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"topic {info.name!r} not created: {exc}"
            ) from exc

    async def delete(self, name: str) -> None:
        async with self._lock:
            info = self.catalog.get(name)
            if info is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            await self._forget_locked(info)

    async def forget(self, info: TopicInfo) -> None:
        """Remove the topic, its logs and what other services keep of it."""
        async with self._lock:
            await self._forget_locked(info)

    async def _forget_locked(self, info: TopicInfo) -> None:
        await trio.to_thread.run_sync(self._delete_topic_blocking, info)
        for forget in self.on_deleted:
            forget(info)
        log.info("deleted topic %s", info.name)

    def _delete_topic_blocking(self, info: TopicInfo) -> None:
        self.catalog.delete(info.name)
        self.replica_manager.delete_logs(info)

    async def grow(self, name: str, plan: GrowthPlan, *, validate_only: bool) -> None:
        async with self._lock:
            info = self.catalog.get(name)
            if info is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            me = self.cluster.broker_id
            added = plan({p.index: [me] for p in info.partitions}, await self.brokers())
            if validate_only:
                return
            count = len(info.partitions) + len(added)
            grown = self.catalog.with_partitions(info, count)
            await self._all_or_nothing(
                grown, range(len(info.partitions), count), self.catalog.replace
            )
        log.info("topic %s now has %d partitions", name, count)

    async def set_configs(
        self, name: str, overrides: Mapping[str, str], *, validate_only: bool
    ) -> None:
        """Replace a topic's config overrides (AlterConfigs): checked (``ChangeRefused``),
        stored in the catalog and in force in its partition logs at once."""
        clean = plan_topic_change(overrides)
        async with self._lock:
            info = self.catalog.get(name)
            if info is None:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
                )
            if validate_only:
                return
            await trio.to_thread.run_sync(self._set_configs_blocking, replace(info, configs=clean))
        log.info("topic %s configs now %s", name, clean)

    def _set_configs_blocking(self, info: TopicInfo) -> None:
        # In force first, then described: DescribeConfigs never shows a change that its
        # logs do not follow yet.
        self.replica_manager.reconfigure(info)  # may wait behind a partition's fsync
        self.catalog.replace(info)

    async def ensure_partition(self, topic: str, topic_id: uuid.UUID | None, index: int) -> None:
        """Make sure this broker has ``topic`` with partition ``index`` and its log; a new
        topic gets its config from ``remote_configs`` (ZooKeeper's, in a cluster)."""
        async with self._lock:
            info = self.catalog.get(topic)
            configs = await self.remote_configs(topic) if info is None else {}

            replicas = self.replica_manager
            if info is None:
                new = self.catalog.new_topic(
                    topic,
                    index + 1,
                    configs,
                    topic_id=topic_id if topic_id != ZERO_UUID else None,
                    internal=topic in INTERNAL_TOPICS,
                )
            elif index >= len(info.partitions):
                new = self.catalog.with_partitions(info, index + 1)
            else:
                new = info
            held = replicas.partition(topic, index) is not None

            def make() -> None:
                # The one log it holds, then the catalog; a failure undoes both.
                try:
                    replicas.create_logs(new, only=index)
                    if info is None:
                        self.catalog.add(new)
                    elif new is not info:
                        self.catalog.replace(new)
                except BaseException:
                    if not held:
                        replicas.delete_partition_log(topic, index)
                    raise

            try:
                await trio.to_thread.run_sync(make)
            except (LogError, OSError) as exc:
                log.error("%s-%d: cannot create its log: %s", topic, index, exc)
                raise TopicError(
                    ErrorCode.KAFKA_STORAGE_ERROR, f"{topic}-{index}: no log: {exc}"
                ) from exc


async def side_by_side(jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run ``jobs`` concurrently in one nursery (the APIs do not import Trio)."""
    async with trio.open_nursery() as nursery:
        for job in jobs:
            nursery.start_soon(job)
