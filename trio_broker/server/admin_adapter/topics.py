"""The broker side of the admin API's topic routes (``admin.topic_view.TopicView``).

Owns: ``TopicAdminView``, the part of ``BrokerAdminView`` that reads topics as Metadata
does (``Broker.topics``/``topic``: in a cluster, the controller's word) and changes them
through the broker's own paths only: ``Broker.create_topic``, the one creation path
(``topics.TopicCreation``) that CreateTopics, auto-creation and the coordinators take,
whose store is ZooKeeper's in a cluster, and ``Broker.delete_topic``, DeleteTopics'. A
request becomes a ``NewTopic`` as CreateTopics makes one (-1 or absent:
``num.partitions`` / ``default.replication.factor``; an assignment with either is
INVALID_REQUEST), and a ``TopicError`` a ``TopicRefused`` naming the Kafka error (the
path refuses an internal topic's deletion, INVALID_TOPIC_EXCEPTION). Records handed out
are copies.
Must not: check, place or write a topic itself: that is the creation path's alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from admin.topic_view import PartitionRecord, TopicPlan, TopicRecord, TopicRefused, TopicRequest

from ...apis.services import NewTopic, TopicError, TopicInfo
from ...apis.topic_names import INTERNAL_TOPICS
from ...protocol.errors import ErrorCode

if TYPE_CHECKING:
    from ..lifecycle import Broker

DEFAULT = -1  # CreateTopics' "the broker's default" for a count or a factor


class TopicAdminView:
    broker: Broker

    def topics(self) -> Sequence[TopicRecord]:
        return [_record(t) for t in sorted(self.broker.topics(), key=lambda t: t.name)]

    def topic(self, name: str) -> TopicRecord:
        return _record(self._existing(name))

    async def create_topic(self, request: TopicRequest) -> TopicRecord:
        new = self._new_topic(request)
        created = await self._create(new, validate_only=False)
        # As this broker's metadata has it now (leaders as the control plane set them).
        return _record(self.broker.topic(new.name) or created)

    async def validate_topic(self, request: TopicRequest) -> TopicPlan:
        new = self._new_topic(request)
        await self._create(new, validate_only=True)
        assignment = None if new.replicas is None else tuple(tuple(r) for r in new.replicas)
        return TopicPlan(
            name=new.name,
            partitions=new.num_partitions,
            replication_factor=new.replication_factor if assignment is None else len(assignment[0]),
            configs={k: v for k, v in new.configs.items() if v is not None},
            assignment=assignment,
        )

    async def delete_topic(self, name: str) -> TopicRecord:
        info = self._existing(name)  # DeleteTopics' UNKNOWN_TOPIC_OR_PARTITION first
        try:
            await self.broker.delete_topic(info.name)
        except TopicError as exc:
            raise _refused(exc) from None
        return _record(info)

    def _existing(self, name: str) -> TopicInfo:
        info = self.broker.topic(name)
        if info is None:
            raise TopicRefused(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name, f"topic {name!r} does not exist"
            )
        return info

    def _new_topic(self, request: TopicRequest) -> NewTopic:
        """The ``NewTopic`` CreateTopics would ask for, given the same fields."""
        count = DEFAULT if request.partitions is None else request.partitions
        factor = DEFAULT if request.replication_factor is None else request.replication_factor
        replicas = None
        if request.assignment is not None:
            if count != DEFAULT or factor != DEFAULT:
                raise TopicRefused(
                    ErrorCode.INVALID_REQUEST.name,
                    "give either assignments or partitions and replication",
                )
            replicas = [list(ids) for ids in request.assignment]
            count = len(replicas)
        if count == DEFAULT:
            count = int(self.broker.config_value("num.partitions"))
        if factor == DEFAULT:
            factor = int(self.broker.config_value("default.replication.factor"))
        return NewTopic(request.name, count, dict(request.configs or {}), factor, replicas)

    async def _create(self, new: NewTopic, *, validate_only: bool) -> TopicInfo:
        try:
            return await self.broker.create_topic(new, validate_only=validate_only)
        except TopicError as exc:
            raise _refused(exc) from None


def _refused(exc: TopicError) -> TopicRefused:
    try:
        name = ErrorCode(exc.error_code).name
    except ValueError:
        name = f"KAFKA_ERROR_{exc.error_code}"
    return TopicRefused(name, exc.message)


def _internal(info: TopicInfo) -> bool:
    return info.internal or info.name in INTERNAL_TOPICS


def _record(info: TopicInfo) -> TopicRecord:
    partitions = tuple(
        PartitionRecord(
            partition=p.index,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            replicas=tuple(p.replicas),
            isr=tuple(p.isr),
            offline=tuple(p.offline),
        )
        for p in sorted(info.partitions, key=lambda p: p.index)
    )
    first = next((p for p in partitions if p.partition == 0), None)
    return TopicRecord(
        name=info.name,
        topic_id=str(info.topic_id),
        internal=_internal(info),
        replication_factor=0 if first is None else len(first.replicas),
        configs=dict(info.configs),
        partitions=partitions,
    )
